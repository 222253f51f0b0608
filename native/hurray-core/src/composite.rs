//! Composite tensors (docs/spec/descriptor.md §Composite membership, docs/spec/stream.md
//! §Composites): a buffer-less **head** descriptor lists its members' roles; the members
//! follow it in preorder, each stamped with its depth and its index in its parent. Nesting
//! is allowed up to [`MAX_COMPOSITE_DEPTH`].
//!
//! On a stream every member is an ordinary tensor frame, so a reader that knows nothing of
//! composites still decodes it frame by frame (the *flat view*, [`StreamReader::next_tensor`]).
//! [`ItemReader`] assembles the *item view*: one [`Item`] per top-level tensor or composite.
//! In a container the head is stored under the composite's name and member *i* under
//! `name/role_i` (recursively), so [`read_composite`] finds a composite by name.

use crate::descriptor::{Cursor, LayoutDescriptor, TensorDescriptor};
use crate::error::{bail, err, Error, ErrorKind, Result};
use crate::file::{FileReader, FileWriter, ReadAt};
use crate::shape::Shape;
use crate::stream::{ReadTensor, ReadTransport, StreamReader, StreamWriter, WriteTransport};
use crate::types::ElementType;

/// Deepest nesting: a top-level head is depth 0, its members depth 1, …; a member deeper than
/// this is `LimitExceeded`.
pub const MAX_COMPOSITE_DEPTH: u16 = 16;
/// Most members one head may list.
pub const MAX_COMPOSITE_MEMBERS: u32 = 1024;
/// Most descriptors (heads included) in one composite item.
pub const MAX_COMPOSITE_TENSORS: usize = 65_536;
/// Longest role, in UTF-8 bytes.
pub const MAX_ROLE_BYTES: usize = 256;
/// Fixed part of the composite block, in bytes.
pub const COMPOSITE_BLOCK_FIXED_BYTES: usize = 16;

/// The composite-membership block (extension bit 5).
///
/// A **head** has `member_count() > 0` and lists one role per member; a **plain member** has
/// no roles. `depth` is 0 for a top-level head and the parent's depth + 1 for a member;
/// `index` is the member's position in its parent (0 at depth 0).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompositeInfo {
    depth: u16,
    index: u32,
    roles: Vec<String>,
}

impl CompositeInfo {
    /// A top-level head listing `roles` (1..=[`MAX_COMPOSITE_MEMBERS`], each 1..=256 UTF-8
    /// bytes without NUL or `/`, unique). Errors: `InvalidArgument`, `LimitExceeded`,
    /// `DuplicateName`.
    pub fn head(roles: Vec<String>) -> Result<Self> {
        if roles.is_empty() {
            bail!(InvalidArgument, "a composite has at least one member");
        }
        let c = CompositeInfo { depth: 0, index: 0, roles };
        c.validate()?;
        Ok(c)
    }
    /// A plain member at `depth` (≥ 1), position `index` in its parent.
    pub fn member(depth: u16, index: u32) -> Self {
        CompositeInfo { depth, index, roles: Vec::new() }
    }
    /// This block moved to `depth` and `index` (used when nesting a head inside a parent).
    pub fn at(mut self, depth: u16, index: u32) -> Self {
        self.depth = depth;
        self.index = index;
        self
    }
    /// Members listed (0 for a plain member).
    pub fn member_count(&self) -> u32 {
        self.roles.len() as u32
    }
    /// Nesting depth (0 = top level).
    pub fn depth(&self) -> u16 {
        self.depth
    }
    /// Position in the parent (0 at depth 0).
    pub fn index(&self) -> u32 {
        self.index
    }
    /// Member roles, in member order.
    pub fn roles(&self) -> &[String] {
        &self.roles
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.depth > MAX_COMPOSITE_DEPTH {
            bail!(LimitExceeded, "composite nesting depth {} exceeds the maximum {MAX_COMPOSITE_DEPTH}", self.depth);
        }
        if self.depth == 0 && (self.index != 0 || self.roles.is_empty()) {
            bail!(Corrupt, "a depth-0 composite block must be a head at index 0");
        }
        if self.roles.len() > MAX_COMPOSITE_MEMBERS as usize {
            bail!(LimitExceeded, "{} members exceed the maximum {MAX_COMPOSITE_MEMBERS}", self.roles.len());
        }
        if !self.roles.is_empty() && self.depth == MAX_COMPOSITE_DEPTH {
            bail!(LimitExceeded, "a head at depth {MAX_COMPOSITE_DEPTH} would nest its members too deep");
        }
        for (i, r) in self.roles.iter().enumerate() {
            if r.is_empty() || r.len() > MAX_ROLE_BYTES || r.contains('\0') || r.contains('/') {
                bail!(InvalidArgument, "role {r:?} must be 1..={MAX_ROLE_BYTES} bytes without NUL or '/'");
            }
            if self.roles[..i].contains(r) {
                bail!(DuplicateName, "role {r:?} appears twice in one composite");
            }
        }
        Ok(())
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.roles.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.depth.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for r in &self.roles {
            out.extend_from_slice(&(r.len() as u16).to_le_bytes());
            out.extend_from_slice(r.as_bytes());
        }
    }

