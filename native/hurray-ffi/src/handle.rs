//! Handle conversions, written once: every `extern "C"` function reaches a handle through
//! `inner_ref`, `inner_mut`, `emit` or `destroy` (docs/spec/c-abi.md §Handles and ownership).
//! A handle argument is usually converted with [`handle_ref!`] or [`handle_mut!`], and a result
//! written through an out-pointer argument with [`put_out!`]: the justification of those unsafe
//! calls is written once, in the macro, and rests on the `# Safety` section every `extern "C"`
//! function has.
//!
//! Every opaque handle is a `Box`-owned shell `{ magic, borrowed, inner }`. Destroying a handle
//! drops `inner` and writes a dead sentinel into `magic`. Release builds then free the shell;
//! debug builds keep it (a deliberate, documented leak of a few bytes; the `free-destroyed-shells`
//! feature turns it off for fuzzing) so a later use or a
//! second destroy through a stale pointer reliably reports `HURRAY_ERR_USE_AFTER_DESTROY`
//! (docs/spec/c-abi.md §Debug sentinels). Handles handed out as borrows (a tensor's descriptor and
//! buffer list, a list's buffers) are marked `borrowed` and refuse to be destroyed.

use crate::panic::{FfiError, FfiResult};
use crate::status::*;

pub(crate) const DEAD: u64 = 0xDEAD_DEAD_DEAD_DEAD;

/// Whether destroying a handle frees its shell: always in release builds; in debug builds only
/// with the `free-destroyed-shells` feature (fuzzing under LeakSanitizer, native/fuzz).
const FREE_SHELLS: bool = cfg!(any(not(debug_assertions), feature = "free-destroyed-shells"));

/// An opaque handle type.
pub(crate) trait Handle: Sized {
    type Inner;
    const MAGIC: u64;
    const NAME: &'static str;
    fn shell(&self) -> &Shell<Self::Inner>;
    fn shell_mut(&mut self) -> &mut Shell<Self::Inner>;
    fn from_shell(s: Shell<Self::Inner>) -> Self;
}

/// The common body of every handle. `repr(C)` puts `magic` first, at the same offset in every
/// handle type (each handle struct holds only its shell), so a type check of a pointer to a
/// live handle of another type reads that handle's own initialised tag, never other bytes.
#[repr(C)]
pub struct Shell<I> {
    magic: u64,
    borrowed: bool,
    pub(crate) inner: Option<I>,
}

impl<I> Shell<I> {
    pub(crate) fn new(magic: u64, inner: I, borrowed: bool) -> Self {
        Shell { magic, borrowed, inner: Some(inner) }
    }
}

/// Implements [`Handle`] for a struct `{ shell: Shell<Inner> }`. The struct itself is written
/// out at its definition site so cbindgen (which does not expand macros) emits it as opaque.
macro_rules! opaque_handle {
    ($name:ident, $inner:ty, $magic:expr) => {
        impl crate::handle::Handle for $name {
            type Inner = $inner;
            const MAGIC: u64 = $magic;
            const NAME: &'static str = stringify!($name);
            fn shell(&self) -> &crate::handle::Shell<$inner> {
                &self.shell
            }
            fn shell_mut(&mut self) -> &mut crate::handle::Shell<$inner> {
                &mut self.shell
            }
            fn from_shell(s: crate::handle::Shell<$inner>) -> Self {
                $name { shell: s }
            }
        }
    };
}
pub(crate) use opaque_handle;

/// `handle_ref!(p)`: the contents of the handle argument `p`, borrowed, as
/// [`inner_ref`]`(p, "p")` (errors name the argument). The one place that justifies the
/// conversion: every function that uses it takes `p` from its caller under a `# Safety` contract
/// saying `p` is NULL or a handle this library returned, and `inner_ref` turns NULL and
/// destroyed handles into errors.
macro_rules! handle_ref {
    ($p:ident) => {{
        // SAFETY: the enclosing function's `# Safety` contract: `$p` is NULL or a handle from this
        // library; inner_ref rejects NULL and dead handles.
        unsafe { $crate::handle::inner_ref($p, stringify!($p)) }
    }};
}
pub(crate) use handle_ref;

/// `handle_mut!(p)`: as [`handle_ref!`], mutably ([`inner_mut`]); the contract also says one
/// thread at a time uses the handle, so no other reference to it is live.
macro_rules! handle_mut {
    ($p:ident) => {{
        // SAFETY: the enclosing function's `# Safety` contract: `$p` is NULL or a handle from this
        // library, used by one thread at a time; inner_mut rejects NULL and dead handles.
        unsafe { $crate::handle::inner_mut($p, stringify!($p)) }
    }};
}
pub(crate) use handle_mut;

/// `put_out!(out, value)`: writes `value` through the out-pointer argument `out`, as
/// [`put`]`(out, "out", value)`, under the enclosing function's `# Safety` contract that `out`
/// is NULL or valid for one write (`put` rejects NULL).
macro_rules! put_out {
    ($p:ident, $v:expr) => {{
        // SAFETY: the enclosing function's `# Safety` contract: `$p` is NULL or valid for one
        // write; put rejects NULL.
        unsafe { $crate::handle::put($p, stringify!($p), $v) }
    }};
}
pub(crate) use put_out;

/// Makes an owned handle.
pub(crate) fn new_owned<T: Handle>(inner: T::Inner) -> T {
    T::from_shell(Shell::new(T::MAGIC, inner, false))
}

/// Makes a borrowed handle (embedded in its owner; cannot be destroyed on its own).
pub(crate) fn new_borrowed<T: Handle>(inner: T::Inner) -> T {
    T::from_shell(Shell::new(T::MAGIC, inner, true))
}

