//! Composite tensors in the C ABI (beyond the flat stream view): the assembled view
//! `hurray_reader_next_item`, `hurray_writer_write_composite`, composites in containers by
//! name, and the `HurrayComposite` handle with accessors for its members and their tree.
//! docs/spec/c-abi.md §Sparse, paged and composite tensors. Added within ABI 4.

use hurray_core::composite::{self, CompositeSpec, Member};
use hurray_core::{Composite, Item, TensorDescriptor};

use crate::descriptor::{DescInner, HurrayDescriptor};
use crate::file::{HurrayFileReader, HurrayFileWriter, ReaderInner};
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::reader::HurrayReader;
use crate::status::*;
use crate::tensor::{HurrayTensor, TensorInner};
use crate::writer::{HurrayIoSlice, HurrayWriter};

enum Slot {
    Tensor(Box<HurrayTensor>),
    Composite(Box<HurrayComposite>),
}

/// A composite's head, roles and members, each member a borrowed handle.
pub struct CompositeInner {
    head: Option<Box<HurrayDescriptor>>,
    roles: Vec<String>,
    members: Vec<Slot>,
}

impl Drop for CompositeInner {
    fn drop(&mut self) {
        for m in self.members.drain(..) {
            match m {
                Slot::Tensor(t) => handle::retire(t),
                Slot::Composite(c) => handle::retire(c),
            }
        }
        if let Some(h) = self.head.take() {
            handle::retire(h);
        }
    }
}

impl CompositeInner {
    fn from_core(c: Composite) -> FfiResult<Self> {
        let head = c.head().clone();
        let roles = c.roles().to_vec();
        let mut out = CompositeInner { head: None, roles, members: Vec::with_capacity(c.len()) };
        for m in c.into_members() {
            out.members.push(match m {
                Item::Tensor(t) => Slot::Tensor(Box::new(handle::new_borrowed(TensorInner::from_read(t)?))),
                Item::Composite(k) => Slot::Composite(Box::new(handle::new_borrowed(CompositeInner::from_core(k)?))),
            });
        }
        out.head = Some(Box::new(handle::new_borrowed(DescInner::new(head)?)));
        Ok(out)
    }
}

/// An assembled composite: a head descriptor (its name, metadata and member roles) and its
/// members in order, each a tensor or a nested composite. Owned by the caller that received
/// it (destroy with `hurray_composite_destroy`, which frees every member); member handles
/// are borrowed from it. One thread at a time.
pub struct HurrayComposite {
    pub(crate) shell: crate::handle::Shell<CompositeInner>,
}
opaque_handle!(HurrayComposite, CompositeInner, 0x4855_5252_4350_3031);

/// Reads the next item of the stream (the assembled view): a tensor into `*out_tensor`, or a
/// whole composite, members included, into `*out_composite`; the other is set to NULL. Both
/// are NULL with `HURRAY_END_OF_STREAM`. Do not interleave with `hurray_reader_next_tensor`
/// while a composite is partly read.
///
/// Errors (both outputs NULL): `TRANSPORT` (resumable: the partial composite is kept and the
/// next call goes on), `TRUNCATED` (the stream ends inside a composite), `CORRUPT` (a member
/// count that disagrees with the members that follow, either way), `LIMIT_EXCEEDED`
/// (nesting deeper than `HURRAY_MAX_COMPOSITE_DEPTH`, more than 65,536 descriptors), and
/// every error of `hurray_reader_next_tensor`. Added within ABI 4.
///
/// # Safety
/// `reader` live; `out_tensor` and `out_composite` valid for one write each.
#[no_mangle]
pub unsafe extern "C" fn hurray_reader_next_item(
    reader: *mut HurrayReader,
    out_tensor: *mut *mut HurrayTensor,
    out_composite: *mut *mut HurrayComposite,
) -> HurrayStatus {
    guard("hurray_reader_next_item", || {
        non_null(out_tensor, "out_tensor")?;
        non_null(out_composite, "out_composite")?;
        // SAFETY: `out_tensor` and `out_composite` were checked non-NULL above and are valid for one write each
        // (# Safety).
        unsafe {
            *out_tensor = std::ptr::null_mut();
            *out_composite = std::ptr::null_mut();
        }
        let r = handle::handle_mut!(reader)?;
        let state = &mut *r;
        match state.items.next_item(&mut state.stream)? {
            None => Ok(HURRAY_END_OF_STREAM),
            Some(Item::Tensor(t)) => {
                // SAFETY: `out_tensor` was checked non-NULL above and is valid for one pointer write (# Safety).
                unsafe { handle::emit(out_tensor, TensorInner::from_read(t)?) };
                Ok(HURRAY_OK)
            }
            Some(Item::Composite(c)) => {
                // SAFETY: `out_composite` was checked non-NULL above and is valid for one pointer write (# Safety).
                unsafe { handle::emit(out_composite, CompositeInner::from_core(c)?) };
                Ok(HURRAY_OK)
            }
        }
    })
}