    pub(crate) fn decode(c: &mut Cursor<'_>) -> Result<Self> {
        let b = c.take(COMPOSITE_BLOCK_FIXED_BYTES)?;
        let count = u32::from_le_bytes(b[0..4].try_into().unwrap());
        let depth = u16::from_le_bytes(b[4..6].try_into().unwrap());
        let index = u32::from_le_bytes(b[8..12].try_into().unwrap());
        if b[6..8] != [0; 2] || b[12..16] != [0; 4] {
            bail!(Corrupt, "reserved bytes of the composite block are not zero");
        }
        if count > MAX_COMPOSITE_MEMBERS {
            bail!(LimitExceeded, "{count} members exceed the maximum {MAX_COMPOSITE_MEMBERS}");
        }
        // Each role takes at least 3 bytes: never size by a count the input cannot back.
        let left = c.b.len() - c.pos;
        if count as usize * 3 > left {
            bail!(Corrupt, "composite block lists {count} roles but only {left} bytes remain");
        }
        let mut roles = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let n = c.u16()? as usize;
            if n > MAX_ROLE_BYTES {
                bail!(LimitExceeded, "role of {n} bytes exceeds {MAX_ROLE_BYTES}");
            }
            roles.push(c.utf8(n)?);
        }
        let ci = CompositeInfo { depth, index, roles };
        ci.validate()?;
        Ok(ci)
    }
}

/// Descriptor rules of a head: element type code 0, row-major, rank 0, byte offset 0, no
/// buffers and no quantization, sparse or paging block.
pub(crate) fn validate_head(d: &TensorDescriptor) -> Result<()> {
    if d.element_type() != ElementType::Bool
        || *d.layout() != LayoutDescriptor::RowMajor
        || d.shape().rank() != 0
        || d.byte_offset() != 0
        || !d.buffers().is_empty()
        || d.quantization().is_some()
        || d.sparse().is_some()
        || d.paging().is_some()
    {
        bail!(InvalidLayout, "a composite head is a buffer-less rank-0 descriptor with element code 0 and layout 0");
    }
    Ok(())
}

/// A top-level composite head descriptor with `name` (optional on a stream, required in a
/// container) and member `roles`.
pub fn head_descriptor(name: Option<&str>, roles: Vec<String>) -> Result<TensorDescriptor> {
    let d = TensorDescriptor::new(
        crate::DESCRIPTOR_VERSION_2,
        0,
        ElementType::Bool,
        Shape::scalar(),
        0,
        LayoutDescriptor::RowMajor,
        Vec::new(),
        None,
        None,
        None,
        Some(CompositeInfo::head(roles)?),
    )?;
    match name {
        Some(n) => d.with_name(n),
        None => Ok(d),
    }
}

/// One item of the assembled view: a tensor, or a composite with its members.
#[derive(Debug)]
pub enum Item {
    /// A tensor that is not a composite head.
    Tensor(ReadTensor),
    /// A composite: its head and members, in order.
    Composite(Composite),
}

impl Item {
    /// The item's descriptor (a composite's head).
    pub fn descriptor(&self) -> &TensorDescriptor {
        match self {
            Item::Tensor(t) => &t.descriptor,
            Item::Composite(c) => &c.head,
        }
    }
}

/// An assembled composite. Owns its members' buffers.
#[derive(Debug)]
pub struct Composite {
    head: TensorDescriptor,
    members: Vec<Item>,
}

