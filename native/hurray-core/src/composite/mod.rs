//! Composite tensors (docs/spec/descriptor.md §Composite membership, docs/spec/stream.md
//! §Composites): a buffer-less **head** descriptor lists its members' roles; the members
//! follow it in preorder, each stamped with its depth and its index in its parent. Nesting
//! is allowed up to [`MAX_COMPOSITE_DEPTH`].
//!
//! On a stream every member is an ordinary tensor frame, so a reader that knows nothing of
//! composites still decodes it frame by frame (the *flat view*,
//! [`StreamReader::next_tensor`](crate::StreamReader::next_tensor)). [`ItemReader`] assembles the *item view*: one [`Item`] per top-level tensor or composite.
//! In a container the head is stored under the composite's name and member *i* under
//! `name/role_i` (recursively), so [`read_composite`] finds a composite by name.
//!
//! This file holds what needs no I/O: the assembled [`Composite`] and [`Item`], the push-fed
//! assembler [`ItemReader`] and the flattening of a [`CompositeSpec`]. The readers and writers
//! sit above the two I/O stacks: `stream.rs` over [`StreamReader`](crate::StreamReader) and
//! [`StreamWriter`](crate::StreamWriter), `file.rs` over [`FileReader`](crate::FileReader) and
//! [`FileWriter`](crate::FileWriter).

mod file;
mod stream;

pub use file::{add_composite, check_container, read_composite};
pub use stream::write_composite;

use crate::descriptor::{LayoutDescriptor, TensorDescriptor};
use crate::error::{bail, err, Error, Result};
use crate::shape::Shape;
use crate::tensor::ReadTensor;
use crate::types::ElementType;

// The composite block and its limits belong to the descriptor and the format's constants; they
// are re-exported here under the composite's name.
pub use crate::descriptor::CompositeInfo;
pub use crate::wire::{
    COMPOSITE_BLOCK_FIXED_BYTES, MAX_COMPOSITE_DEPTH, MAX_COMPOSITE_MEMBERS, MAX_COMPOSITE_TENSORS, MAX_ROLE_BYTES,
};

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

/// Assembles items (the item view) from a [`StreamReader`](crate::StreamReader), or from
/// tensors pushed in. Keep one per reader: a failed transport read leaves the partly assembled
/// composite here, and the next call resumes.
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
        if let Some(e) = self.ended_inside() {
            self.reset();
            self.failed = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    /// `Truncated` naming the partly read composite, if one is open.
    fn ended_inside(&self) -> Option<Error> {
        self.stack.last().map(|top| {
            err!(
                Truncated,
                "the stream ended inside composite {:?} after {} of its {} members",
                top.name().unwrap_or(""),
                top.members.len(),
                top.roles().len()
            )
        })
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