/// Emits an assembled composite as an owned handle (for the decoder's item view).
///
/// # Safety
/// `out` valid for one write.
pub(crate) unsafe fn emit_composite(out: *mut *mut HurrayComposite, c: Composite) -> FfiResult<()> {
    // SAFETY: `out` is valid for one pointer write (this function's # Safety).
    unsafe { handle::emit(out, CompositeInner::from_core(c)?) };
    Ok(())
}

/// Borrows the head descriptor (name via `hurray_descriptor_name`, roles via
/// `hurray_descriptor_composite_role`): valid until the composite is destroyed.
///
/// # Safety
/// `composite` live; `out_descriptor` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_composite_head(
    composite: *const HurrayComposite,
    out_descriptor: *mut *mut HurrayDescriptor,
) -> HurrayStatus {
    guard("hurray_composite_head", || {
        let c = handle::handle_ref!(composite)?;
        non_null(out_descriptor, "out_descriptor")?;
        let p: *const HurrayDescriptor = &**c.head.as_ref().expect("live composite");
        // SAFETY: `out_descriptor` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_descriptor = p as *mut HurrayDescriptor };
        Ok(HURRAY_OK)
    })
}

/// Stores the number of direct members (≥ 1) in `*out`.
///
/// # Safety
/// `composite` live; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_composite_member_count(
    composite: *const HurrayComposite,
    out: *mut usize,
) -> HurrayStatus {
    guard("hurray_composite_member_count", || {
        let c = handle::handle_ref!(composite)?;
        handle::put_out!(out, c.members.len())?;
        Ok(HURRAY_OK)
    })
}

/// Borrows direct member `index`: its role (`*out_role`, `*out_role_len` UTF-8 bytes, not
/// NUL-terminated) and either a tensor (`*out_tensor`) or a nested composite
/// (`*out_composite`), the other NULL. Walking members recursively gives the tree in
/// preorder. All borrows are valid until the root composite is destroyed; never destroy them.
/// Errors: `INVALID_ARGUMENT` (`index` ≥ member count), `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// # Safety
/// `composite` live; every out pointer valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_composite_member(
    composite: *const HurrayComposite,
    index: usize,
    out_role: *mut *const u8,
    out_role_len: *mut usize,
    out_tensor: *mut *mut HurrayTensor,
    out_composite: *mut *mut HurrayComposite,
) -> HurrayStatus {
    guard("hurray_composite_member", || {
        let c = handle::handle_ref!(composite)?;
        for (p, n) in [(out_role as *const u8, "out_role"), (out_role_len as *const u8, "out_role_len")] {
            non_null(p, n)?;
        }
        non_null(out_tensor, "out_tensor")?;
        non_null(out_composite, "out_composite")?;
        let m = c.members.get(index).ok_or_else(|| {
            FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("member {index} of a composite of {}", c.members.len()))
        })?;
        let role = &c.roles[index];
        // SAFETY: `out_role`, `out_role_len`, `out_tensor` and `out_composite` were checked non-NULL above and are
        // valid for one write each (# Safety).
        unsafe {
            *out_role = role.as_ptr();
            *out_role_len = role.len();
            *out_tensor = std::ptr::null_mut();
            *out_composite = std::ptr::null_mut();
            match m {
                Slot::Tensor(t) => *out_tensor = &**t as *const HurrayTensor as *mut HurrayTensor,
                Slot::Composite(k) => *out_composite = &**k as *const HurrayComposite as *mut HurrayComposite,
            }
        }
        Ok(HURRAY_OK)
    })
}

/// Destroys a composite with all its members and writes NULL to `*composite`. NULL or
/// `*composite == NULL` is a no-op; a borrowed (nested) composite is refused.
///
/// # Safety
/// `composite` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_composite_destroy(composite: *mut *mut HurrayComposite) -> HurrayStatus {
    guard("hurray_composite_destroy", || {
        // SAFETY: `composite` is NULL or valid for a read and a write; `*composite` is NULL or a handle from this
        // library (# Safety).
        unsafe { handle::destroy_pp(composite, "composite")? };
        Ok(HURRAY_OK)
    })
}