/// One node of a composite's preorder walk.
#[derive(Debug)]
pub struct Node<'a> {
    /// Depth below the walked composite (its members are 1).
    pub depth: usize,
    /// Index of the parent node in the walk (`None` for the root).
    pub parent: Option<usize>,
    /// Role in the parent (empty for the root).
    pub role: &'a str,
    /// The node.
    pub item: NodeRef<'a>,
}

/// What a [`Node`] is.
#[derive(Clone, Copy, Debug)]
pub enum NodeRef<'a> {
    /// A composite (the root or a nested one).
    Composite(&'a Composite),
    /// A tensor member.
    Tensor(&'a ReadTensor),
}

impl Composite {
    /// The head descriptor (name, metadata, roles).
    pub fn head(&self) -> &TensorDescriptor {
        &self.head
    }
    /// The composite's name (the head's), if any.
    pub fn name(&self) -> Option<&str> {
        self.head.name()
    }
    /// Number of direct members.
    pub fn len(&self) -> usize {
        self.members.len()
    }
    /// Never true: a composite has at least one member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    /// Roles of the direct members, in order.
    pub fn roles(&self) -> &[String] {
        self.head.composite().map(|c| c.roles()).unwrap_or(&[])
    }
    /// Direct members, in order.
    pub fn members(&self) -> &[Item] {
        &self.members
    }
    /// Direct members, owned.
    pub fn into_members(self) -> Vec<Item> {
        self.members
    }
    /// The direct member with `role`.
    pub fn get(&self, role: &str) -> Option<&Item> {
        self.roles().iter().position(|r| r == role).map(|i| &self.members[i])
    }
    /// The whole tree in preorder, this composite first.
    pub fn walk(&self) -> Vec<Node<'_>> {
        let mut out = vec![Node { depth: 0, parent: None, role: "", item: NodeRef::Composite(self) }];
        fn rec<'a>(c: &'a Composite, me: usize, depth: usize, out: &mut Vec<Node<'a>>) {
            for (role, m) in c.roles().iter().zip(&c.members) {
                let at = out.len();
                match m {
                    Item::Tensor(t) => out.push(Node { depth, parent: Some(me), role, item: NodeRef::Tensor(t) }),
                    Item::Composite(k) => {
                        out.push(Node { depth, parent: Some(me), role, item: NodeRef::Composite(k) });
                        rec(k, at, depth + 1, out);
                    }
                }
            }
        }
        rec(self, 0, 1, &mut out);
        out
    }
}

/// Assembles items from a [`StreamReader`] (the item view). Keep one per reader: a failed
/// transport read leaves the partly assembled composite here, and the next call resumes.
#[derive(Debug, Default)]
pub struct ItemReader {
    stack: Vec<Composite>,
    tensors: usize,
    /// The first error that was not a resumable transport failure: sticky, like the stream
    /// reader's own errors.
    failed: Option<Error>,
}

impl ItemReader {
    /// An assembler with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// True while a composite is partly read.
    pub fn is_mid_item(&self) -> bool {
        !self.stack.is_empty()
    }

