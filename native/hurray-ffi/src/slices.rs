//! Borrowing caller arrays as Rust slices, with the checks `std::slice::from_raw_parts` leaves
//! to the caller: a length whose byte size exceeds `isize::MAX` is undefined behaviour there
//! (and a non-unwinding abort in debug builds), so it is refused here with
//! `HURRAY_ERR_INVALID_ARGUMENT` before any slice is built.

use crate::panic::{non_null, FfiError, FfiResult};
use crate::status::HURRAY_ERR_INVALID_ARGUMENT;

/// `count` elements at `p` as a slice; NULL is allowed only when `count` is 0. `name` is the
/// argument's name for the error message.
///
/// # Safety
/// Unless `count` is 0, `p` must be valid for reads of `count` elements for `'a`.
pub(crate) unsafe fn slice_arg<'a, T>(p: *const T, count: usize, name: &str) -> FfiResult<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    non_null(p, name)?;
    let fits = count.checked_mul(size_of::<T>().max(1)).is_some_and(|b| b <= isize::MAX as usize);
    if !fits {
        return Err(FfiError::new(
            HURRAY_ERR_INVALID_ARGUMENT,
            format!("{name}: {count} elements do not fit the address space"),
        ));
    }
    // SAFETY: non-null, the byte length fits isize, and the caller guarantees validity.
    Ok(unsafe { std::slice::from_raw_parts(p, count) })
}

/// [`slice_arg`] for a caller's writable array: `count` elements at `p` (NULL allowed only
/// when `count` is 0), bounded to the address space.
///
/// # Safety
/// When `count > 0`, `p` valid for `count` writes and not aliased for `'a`.
pub(crate) unsafe fn slice_mut_arg<'a, T>(p: *mut T, count: usize, name: &str) -> FfiResult<&'a mut [T]> {
    // SAFETY: the same pointer and count, checked (non-NULL, in the address space) by slice_arg.
    let checked = unsafe { slice_arg(p.cast_const(), count, name)? };
    if checked.is_empty() {
        return Ok(&mut []);
    }
    // SAFETY: `p` was checked non-NULL and `count` in range above; the caller grants write access
    // for `count` elements, unaliased (# Safety). The slice is made from the caller's `*mut`,
    // not from the shared slice.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, count) })
}