enum BMember {
    Tensor(Box<TensorDescriptor>, Vec<HurrayIoSlice>),
    Composite(Box<BuilderInner>),
}

/// What a composite builder has collected.
pub struct BuilderInner {
    name: Option<String>,
    members: Vec<(String, BMember)>,
}

impl BuilderInner {
    /// The core's view. Payload slices are the caller's (documented lifetime).
    ///
    /// # Safety
    /// Every payload slice added to this builder (and to nested builders) is still valid for its
    /// length, as `hurray_composite_builder_add_tensor` requires of its caller.
    unsafe fn spec(&self) -> CompositeSpec<'_> {
        CompositeSpec {
            name: self.name.clone(),
            members: self
                .members
                .iter()
                .map(|(r, m)| {
                    let m = match m {
                        BMember::Tensor(d, p) => Member::Tensor(
                            d,
                            p.iter()
                                .map(|s| {
                                    if s.len == 0 {
                                        &[][..]
                                    } else {
                                        // SAFETY: `s` is one of the caller's payload slices with `len` > 0: `ptr` is
                                        // valid for `len` bytes while the builder's payloads are (the calling
                                        // function's # Safety).
                                        unsafe { std::slice::from_raw_parts(s.ptr, s.len) }
                                    }
                                })
                                .collect(),
                        ),
                        // SAFETY: the nested builder's payload slices are under the same caller promise as this
                        // builder's.
                        BMember::Composite(b) => Member::Composite(unsafe { b.spec() }),
                    };
                    (r.clone(), m)
                })
                .collect(),
        }
    }
}

/// Collects a composite to write: members in order, each with a role, a tensor (descriptor +
/// borrowed payloads) or a nested builder. Owned; destroy with
/// `hurray_composite_builder_destroy`. Payloads are borrowed, not copied: keep them alive and
/// unchanged until the builder is written or destroyed.
pub struct HurrayCompositeBuilder {
    pub(crate) shell: crate::handle::Shell<BuilderInner>,
}
opaque_handle!(HurrayCompositeBuilder, BuilderInner, 0x4855_5252_4342_3031);

fn utf8_arg(p: *const u8, len: usize, what: &str) -> FfiResult<String> {
    if len == 0 {
        return Ok(String::new());
    }
    non_null(p, what)?;
    // SAFETY: `p` is non-NULL (checked above) and valid for `len` bytes by every caller's own # Safety contract.
    let b = unsafe { std::slice::from_raw_parts(p, len) };
    String::from_utf8(b.to_vec())
        .map_err(|_| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("{what} is not UTF-8")))
}

/// Starts a composite named `name[0..name_len]` (UTF-8; `name_len == 0` for none: a name is
/// required in a container, optional on a stream; a nested composite's name is ignored).
///
/// # Safety
/// `name` valid for `name_len` bytes; `out_builder` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_composite_builder_new(
    name: *const u8,
    name_len: usize,
    out_builder: *mut *mut HurrayCompositeBuilder,
) -> HurrayStatus {
    guard("hurray_composite_builder_new", || {
        non_null(out_builder, "out_builder")?;
        let n = utf8_arg(name, name_len, "name")?;
        let b = BuilderInner { name: if n.is_empty() { None } else { Some(n) }, members: Vec::new() };
        // SAFETY: `out_builder` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_builder, b) };
        Ok(HURRAY_OK)
    })
}

/// Appends a tensor member with `role` (1..=256 UTF-8 bytes, no NUL or `/`, unique in this
/// composite; checked when written). The descriptor is copied; the `count` payloads are
/// borrowed until the builder is written or destroyed.
///
/// # Safety
/// `builder` and `descriptor` live; `role` valid for `role_len` bytes; `payloads` valid for
/// `count` slices that stay valid as documented.
#[no_mangle]
pub unsafe extern "C" fn hurray_composite_builder_add_tensor(
    builder: *mut HurrayCompositeBuilder,
    role: *const u8,
    role_len: usize,
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: usize,
) -> HurrayStatus {
    guard("hurray_composite_builder_add_tensor", || {
        let b = handle::handle_mut!(builder)?;
        let d = handle::handle_ref!(descriptor)?;
        let r = utf8_arg(role, role_len, "role")?;
        let slices = if count == 0 {
            Vec::new()
        } else {
            non_null(payloads, "payloads")?;
            // SAFETY: `payloads` is non-NULL (checked above) and valid for `count` slices (# Safety); each slice is
            // copied, not its bytes.
            unsafe { std::slice::from_raw_parts(payloads, count) }.to_vec()
        };
        for (i, s) in slices.iter().enumerate() {
            if s.len > 0 && s.ptr.is_null() {
                non_null(s.ptr, &format!("payloads[{i}].ptr"))?;
            }
        }
        b.members.push((r, BMember::Tensor(Box::new(d.desc.clone()), slices)));
        Ok(HURRAY_OK)
    })
}