    /// The next item: a tensor, or a whole composite, or `None` at the end of the stream.
    ///
    /// Errors: every error of `next_tensor` (a `Transport` error keeps the partial composite
    /// for the next call; any other drops it); `Truncated` (the stream ends inside a
    /// composite); `Corrupt` (a head's member count disagrees with the members that follow,
    /// either way, or a member is out of place); `LimitExceeded` (deeper than
    /// [`MAX_COMPOSITE_DEPTH`], more than [`MAX_COMPOSITE_TENSORS`] descriptors).
    pub fn next_item<T: ReadTransport>(&mut self, r: &mut StreamReader<T>) -> Result<Option<Item>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let out = self.next_item_inner(r);
        if let Err(e) = &out {
            if e.kind() != ErrorKind::Transport {
                self.failed = Some(e.clone());
            }
        }
        out
    }

    fn next_item_inner<T: ReadTransport>(&mut self, r: &mut StreamReader<T>) -> Result<Option<Item>> {
        loop {
            let t = match r.next_tensor() {
                Ok(t) => t,
                Err(e) => {
                    if e.kind() != ErrorKind::Transport {
                        self.reset();
                    }
                    return Err(e);
                }
            };
            let Some(t) = t else {
                if let Some(top) = self.stack.last() {
                    let e = err!(
                        Truncated,
                        "the stream ended inside composite {:?} after {} of its {} members",
                        top.name().unwrap_or(""),
                        top.members.len(),
                        top.roles().len()
                    );
                    self.reset();
                    return Err(e);
                }
                return Ok(None);
            };
            match self.push(t) {
                Err(e) => {
                    self.reset();
                    return Err(e);
                }
                Ok(Some(item)) => return Ok(Some(item)),
                Ok(None) => {}
            }
        }
    }

    /// Push form of [`next_item`](Self::next_item), for a caller that decodes tensors itself
    /// (a [`StreamDecoder`](crate::StreamDecoder)): feeds the next tensor of the flat view;
    /// returns the item it completes, if any. Errors as `next_item` (the partial composite is
    /// dropped).
    pub fn push_tensor(&mut self, t: ReadTensor) -> Result<Option<Item>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.push(t);
        if let Err(e) = &r {
            self.reset();
            self.failed = Some(e.clone());
        }
        r
    }

    /// The sticky error of an earlier failed item, if any (every later call returns it).
    pub fn failure(&self) -> Option<&Error> {
        self.failed.as_ref()
    }

    /// Push form of the end of the stream: `Truncated` if a composite is partly read.
    pub fn end_of_stream(&mut self) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if let Some(top) = self.stack.last() {
            let e = err!(
                Truncated,
                "the stream ended inside composite {:?} after {} of its {} members",
                top.name().unwrap_or(""),
                top.members.len(),
                top.roles().len()
            );
            self.reset();
            self.failed = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    fn reset(&mut self) {
        self.stack.clear();
        self.tensors = 0;
    }

    fn push(&mut self, t: ReadTensor) -> Result<Option<Item>> {
        let open = self.stack.len();
        let (depth, index) = t.descriptor.composite().map_or((0, 0), |c| (c.depth() as usize, c.index() as usize));
        if let Some(top) = self.stack.last() {
            let have = top.members.len();
            if depth < open {
                bail!(
                    Corrupt,
                    "composite {:?} declares {} members but only {have} arrived before a tensor at depth {depth}",
                    top.name().unwrap_or(""),
                    top.roles().len()
                );
            }
            if depth != open || index != have {
                bail!(Corrupt, "member at depth {depth} index {index} where depth {open} index {have} was expected");
            }
        } else if depth != 0 {
            bail!(
                Corrupt,
                "a composite member (depth {depth}, index {index}) arrived outside any composite: a head's member count is too small"
            );
        }
        self.tensors += 1;
        if self.tensors > MAX_COMPOSITE_TENSORS {
            bail!(LimitExceeded, "a composite item holds more than {MAX_COMPOSITE_TENSORS} descriptors");
        }
        if t.descriptor.is_composite_head() {
            self.stack.push(Composite { head: t.descriptor, members: Vec::new() });
            return Ok(None);
        }
        let mut item = Item::Tensor(t);
        while let Some(top) = self.stack.last_mut() {
            top.members.push(item);
            if top.members.len() < top.roles().len() {
                return Ok(None);
            }
            item = Item::Composite(self.stack.pop().expect("non-empty"));
        }
        self.tensors = 0;
        Ok(Some(item))
    }
}

/// One flattened descriptor to write, with its payloads.
pub type FlatTensor<'a> = (TensorDescriptor, Vec<&'a [u8]>);

/// A member of a composite to write.
#[derive(Debug)]
pub enum Member<'a> {
    /// A tensor: its descriptor (any composite block it has is replaced) and its payloads.
    Tensor(&'a TensorDescriptor, Vec<&'a [u8]>),
    /// A nested composite.
    Composite(CompositeSpec<'a>),
}

/// A composite to write: an optional name (required in a container), metadata for the head,
/// and members with their roles. Borrows what it writes.
#[derive(Debug, Default)]
pub struct CompositeSpec<'a> {
    /// Name of the head.
    pub name: Option<String>,
    /// `(role, member)` in order.
    pub members: Vec<(String, Member<'a>)>,
}

