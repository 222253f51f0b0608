//! The one rule for tensor names (docs/spec/descriptor.md §Names), shared by the descriptor
//! codec, the container, the C ABI and, through it, every Java reader and writer of foreign
//! formats.
//!
//! A **tensor name** is at most [`MAX_NAME_BYTES`] bytes of UTF-8 with no NUL (the C ABI hands
//! names out NUL-terminated, so a NUL would silently cut one short). Inside Hurray a name is an
//! opaque key: `/`, `.` and `..` mean nothing. A name becomes a path only when a tool writes it
//! somewhere that interprets paths (an npz member, a file next to a manifest); there it must be a
//! [portable relative path](check_path_name), and a name that is not one is refused, never
//! written verbatim.

use crate::error::{bail, Result};
use crate::MAX_NAME_BYTES;

/// Checks a tensor name: at most [`MAX_NAME_BYTES`] UTF-8 bytes, no NUL. Empty is allowed here
/// (a container additionally requires a non-empty name).
///
/// Errors: `LimitExceeded` (too long), `InvalidArgument` (NUL, with its byte offset).
pub fn check_name(name: &str) -> Result<()> {
    if name.len() > MAX_NAME_BYTES {
        bail!(LimitExceeded, "name of {} bytes exceeds {MAX_NAME_BYTES}", name.len());
    }
    if let Some(at) = name.bytes().position(|b| b == 0) {
        bail!(InvalidArgument, "name contains a NUL byte (at byte {at})");
    }
    Ok(())
}

/// Checks that a tensor name can be used verbatim as a relative path inside an archive or a
/// folder on any common system: a valid [name](check_name), non-empty, `/`-separated segments
/// none of which is empty, `.` or `..`, and no `\`, `:`, control character (U+0000–U+001F,
/// U+007F) or leading `/`. So `layer.0/weight` passes; `../x`, `/etc/x`, `a//b`, `a/./b`,
/// `C:x` and `a\b` do not.
///
/// Errors: those of [`check_name`]; `InvalidArgument` naming the offending part.
pub fn check_path_name(name: &str) -> Result<()> {
    check_name(name)?;
    if name.is_empty() {
        bail!(InvalidArgument, "an empty name is not a path");
    }
    if let Some(c) = name.chars().find(|&c| c == '\\' || c == ':' || c.is_ascii_control()) {
        bail!(InvalidArgument, "name {name:?} contains {c:?}, which is not portable in a path");
    }
    if name.starts_with('/') {
        bail!(InvalidArgument, "name {name:?} is an absolute path");
    }
    for seg in name.split('/') {
        match seg {
            "" => bail!(InvalidArgument, "name {name:?} has an empty path segment"),
            "." | ".." => bail!(InvalidArgument, "name {name:?} has a {seg:?} path segment"),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn names() {
        for ok in ["", "w", "layer.0/weight", "ünï/cödé", "..x", "x..", "a.b/c"] {
            check_name(ok).unwrap();
        }
        assert_eq!(check_name("a\0b").unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(check_name(&"x".repeat(MAX_NAME_BYTES + 1)).unwrap_err().kind(), ErrorKind::LimitExceeded);
        check_name(&"x".repeat(MAX_NAME_BYTES)).unwrap();
    }

    #[test]
    fn path_names() {
        for ok in ["w", "layer.0/weight", "ünï/cödé", "..x", "x..", "a.b/c", "a b"] {
            check_path_name(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        }
        for bad in
            ["", "../x", "x/..", "a/../b", "./x", "/etc/x", "a//b", "a/", "C:x", "a\\b", "a\nb", "a\u{7f}", "a\0"]
        {
            assert_eq!(check_path_name(bad).unwrap_err().kind(), ErrorKind::InvalidArgument, "{bad:?}");
        }
    }
}