/// Appends a nested composite member with `role`, taking ownership of `*child` (NULL is then
/// written through `child`).
///
/// # Safety
/// `builder` live; `child` valid for read and write, `*child` a live builder other than
/// `builder`.
#[no_mangle]
pub unsafe extern "C" fn hurray_composite_builder_add_composite(
    builder: *mut HurrayCompositeBuilder,
    role: *const u8,
    role_len: usize,
    child: *mut *mut HurrayCompositeBuilder,
) -> HurrayStatus {
    guard("hurray_composite_builder_add_composite", || {
        non_null(child, "child")?;
        // SAFETY: `child` was checked non-NULL above and is valid for one read (# Safety).
        let c = unsafe { *child };
        if std::ptr::eq(c, builder) {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "a composite cannot contain itself"));
        }
        let r = utf8_arg(role, role_len, "role")?;
        handle::handle_mut!(builder)?;
        // SAFETY: `c` is NULL or a handle from this library, used by one thread at a time (# Safety); inner_mut rejects
        // NULL and dead handles.
        let inner = unsafe { handle::inner_mut(c, "child")? };
        let taken = std::mem::replace(inner, BuilderInner { name: None, members: Vec::new() });
        // SAFETY: `child` is NULL or valid for a read and a write; `*child` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(child, "child")? };
        let b = handle::handle_mut!(builder)?;
        b.members.push((r, BMember::Composite(Box::new(taken))));
        Ok(HURRAY_OK)
    })
}

/// Destroys a builder and writes NULL to `*builder`; NULL or `*builder == NULL` is a no-op.
///
/// # Safety
/// `builder` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_composite_builder_destroy(builder: *mut *mut HurrayCompositeBuilder) -> HurrayStatus {
    guard("hurray_composite_builder_destroy", || {
        // SAFETY: `builder` is NULL or valid for a read and a write; `*builder` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(builder, "builder")? };
        Ok(HURRAY_OK)
    })
}

/// Writes a composite to a stream: its head, then every member in preorder, each an
/// ordinary tensor frame (a reader's flat view sees them one by one). Everything (roles,
/// descriptors, payload lengths, sparse indices) is checked before the first byte, so only
/// the transport can stop it part-way; the writer is then poisoned.
///
/// Errors: `INVALID_ARGUMENT` (roles, payload counts), `DUPLICATE_NAME` (a role twice),
/// `LIMIT_EXCEEDED` (depth, member count), `CORRUPT` (bad indices), and those of
/// `hurray_writer_write_tensor`. Added within ABI 4.
///
/// # Safety
/// `writer` and `builder` live; the builder's payloads valid.
#[no_mangle]
pub unsafe extern "C" fn hurray_writer_write_composite(
    writer: *mut HurrayWriter,
    builder: *const HurrayCompositeBuilder,
) -> HurrayStatus {
    guard("hurray_writer_write_composite", || {
        let w = handle::handle_mut!(writer)?;
        let b = handle::handle_ref!(builder)?;
        // SAFETY: the builder's payload slices are valid for this call (# Safety).
        composite::write_composite(w, &unsafe { b.spec() })?;
        Ok(HURRAY_OK)
    })
}