impl<'a> CompositeSpec<'a> {
    /// The descriptors to write in preorder, each stamped with its membership, and their
    /// payloads. Everything is validated (contents included) before anything is written.
    /// `path` names members `path/role` (for containers) when `Some`.
    pub fn flatten(&self) -> Result<Vec<FlatTensor<'a>>> {
        let mut out = Vec::new();
        self.flatten_into(0, 0, None, &mut out)?;
        Ok(out)
    }

    fn flatten_into(&self, depth: u16, index: u32, path: Option<&str>, out: &mut Vec<FlatTensor<'a>>) -> Result<()> {
        let roles: Vec<String> = self.members.iter().map(|(r, _)| r.clone()).collect();
        let info = CompositeInfo::head(roles)?.at(depth, index);
        info.validate()?;
        let name = path.map(str::to_string).or_else(|| self.name.clone());
        let mut head = head_descriptor(None, info.roles().to_vec())?.with_composite(Some(info))?;
        if let Some(n) = &name {
            head = head.with_name(n.clone())?;
        }
        out.push((head, Vec::new()));
        for (i, (role, m)) in self.members.iter().enumerate() {
            if out.len() >= MAX_COMPOSITE_TENSORS {
                bail!(LimitExceeded, "a composite item holds more than {MAX_COMPOSITE_TENSORS} descriptors");
            }
            let child = path.map(|p| format!("{p}/{role}"));
            match m {
                Member::Tensor(d, payloads) => {
                    if d.is_composite_head() {
                        bail!(InvalidArgument, "member {role:?} is a composite head: pass it as Member::Composite");
                    }
                    crate::layouts::check_contents(d, payloads)?;
                    let mut d = (*d).clone().with_composite(Some(CompositeInfo::member(depth + 1, i as u32)))?;
                    if let Some(c) = &child {
                        d = d.with_name(c.clone())?;
                    }
                    out.push((d, payloads.clone()));
                }
                Member::Composite(spec) => spec.flatten_into(depth + 1, i as u32, child.as_deref(), out)?,
            }
        }
        Ok(())
    }
}

