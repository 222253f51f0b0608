//! Stream metadata in the C ABI (docs/spec/stream.md §Stream metadata): set on an encoder or
//! writer before the first item, read from a decoder or reader once the stream header was
//! decoded. Added in ABI 4 (additive).

use crate::decoder::{HurrayDecodeResult, HurrayDecoder, HurrayMetadataView};
use crate::encoder::HurrayEncoder;
use crate::handle;
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::reader::HurrayReader;
use crate::status::*;
use crate::writer::HurrayWriter;

/// Copies `count` caller entries into owned (key, value) pairs, checking lengths first.
///
/// # Safety
/// `entries` valid for `count` reads, each range valid for its length.
unsafe fn entries_of(entries: *const HurrayMetadataView, count: usize) -> FfiResult<Vec<(String, Vec<u8>)>> {
    if count > hurray_core::MAX_METADATA_ENTRIES {
        return Err(FfiError::new(
            HURRAY_ERR_LIMIT_EXCEEDED,
            format!("{count} metadata entries exceed {}", hurray_core::MAX_METADATA_ENTRIES),
        ));
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    non_null(entries, "entries")?;
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        // SAFETY: `entries` holds `count` entries (caller contract; count bounded above).
        let m = unsafe { *entries.add(i) };
        if m.key_len > hurray_core::MAX_METADATA_KEY_BYTES || m.value_len > hurray_core::MAX_METADATA_VALUE_BYTES {
            return Err(FfiError::new(
                HURRAY_ERR_LIMIT_EXCEEDED,
                format!("metadata entry {i} exceeds the key or value limit"),
            ));
        }
        if m.key_len > 0 {
            non_null(m.key, "entries[i].key")?;
        }
        if m.value_len > 0 {
            non_null(m.value, "entries[i].value")?;
        }
        // SAFETY: the lengths are bounded above and the pointers non-NULL when non-zero.
        let key = if m.key_len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(m.key, m.key_len) } };
        let value = if m.value_len == 0 {
            &[][..]
        } else {
            // SAFETY: as for the key.
            unsafe { std::slice::from_raw_parts(m.value, m.value_len) }
        };
        let key = std::str::from_utf8(key)
            .map_err(|_| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("metadata key {i} is not UTF-8")))?;
        out.push((key.to_string(), value.to_vec()));
    }
    Ok(out)
}

/// Views of owned entries, for handing out.
pub(crate) fn views_of(md: &[(String, Vec<u8>)], out: &mut Vec<HurrayMetadataView>) {
    out.clear();
    append_views(md, out);
}

/// [`views_of`] without clearing `out` first.
pub(crate) fn append_views(md: &[(String, Vec<u8>)], out: &mut Vec<HurrayMetadataView>) {
    for (k, v) in md {
        out.push(HurrayMetadataView {
            key: k.as_ptr(),
            key_len: k.len(),
            value: if v.is_empty() { std::ptr::null() } else { v.as_ptr() },
            value_len: v.len(),
        });
    }
}

/// Sets the stream's metadata: `count` (1..=256) entries with the descriptor metadata rules
/// (keys 1..=256 bytes of UTF-8 without NUL and unique, values up to 64 KiB). It is sent once,
/// right after the stream header, so call it before the first item. Errors: `INVALID_STATE`
/// (an item or the end marker was already staged), `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`,
/// `DUPLICATE_NAME`, `NULL_POINTER`. Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` live; `entries` valid for `count` reads, each range valid for its length.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_set_metadata(
    encoder: *mut HurrayEncoder,
    entries: *const HurrayMetadataView,
    count: usize,
) -> HurrayStatus {
    guard("hurray_encoder_set_metadata", || {
        let e = handle::handle_mut!(encoder)?;
        // SAFETY: forwarded caller contract.
        let md = unsafe { entries_of(entries, count)? };
        e.set_metadata(&md)?;
        Ok(HURRAY_OK)
    })
}

/// As `hurray_encoder_set_metadata`, for a callback writer (before its first write).
/// Added in ABI 4 (additive).
///
/// # Safety
/// `writer` live; `entries` as for `hurray_encoder_set_metadata`.
#[no_mangle]
pub unsafe extern "C" fn hurray_writer_set_metadata(
    writer: *mut HurrayWriter,
    entries: *const HurrayMetadataView,
    count: usize,
) -> HurrayStatus {
    guard("hurray_writer_set_metadata", || {
        let w = handle::handle_mut!(writer)?;
        // SAFETY: forwarded caller contract.
        let md = unsafe { entries_of(entries, count)? };
        w.set_metadata(&md)?;
        Ok(HURRAY_OK)
    })
}

/// Decodes the stream header and metadata frame, and no further (a decoder's first call, when
/// the metadata is wanted before any tensor). Returns `HURRAY_OK` with `out->metadata` and
/// `out->fields.metadata_count` set (0 entries when the stream has none; views owned by the
/// decoder, valid until it is destroyed), or `HURRAY_NEED_INPUT` as `hurray_decoder_next` does
/// (then call again with the count). Errors as `hurray_decoder_next`. Added in ABI 4 (additive).
///
/// # Safety
/// As `hurray_decoder_next`.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_next_header(
    decoder: *mut HurrayDecoder,
    filled: usize,
    flags: u32,
    out: *mut HurrayDecodeResult,
) -> HurrayStatus {
    guard("hurray_decoder_next_header", || {
        non_null(out, "out")?;
        let d = handle::handle_mut!(decoder)?;
        // SAFETY: `out` non-NULL and valid for one write (caller contract).
        unsafe { d.next_header(filled, flags, out) }
    })
}

/// The stream's metadata, reading the stream header first if needed (through the transport,
/// with its resumable `TRANSPORT` failures): `*out_entries` and `*out_count` (0 and NULL when
/// the stream has none); the views are owned by the reader and valid until it is destroyed.
/// Errors as `hurray_reader_next_tensor`. Added in ABI 4 (additive).
///
/// # Safety
/// `reader` live; `out_entries` and `out_count` valid for one write each.
#[no_mangle]
pub unsafe extern "C" fn hurray_reader_metadata(
    reader: *mut HurrayReader,
    out_entries: *mut *const HurrayMetadataView,
    out_count: *mut usize,
) -> HurrayStatus {
    guard("hurray_reader_metadata", || {
        non_null(out_entries, "out_entries")?;
        non_null(out_count, "out_count")?;
        let r = handle::handle_mut!(reader)?;
        // The decoder keeps the stream's metadata unchanged once the header is read, so views
        // into it stay valid for the reader's life (earlier views included).
        let md = r.stream.metadata()?;
        views_of(md, &mut r.metadata_views);
        // SAFETY: both out-pointers checked non-NULL above and valid for one write.
        unsafe {
            *out_entries = if r.metadata_views.is_empty() { std::ptr::null() } else { r.metadata_views.as_ptr() };
            *out_count = r.metadata_views.len();
        }
        Ok(HURRAY_OK)
    })
}