/// Stages a whole composite in an encoder (docs/spec/c-abi.md §Decoders and encoders): its
/// head and members in preorder, every payload copied, so it is sent, or taken back by
/// `hurray_encoder_abort`, as one item. Writes the pending output's state to `*out_state`
/// (may be NULL). Errors: those of `hurray_writer_write_composite` (nothing staged) and of
/// `hurray_encoder_encode`. Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` and `builder` live; the builder's payloads valid for the call.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_encode_composite(
    encoder: *mut crate::encoder::HurrayEncoder,
    builder: *const HurrayCompositeBuilder,
    out_state: *mut crate::encoder::HurrayEncoderState,
) -> HurrayStatus {
    guard("hurray_encoder_encode_composite", || {
        let e = handle::handle_mut!(encoder)?;
        let b = handle::handle_ref!(builder)?;
        // SAFETY: the builder's payload slices are valid for this call (# Safety).
        let spec = unsafe { b.spec() };
        let flat = spec.flatten()?;
        let encoded = flat.iter().map(|(d, _)| d.encode()).collect::<hurray_core::Result<Vec<_>>>()?;
        let group: Vec<hurray_core::encoder::GroupEntry<'_>> =
            flat.iter().zip(&encoded).map(|((d, p), enc)| (d, enc.as_slice(), p.as_slice())).collect();
        e.encode_group(&group)?;
        e.put_state(out_state);
        Ok(HURRAY_OK)
    })
}

/// Adds a composite to a container: the head under the builder's name (required), member
/// *i* under `name/role_i`, recursively. Errors: `INVALID_ARGUMENT` (no name), those of
/// `hurray_writer_write_composite` and `hurray_file_writer_add_tensor`. A failure part-way
/// leaves the members already added. Added within ABI 4.
///
/// # Safety
/// `writer` and `builder` live; the builder's payloads valid.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_writer_add_composite(
    writer: *mut HurrayFileWriter,
    builder: *const HurrayCompositeBuilder,
) -> HurrayStatus {
    guard("hurray_file_writer_add_composite", || {
        let w = handle::handle_mut!(writer)?;
        let b = handle::handle_ref!(builder)?;
        // SAFETY: the builder's payload slices are valid for this call (# Safety).
        composite::add_composite(w, &unsafe { b.spec() })?;
        Ok(HURRAY_OK)
    })
}

/// Reads the composite stored under `name[0..name_len]` with all its members into
/// `*out_composite` (owned; destroy with `hurray_composite_destroy`). Member payloads are
/// read (copied) and sparse indices checked. Errors: `NOT_FOUND`, `INVALID_ARGUMENT` (not a
/// top-level composite), `CORRUPT` (a member missing or out of place), and those of
/// `hurray_file_reader_read_tensor`. Added within ABI 4.
///
/// # Safety
/// `reader` live; `name` valid for `name_len` bytes; `out_composite` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_read_composite(
    reader: *mut HurrayFileReader,
    name: *const u8,
    name_len: usize,
    out_composite: *mut *mut HurrayComposite,
) -> HurrayStatus {
    guard("hurray_file_reader_read_composite", || {
        non_null(out_composite, "out_composite")?;
        // SAFETY: `out_composite` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_composite = std::ptr::null_mut() };
        let r = handle::handle_mut!(reader)?;
        let n = utf8_arg(name, name_len, "name")?;
        let c = match r {
            ReaderInner::Io(x) => composite::read_composite(x, &n)?,
            ReaderInner::Span(x) => composite::read_composite(x, &n)?,
            ReaderInner::Path(x) => composite::read_composite(x, &n)?,
            ReaderInner::Mapped { reader: x, .. } => composite::read_composite(x, &n)?,
        };
        // SAFETY: `out_composite` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_composite, CompositeInner::from_core(c)?) };
        Ok(HURRAY_OK)
    })
}

/// Checks the composite structure of the whole container from its index, reading no payload
/// (docs/spec/hrryfile.md §2 Composites): every top-level head's members are present under
/// `name/role_i` at the right depth and index (recursively), no composite holds more than
/// 65,536 descriptors, and every entry marked as a member (depth ≥ 1) belongs to a composite.
/// `hurray_file_reader_verify` runs the same check. Costs one entry read per entry (none with
/// a loaded index) and one lookup per member. Errors: `CORRUPT` (the message names the entry),
/// `LIMIT_EXCEEDED`, and those of `hurray_file_reader_entry`. Added within ABI 4.
///
/// # Safety
/// `reader` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_file_reader_check_composites(reader: *mut HurrayFileReader) -> HurrayStatus {
    guard("hurray_file_reader_check_composites", || {
        let r = handle::handle_mut!(reader)?;
        match r {
            ReaderInner::Io(x) => composite::check_container(x)?,
            ReaderInner::Span(x) => composite::check_container(x)?,
            ReaderInner::Path(x) => composite::check_container(x)?,
            ReaderInner::Mapped { reader: x, .. } => composite::check_container(x)?,
        }
        Ok(HURRAY_OK)
    })
}