/// Writes a composite to a stream: the head, then every member in preorder. Everything is
/// validated first, so only a transport failure can stop it part-way; the writer is then
/// poisoned (a partial composite is on the wire). Errors: those of [`CompositeSpec::flatten`]
/// and of [`StreamWriter::write_tensor`].
pub fn write_composite<T: WriteTransport>(w: &mut StreamWriter<T>, spec: &CompositeSpec<'_>) -> Result<()> {
    let flat = spec.flatten()?;
    for (i, (d, p)) in flat.iter().enumerate() {
        if let Err(e) = w.write_tensor(d, p) {
            if i > 0 {
                w.poison();
                return Err(Error::new(
                    e.kind(),
                    format!("{} after part of a composite was written; the writer is poisoned", e.message()),
                ));
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Adds a composite to a container: the head under `spec.name` (required), member *i* under
/// `name/role_i`, recursively. Errors: `InvalidArgument` (no name), those of `flatten` and
/// `add_tensor`. A failure part-way leaves the members already added in the container.
pub fn add_composite<T: WriteTransport>(w: &mut FileWriter<T>, spec: &CompositeSpec<'_>) -> Result<()> {
    for (d, p) in &container_tensors(spec)? {
        w.add_tensor(d, p)?;
    }
    Ok(())
}

/// The tensors a container stores for a composite, in preorder: the head under `spec.name`
/// (required), member *i* under `name/role_i`, recursively (what [`add_composite`] adds, for a
/// caller that stages them itself, e.g. through a [`FileEncoder`](crate::file::FileEncoder)).
/// Errors: `InvalidArgument` (no name), those of `flatten`.
pub fn container_tensors<'a>(spec: &CompositeSpec<'a>) -> Result<Vec<FlatTensor<'a>>> {
    let name = match spec.name.as_deref() {
        Some(n) if !n.is_empty() => n,
        _ => bail!(InvalidArgument, "a composite in a container needs a non-empty name"),
    };
    let mut flat = Vec::new();
    spec.flatten_into(0, 0, Some(name), &mut flat)?;
    Ok(flat)
}

/// Reads the composite stored under `name` with all its members (their contents checked).
/// Errors: `NotFound`, `InvalidArgument` (the entry is not a composite head), `Corrupt`
/// (a member missing or out of place), `LimitExceeded`, and those of `read_tensor`.
pub fn read_composite<R: ReadAt>(r: &mut FileReader<R>, name: &str) -> Result<Composite> {
    let e = r.find(name.as_bytes())?.ok_or_else(|| err!(NotFound, "no tensor named {name:?}"))?;
    if !e.descriptor().is_composite_head() || e.descriptor().composite().is_some_and(|c| c.depth() != 0) {
        bail!(InvalidArgument, "{name:?} is not a top-level composite");
    }
    let mut count = 1;
    read_members(r, e.descriptor().clone(), name, &mut count, true)
}

/// Finds every member of `head` (stored under `path`) by name and checks that it is in place
/// (depth and index); with `read`, reads each tensor member (payloads and indices checked) into
/// the returned composite, else its member list stays empty (an index-only check). `count`
/// counts descriptors, heads included.
fn read_members<R: ReadAt>(
    r: &mut FileReader<R>,
    head: TensorDescriptor,
    path: &str,
    count: &mut usize,
    read: bool,
) -> Result<Composite> {
    let info = head.composite().expect("head").clone();
    let mut members = Vec::with_capacity(if read { info.roles().len() } else { 0 });
    for (i, role) in info.roles().iter().enumerate() {
        *count += 1;
        if *count > MAX_COMPOSITE_TENSORS {
            bail!(LimitExceeded, "composite {path:?} holds more than {MAX_COMPOSITE_TENSORS} descriptors");
        }
        let child = format!("{path}/{role}");
        let e = r
            .find(child.as_bytes())?
            .ok_or_else(|| err!(Corrupt, "member {child:?} of composite {path:?} is missing"))?;
        let ok = e.descriptor().composite().is_some_and(|c| c.depth() == info.depth() + 1 && c.index() as usize == i);
        if !ok {
            bail!(Corrupt, "entry {child:?} is not member {i} of composite {path:?}");
        }
        if e.descriptor().is_composite_head() {
            let nested = read_members(r, e.descriptor().clone(), &child, count, read)?;
            if read {
                members.push(Item::Composite(nested));
            }
        } else if read {
            members.push(Item::Tensor(r.read_tensor(&e)?));
        }
    }
    Ok(Composite { head, members })
}

/// Checks the composite structure of a whole container from its index, reading no payload
/// (docs/spec/hrryfile.md §2): every top-level head's members are stored under `name/role_i`
/// at the head's depth + 1 and index *i*, recursively; no top-level composite holds more than
/// [`MAX_COMPOSITE_TENSORS`] descriptors; and every entry that says it is a member (depth ≥ 1)
/// is reached that way from some top-level head. Costs one entry read per entry and one
/// lookup per member. Errors: `Corrupt` (a member missing, out of place, or belonging to no
/// composite), `LimitExceeded`, and the failures of reading the index.
pub fn check_container<R: ReadAt>(r: &mut FileReader<R>) -> Result<()> {
    let mut members = 0u64;
    let mut reached = 0u64;
    for i in 0..r.entry_count() {
        let e = r.entry(i)?;
        let Some(c) = e.descriptor().composite() else { continue };
        if c.depth() > 0 {
            members += 1;
            continue;
        }
        let mut count = 1;
        read_members(r, e.descriptor().clone(), e.name(), &mut count, false)?;
        reached += count as u64 - 1;
    }
    if members == reached {
        return Ok(());
    }
    // Some member belongs to no composite: a second pass names the first one.
    for i in 0..r.entry_count() {
        let e = r.entry(i)?;
        let Some(c) = e.descriptor().composite().filter(|c| c.depth() > 0) else { continue };
        let parent = e.name().rsplit_once('/');
        let listed = match parent {
            Some((p, role)) => match r.find(p.as_bytes())? {
                Some(h) => h.descriptor().composite().is_some_and(|hc| {
                    hc.depth() + 1 == c.depth() && hc.roles().get(c.index() as usize).is_some_and(|r| r == role)
                }),
                None => false,
            },
            None => false,
        };
        if !listed {
            bail!(
                Corrupt,
                "entry {:?} is marked as member {} at depth {} of a composite, but no composite head lists it",
                e.name(),
                c.index(),
                c.depth()
            );
        }
    }
    // Every member is listed by its parent, so some parent chain does not reach depth 0.
    bail!(Corrupt, "{} composite members are not reached from any top-level composite", members - reached)
}