fn check<T: Handle>(h: &T, arg: &str) -> FfiResult<()> {
    let s = h.shell();
    if s.magic != T::MAGIC || s.inner.is_none() {
        return Err(FfiError::new(
            HURRAY_ERR_USE_AFTER_DESTROY,
            format!("{arg} is not a live {} (destroyed, or not a handle of that type)", T::NAME),
        ));
    }
    Ok(())
}

/// Borrows a handle's contents. NULL → `HURRAY_ERR_NULL_POINTER`; dead → `USE_AFTER_DESTROY`.
///
/// # Safety
/// `p` is NULL or a pointer obtained from this library for a handle of type `T`.
pub(crate) unsafe fn inner_ref<'a, T: Handle + 'a>(p: *const T, arg: &str) -> FfiResult<&'a T::Inner> {
    crate::panic::non_null(p, arg)?;
    // SAFETY: per the contract, p points at a T shell (kept alive in debug builds).
    let h = unsafe { &*p };
    check(h, arg)?;
    Ok(h.shell().inner.as_ref().expect("checked"))
}

/// Mutably borrows a handle's contents (see [`inner_ref`]).
///
/// # Safety
/// As for [`inner_ref`], and no other reference to the handle is live (one thread at a time).
pub(crate) unsafe fn inner_mut<'a, T: Handle + 'a>(p: *mut T, arg: &str) -> FfiResult<&'a mut T::Inner> {
    crate::panic::non_null(p, arg)?;
    // SAFETY: as above.
    let h = unsafe { &mut *p };
    check(h, arg)?;
    Ok(h.shell_mut().inner.as_mut().expect("checked"))
}

/// Writes a new owned handle to `*out`.
///
/// # Safety
/// `out` is valid for one pointer write (checked non-NULL by the caller).
pub(crate) unsafe fn emit<T: Handle>(out: *mut *mut T, inner: T::Inner) {
    let p = Box::into_raw(Box::new(new_owned::<T>(inner)));
    // SAFETY: out is valid for writes.
    unsafe { *out = p };
}

/// Destroys an owned handle: NULL is a no-op; dead → `USE_AFTER_DESTROY`; borrowed →
/// `INVALID_ARGUMENT`. The contents are dropped before the shell is freed (release) or kept
/// dead (debug).
///
/// # Safety
/// `p` is NULL or a pointer obtained from this library for a handle of type `T`.
pub(crate) unsafe fn destroy<T: Handle>(p: *mut T, arg: &str) -> FfiResult<()> {
    if p.is_null() {
        return Ok(());
    }
    // SAFETY: per the contract.
    let h = unsafe { &mut *p };
    check(h, arg)?;
    if h.shell().borrowed {
        return Err(FfiError::new(
            HURRAY_ERR_INVALID_ARGUMENT,
            format!("{arg} is a borrowed {}: destroy its owner instead", T::NAME),
        ));
    }
    let inner = h.shell_mut().inner.take();
    h.shell_mut().magic = DEAD;
    drop(inner);
    if FREE_SHELLS {
        // SAFETY: p came from Box::into_raw in `emit` and is not borrowed.
        drop(unsafe { Box::from_raw(p) });
    }
    Ok(())
}

/// Destroys through a pointer to the caller's handle variable and writes NULL through it, so
/// a repeated destroy of the same variable is a no-op (docs/spec/c-abi.md §Handles and
/// ownership).
///
/// # Safety
/// `pp` is NULL or valid for a read and a write; `*pp` as for [`destroy`].
pub(crate) unsafe fn destroy_pp<T: Handle>(pp: *mut *mut T, arg: &str) -> FfiResult<()> {
    if pp.is_null() {
        return Ok(());
    }
    // SAFETY: pp valid per contract.
    let p = unsafe { *pp };
    // SAFETY: `*pp` is NULL or a handle of type T (this function's contract).
    unsafe { destroy(p, arg)? };
    // SAFETY: `pp` is non-NULL (checked) and valid for a write (this function's contract).
    unsafe { *pp = std::ptr::null_mut() };
    Ok(())
}

/// Writes a value through a required out-pointer.
///
/// # Safety
/// `out` NULL or valid for one write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, arg: &str, v: T) -> FfiResult<()> {
    crate::panic::non_null(out, arg)?;
    // SAFETY: non-null and valid per contract.
    unsafe { out.write(v) };
    Ok(())
}

/// Retires a handle held inside its owner (a tensor's descriptor, a list's buffer): drops its
/// contents and kills it exactly like [`destroy`], ignoring the borrowed mark.
pub(crate) fn retire<T: Handle>(b: Box<T>) {
    let p = Box::into_raw(b);
    // SAFETY: p is a live, uniquely owned Box allocation.
    let h = unsafe { &mut *p };
    let inner = h.shell_mut().inner.take();
    h.shell_mut().magic = DEAD;
    drop(inner);
    if FREE_SHELLS {
        // SAFETY: from Box::into_raw above.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Marks an owned handle as borrowed (it now belongs to a container).
pub(crate) fn mark_borrowed<T: Handle>(h: &mut T) {
    h.shell_mut().borrowed = true;
}

/// Whether a live handle is borrowed.
pub(crate) fn is_borrowed<T: Handle>(h: &T) -> bool {
    h.shell().borrowed
}

/// Checks a handle pointer is live without borrowing its contents.
///
/// # Safety
/// As for [`inner_ref`].
pub(crate) unsafe fn live<'a, T: Handle + 'a>(p: *mut T, arg: &str) -> FfiResult<&'a mut T> {
    crate::panic::non_null(p, arg)?;
    // SAFETY: per contract.
    let h = unsafe { &mut *p };
    check(h, arg)?;
    Ok(h)
}
