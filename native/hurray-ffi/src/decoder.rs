//! Stream decoders: the reader without a transport (docs/spec/c-abi.md §Decoders and
//! encoders). The caller pushes bytes in where the decoder says and gets each tensor, with its
//! descriptor fields and buffer pointers, from one call.

use std::ffi::c_void;

use hurray_core::{Decoded, StreamDecoder};

use crate::buffer::HurrayBufferSpec;
use crate::descriptor::{fields_of, HurrayDescriptorFields};
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::reader::HurrayReaderOptions;
use crate::status::*;
use crate::tensor::{HurrayTensor, TensorInner};

/// Payload bytes from which a tensor is the last of its batch (`hurray_decoder_next_batch`).
const BATCH_STOP_BYTES: u64 = 64 * 1024;

/// `hurray_decoder_next` flag: the input ended (after the `filled` bytes, if any). The next
/// result is the end marker if the stream was complete, else `HURRAY_ERR_TRUNCATED`.
pub const HURRAY_DECODE_END_OF_INPUT: u32 = 1;

/// One buffer of a decoded tensor: its data pointer (owned by the tensor) and its spec.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayDecodedBuffer {
    /// First byte of the buffer (aligned to `spec.alignment`); NULL never (an empty buffer
    /// still has an aligned address). Valid until the tensor is destroyed.
    pub data: *mut c_void,
    /// Size, alignment, device tag and sync mode.
    pub spec: HurrayBufferSpec,
}

/// One metadata entry of a decoded tensor, borrowed from the tensor's descriptor.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayMetadataView {
    /// Key: `key_len` bytes of UTF-8 (no NUL).
    pub key: *const u8,
    /// Length of `key` in bytes.
    pub key_len: usize,
    /// Value: `value_len` opaque bytes (NULL when empty).
    pub value: *const u8,
    /// Length of `value` in bytes.
    pub value_len: usize,
}

/// What `hurray_decoder_next` produced. Which fields are set depends on the returned status.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayDecodeResult {
    /// `HURRAY_OK`: the new tensor, owned by the caller (destroy it with
    /// `hurray_tensor_destroy`); otherwise NULL.
    pub tensor: *mut HurrayTensor,
    /// `HURRAY_NEED_INPUT`: where to write the next input bytes (at most `input_len`), owned
    /// by the decoder; valid until the next call on the decoder. Otherwise NULL.
    pub input: *mut u8,
    /// `HURRAY_NEED_INPUT`: room at `input` in bytes (≥ 1). Otherwise 0.
    pub input_len: usize,
    /// `HURRAY_OK`: the tensor's descriptor fields, as `hurray_descriptor_fields` gives them;
    /// pointers borrow from the tensor (valid until it is destroyed). Otherwise zeroed.
    pub fields: HurrayDescriptorFields,
    /// `HURRAY_OK`: `fields.buffer_count` entries, in buffer-table order. Owned by the
    /// decoder: valid until the next call on the decoder (copy what you keep); the data
    /// pointers inside stay valid until the tensor is destroyed.
    pub buffers: *const HurrayDecodedBuffer,
    /// `HURRAY_OK`: `fields.metadata_count` entries, in order. Owned by the decoder like
    /// `buffers`; the key and value bytes stay valid until the tensor is destroyed.
    pub metadata: *const HurrayMetadataView,
}

pub(crate) struct DecoderInner {
    decoder: StreamDecoder,
    header_views: Vec<HurrayMetadataView>,
    items: hurray_core::ItemReader,
    buffers: Vec<HurrayDecodedBuffer>,
    metadata: Vec<HurrayMetadataView>,
    /// The descriptor of the last tensor emitted in a `HurrayDecodeResult`, for
    /// `HURRAY_FIELDS_SAME_EXCEPT_NAME`.
    previous: Option<hurray_core::TensorDescriptor>,
    /// The encoding (and name) bytes of the last tensor emitted, shared with the next one when
    /// its encoding is the same.
    last_encoding: Option<std::sync::Arc<[u8]>>,
    /// The buffer and metadata views of the last `hurray_decoder_next_batch` results, kept
    /// apart from `buffers`/`metadata` so that other calls leave them valid.
    batch_buffers: Vec<HurrayDecodedBuffer>,
    batch_metadata: Vec<HurrayMetadataView>,
}

/// Decodes a stream from bytes the caller pushes in, with no transport and no callbacks.
/// Owned; one thread at a time (any thread, one after another).
pub struct HurrayDecoder {
    pub(crate) shell: crate::handle::Shell<DecoderInner>,
}
opaque_handle!(HurrayDecoder, DecoderInner, 0x4855_5252_4443_3031);

/// Makes a decoder with the given limits (`options` NULL: the defaults of
/// `hurray_reader_options_init`) and a buffer pool of `buffer_pool_bytes` (0: none; see
/// `hurray_reader_set_buffer_pool_bytes`). Writes the owned decoder to `*out_decoder`
/// (destroy it with `hurray_decoder_destroy`).
///
/// Added in ABI 4 (additive). Errors: `NULL_POINTER`, `INVALID_ARGUMENT` (options).
///
/// # Safety
/// `options` NULL or valid for reads; `out_decoder` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_new(
    options: *const HurrayReaderOptions,
    buffer_pool_bytes: u64,
    out_decoder: *mut *mut HurrayDecoder,
) -> HurrayStatus {
    guard("hurray_decoder_new", || {
        crate::os::pages::install();
        non_null(out_decoder, "out_decoder")?;
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayReaderOptions::defaults() } else { unsafe { *options } };
        let mut core = opts.to_core()?;
        core.pool_bytes = buffer_pool_bytes;
        let decoder = StreamDecoder::new(core)?;
        // SAFETY: `out_decoder` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe {
            handle::emit(
                out_decoder,
                DecoderInner {
                    decoder,
                    header_views: Vec::new(),
                    items: hurray_core::ItemReader::new(),
                    buffers: Vec::new(),
                    metadata: Vec::new(),
                    previous: None,
                    last_encoding: None,
                    batch_buffers: Vec::new(),
                    batch_metadata: Vec::new(),
                },
            )
        };
        Ok(HURRAY_OK)
    })
}

/// Advances the decoder: takes the `filled` bytes the caller wrote at the last `input` (0 if
/// none), notes the end of input if `flags` has `HURRAY_DECODE_END_OF_INPUT`, and decodes as
/// far as the bytes allow. One call per tensor when input is buffered; a tensor's payload
/// larger than 64 KiB is asked for in place (its `input` points into the tensor's own
/// allocation), so no byte is copied twice.
///
/// Returns, filling `*out` (all other fields zero or NULL):
/// - `HURRAY_OK`: a tensor (`tensor`, `fields`, `buffers`, `metadata`);
/// - `HURRAY_NEED_INPUT` (positive): write up to `input_len` bytes at `input`, then call
///   again with their count as `filled` (or with `HURRAY_DECODE_END_OF_INPUT` when the source
///   ended). Blocking for those bytes happens in the caller, outside this library;
/// - `HURRAY_END_OF_STREAM`: the end marker was decoded (and on every call after).
///
/// Errors (sticky): `TRUNCATED` (input ended inside an item or before the end marker),
/// `CORRUPT`, `INVALID_MAGIC`, `VERSION_MISMATCH`, `UNSUPPORTED`, `LIMIT_EXCEEDED`, descriptor
/// validation errors, `OUT_OF_MEMORY`; `INVALID_ARGUMENT` (not sticky, nothing taken) when
/// `filled` exceeds the room last offered. `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive).
///
/// # Safety
/// `decoder` live and not used concurrently; `out` valid for one write; the `filled` bytes
/// were written at the last `input`.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_next(
    decoder: *mut HurrayDecoder,
    filled: usize,
    flags: u32,
    out: *mut HurrayDecodeResult,
) -> HurrayStatus {
    guard("hurray_decoder_next", || {
        non_null(out, "out")?;
        // SAFETY: `out` was checked non-NULL just above and is valid for one write (# Safety).
        unsafe { out.write(empty_result()) };
        let d = handle::handle_mut!(decoder)?;
        d.take_input(filled, flags)?;
        match d.decoder.poll()? {
            Decoded::End => Ok(HURRAY_END_OF_STREAM),
            // SAFETY: `out` was checked non-NULL at the top and is valid for one write (# Safety).
            Decoded::NeedInput => unsafe { d.offer_input(out) },
            Decoded::Tensor(t) => {
                // SAFETY: `out` was checked non-NULL at the top and is valid for one write (# Safety), as emit_tensor
                // requires.
                unsafe { emit_tensor(d, t, out)? };
                Ok(HURRAY_OK)
            }
        }
    })
}

/// Makes a decoder ready for a new stream from its first byte, as if just made with the same
/// options and pool cap: buffered input, a partly read tensor or composite, the stream
/// metadata and a failure (errors are otherwise sticky) are dropped. It keeps its read-ahead
/// allocation; its buffer pool starts empty. For callers that decode many short streams, such
/// as one stream per message: one decoder instead of one per message. Tensors and composites
/// already returned stay valid. Added in ABI 4 (additive).
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// # Safety
/// `decoder` live, not used concurrently.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_reset(decoder: *mut HurrayDecoder) -> HurrayStatus {
    guard("hurray_decoder_reset", || {
        let d = handle::handle_mut!(decoder)?;
        d.decoder.reset();
        d.items = hurray_core::ItemReader::new();
        d.header_views.clear();
        d.buffers.clear();
        d.metadata.clear();
        d.batch_buffers.clear();
        d.batch_metadata.clear();
        // `previous` stays: HURRAY_FIELDS_SAME_EXCEPT_NAME compares descriptors by content, so
        // the first tensor of the next stream is flagged against the last one returned before.
        Ok(HURRAY_OK)
    })
}

/// Writes to `*out_bytes` how many bytes the decoder holds that it took as input (`filled`) and
/// has not decoded yet: at most its 64 KiB read-ahead. After `HURRAY_END_OF_STREAM` these are the
/// bytes that followed the end marker in the input, which the decoder never decodes: a caller
/// whose input holds exactly one stream (one message) treats a count above 0 as trailing data.
/// 0 just after `hurray_decoder_new` and `hurray_decoder_reset`. Bytes written at an `input`
/// region but not yet reported as `filled` do not count. Reads nothing and changes nothing.
///
/// Added in ABI 4 (additive). Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// # Safety
/// `decoder` live, not used concurrently; `out_bytes` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_buffered(decoder: *const HurrayDecoder, out_bytes: *mut usize) -> HurrayStatus {
    guard("hurray_decoder_buffered", || {
        let d = handle::handle_ref!(decoder)?;
        handle::put_out!(out_bytes, d.decoder.buffered())?;
        Ok(HURRAY_OK)
    })
}

/// Replaces the decoder's reader limits with `options` (NULL: the defaults of
/// `hurray_reader_options_init`), as if it had been made with them by `hurray_decoder_new`:
/// `max_rank`, `max_descriptor_bytes`, `max_tensor_bytes` and the flags
/// (`HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS`) all apply to the next stream. The buffer pool
/// and its cap are not changed (`hurray_decoder_set_buffer_pool_bytes` does that). Allowed only
/// while the decoder has taken no input: just made, or just reset with `hurray_decoder_reset`,
/// and no call since has reported `filled` bytes or `HURRAY_DECODE_END_OF_INPUT` (a call that
/// only offered an input region does not count). So a caller keeping reset decoders for one
/// short stream per message can reuse one for a message that needs other limits.
///
/// Ownership: `options` is borrowed for the call (copied). On any error the decoder is left
/// exactly as it was, with its previous limits.
///
/// Errors: `NULL_POINTER` (`decoder`), `USE_AFTER_DESTROY`, `INVALID_ARGUMENT` for options that
/// `hurray_decoder_new` refuses (the same checks: `struct_size` too small,
/// unknown flags, a non-zero `reserved`, a limit above the format's maximum),
/// `INVALID_STATE` once the decoder has taken input.
///
/// Threads: like every decoder call, one thread at a time on a decoder.
///
/// Added in ABI 4 (additive).
///
/// # Safety
/// `decoder` live, not used concurrently; `options` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_set_options(
    decoder: *mut HurrayDecoder,
    options: *const HurrayReaderOptions,
) -> HurrayStatus {
    guard("hurray_decoder_set_options", || {
        let d = handle::handle_mut!(decoder)?;
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayReaderOptions::defaults() } else { unsafe { *options } };
        d.decoder.set_options(opts.to_core()?)?;
        Ok(HURRAY_OK)
    })
}

/// Sets the cap of the decoder's buffer pool in bytes (0 removes the pool), as
/// `hurray_reader_set_buffer_pool_bytes` does for a reader. Added in ABI 4 (additive).
///
/// # Safety
/// `decoder` live, not used concurrently.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_set_buffer_pool_bytes(
    decoder: *mut HurrayDecoder,
    max_bytes: u64,
) -> HurrayStatus {
    guard("hurray_decoder_set_buffer_pool_bytes", || {
        handle::handle_mut!(decoder)?.decoder.set_buffer_pool_bytes(max_bytes);
        Ok(HURRAY_OK)
    })
}

/// Destroys a decoder and writes NULL to `*decoder`; NULL or `*decoder == NULL` is a no-op.
/// Tensors already decoded stay valid. Added in ABI 4 (additive).
///
/// # Safety
/// `decoder` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_destroy(decoder: *mut *mut HurrayDecoder) -> HurrayStatus {
    guard("hurray_decoder_destroy", || {
        // SAFETY: `decoder` is NULL or valid for a read and a write; `*decoder` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(decoder, "decoder")? };
        Ok(HURRAY_OK)
    })
}

/// Fills `*out` with a decoded tensor: the owned handle, its fields, buffer views and metadata.
///
/// # Safety
/// `out` valid for one write.
unsafe fn emit_tensor(d: &mut DecoderInner, t: hurray_core::ReadTensor, out: *mut HurrayDecodeResult) -> FfiResult<()> {
    d.buffers.clear();
    d.metadata.clear();
    let (inner, r) = d.result_of(t, Views::Single)?;
    let r = HurrayDecodeResult { buffers: d.buffers.as_ptr(), metadata: d.metadata.as_ptr(), ..r };
    // SAFETY: `out` is valid for one write (this function's # Safety); `(*out).tensor` is then an initialised field of
    // it.
    unsafe {
        out.write(r);
        // The tensor's heap parts do not move when its handle is boxed, so the borrowed
        // pointers above stay valid.
        handle::emit(std::ptr::addr_of_mut!((*out).tensor), inner);
    }
    Ok(())
}

/// Which view vectors a result's buffer and metadata entries are appended to.
#[derive(Clone, Copy)]
enum Views {
    Single,
    Batch,
}

impl DecoderInner {
    /// The handle and result (buffer and metadata pointers unset; the entries appended to the
    /// `views` vectors) of a decoded tensor, with `HURRAY_FIELDS_SAME_EXCEPT_NAME` set when only
    /// its name differs from the previous result's.
    fn result_of(&mut self, t: hurray_core::ReadTensor, views: Views) -> FfiResult<(TensorInner, HurrayDecodeResult)> {
        let mut inner = TensorInner::from_read_shared(t, self.decoder.last_descriptor_bytes(), &mut self.last_encoding);
        let desc =
            inner.desc_inner().ok_or_else(|| FfiError::new(HURRAY_ERR_INTERNAL_PANIC, "tensor without descriptor"))?;
        let mut fields = fields_of(desc);
        if self.previous.as_ref().is_some_and(|p| p.eq_except_name(&desc.desc)) {
            fields.flags |= crate::descriptor::HURRAY_FIELDS_SAME_EXCEPT_NAME;
        } else {
            self.previous = Some(desc.desc.clone());
        }
        let (buffers, metadata) = match views {
            Views::Single => (&mut self.buffers, &mut self.metadata),
            Views::Batch => (&mut self.batch_buffers, &mut self.batch_metadata),
        };
        crate::stream_metadata::append_views(desc.desc.metadata(), metadata);
        inner.buffer_views(buffers);
        Ok((inner, HurrayDecodeResult { fields, ..empty_result() }))
    }
}

/// Decodes every tensor the buffered input completes, up to `capacity` of them, in one call:
/// `hurray_decoder_next` for a caller that takes tensors faster than one call each. Takes
/// `filled` and `flags` as `hurray_decoder_next` does, then fills `results[0..*out_count]`,
/// each as `hurray_decoder_next` fills its result (the tensor owned by the caller; `buffers`
/// and `metadata` owned by the decoder and valid until the next `hurray_decoder_next_batch`
/// or `hurray_decoder_reset`, which other calls on the decoder leave alone). A tensor of a
/// composite (its head or a member, as `hurray_decoder_next` returns them) comes alone, in a
/// result of its own, and a batch stops before one: so `hurray_decoder_next_item` may follow any
/// batch that did not return one. A tensor of 64 KiB of payload or more is the last of its
/// batch, so that its memory can go back to the buffer pool before the next one is taken.
///
/// Returns:
/// - `HURRAY_OK` with `*out_count` ≥ 1. When the decoder then needs input before the next
///   tensor, `results[0].input` and `input_len` say where it goes, as with
///   `HURRAY_NEED_INPUT`: the caller may fill it and pass the count as `filled` next time.
///   Otherwise they are NULL and 0 (more tensors are buffered; call again with `filled` 0).
///   An end marker or error met after the first tensor is returned by the next call;
/// - `HURRAY_NEED_INPUT`, `HURRAY_END_OF_STREAM` and the errors of `hurray_decoder_next`,
///   with `*out_count` 0.
///
/// Added in ABI 4 (additive).
///
/// # Safety
/// `decoder` live and not used concurrently; `results` valid for `capacity` writes (≥ 1);
/// `out_count` valid for one write; the `filled` bytes were written at the last `input`.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_next_batch(
    decoder: *mut HurrayDecoder,
    filled: usize,
    flags: u32,
    results: *mut HurrayDecodeResult,
    capacity: usize,
    out_count: *mut usize,
) -> HurrayStatus {
    guard("hurray_decoder_next_batch", || {
        non_null(out_count, "out_count")?;
        non_null(results, "results")?;
        // SAFETY: `out_count` was checked non-NULL and is valid for one write (# Safety).
        unsafe { *out_count = 0 };
        if capacity == 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, "capacity is 0"));
        }
        // SAFETY: `results` was checked non-NULL and is valid for `capacity` ≥ 1 writes (# Safety).
        unsafe { results.write(empty_result()) };
        let d = handle::handle_mut!(decoder)?;
        d.take_input(filled, flags)?;
        d.batch_buffers.clear();
        d.batch_metadata.clear();
        // Each result's buffer and metadata pointers are set once the view vectors stop growing.
        let mut n = 0;
        let mut offer = false;
        while n < capacity {
            // Composites are left to the assembled view: a tensor of one comes alone.
            let polled = match d.decoder.poll_standalone() {
                Ok(Some(p)) => p,
                Ok(None) if n == 0 => {
                    let p = d.decoder.poll()?;
                    if let Decoded::Tensor(t) = p {
                        let (inner, r) = d.result_of(t, Views::Batch)?;
                        // SAFETY: `results` is valid for one write (# Safety); the tensor field is then initialised.
                        unsafe {
                            results.write(r);
                            handle::emit(std::ptr::addr_of_mut!((*results).tensor), inner);
                        }
                        n = 1;
                        break;
                    }
                    p
                }
                Ok(None) => break,
                Err(e) if n == 0 => return Err(e.into()),
                // A failure after the first tensor is sticky: the next call reports it.
                Err(_) => break,
            };
            match polled {
                Decoded::End if n == 0 => return Ok(HURRAY_END_OF_STREAM),
                Decoded::End => break,
                // SAFETY: `results` is valid for one write (# Safety).
                Decoded::NeedInput if n == 0 => return unsafe { d.offer_input(results) },
                Decoded::NeedInput => {
                    offer = true;
                    break;
                }
                Decoded::Tensor(t) => {
                    // A large tensor ends the batch: its memory may go back to the pool before
                    // the next tensor's is taken.
                    let large = t.descriptor.total_buffer_bytes() >= BATCH_STOP_BYTES;
                    let (inner, r) = d.result_of(t, Views::Batch)?;
                    // SAFETY: `n < capacity` slots of `results` are writable (# Safety); the tensor field is
                    // then initialised.
                    unsafe {
                        results.add(n).write(r);
                        handle::emit(std::ptr::addr_of_mut!((*results.add(n)).tensor), inner);
                    }
                    n += 1;
                    if large {
                        break;
                    }
                }
            }
        }
        // Result `i`'s entries follow those of the results before it, in order.
        let (mut b, mut m) = (0, 0);
        for i in 0..n {
            // SAFETY: result `i < n` was written above; its entries lie within the vectors (appended in result order),
            // which no longer grow.
            unsafe {
                let r = results.add(i);
                (*r).buffers = d.batch_buffers.as_ptr().add(b);
                (*r).metadata = d.batch_metadata.as_ptr().add(m);
                b += (*r).fields.buffer_count;
                m += (*r).fields.metadata_count;
            }
        }
        debug_assert_eq!((b, m), (d.batch_buffers.len(), d.batch_metadata.len()));
        if offer {
            let dst = d.decoder.input_buffer()?;
            // SAFETY: result 0 was written above.
            unsafe {
                (*results).input = dst.as_mut_ptr().cast();
                (*results).input_len = dst.len();
            }
        }
        // SAFETY: `out_count` was checked non-NULL above.
        unsafe { *out_count = n };
        Ok(HURRAY_OK)
    })
}

/// The input region that follows the one the decoder's last call offered, when that one is
/// the rest of a payload in place (`input_len` ≥ 64 KiB): the payload's checksum and, after a
/// tensor's last payload, the next frame header and a descriptor as long as the last one
/// (docs/spec/stream.md §Decoding without a transport). A caller may fill the offered `input`
/// and then this region with one scatter read (`readv`, `recvmsg` with two buffers) and pass
/// their total as the next call's `filled`: bytes may go here only once `input` is full. So a
/// stream of large tensors takes one read per tensor. `*out_input`/`*out_len` are NULL and 0
/// when there is no such region (the last call offered the read-ahead, or a payload region
/// that ends before its payload does, or none). Call it after the call that offered `input`
/// and before the next one; the region is valid until that next call. Errors:
/// `NULL_POINTER`; `OUT_OF_MEMORY`. Added in ABI 4 (additive).
///
/// # Safety
/// `decoder` live and not used concurrently; `out_input` and `out_len` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_input_after(
    decoder: *mut HurrayDecoder,
    out_input: *mut *mut u8,
    out_len: *mut usize,
) -> HurrayStatus {
    guard("hurray_decoder_input_after", || {
        non_null(out_input, "out_input")?;
        non_null(out_len, "out_len")?;
        // SAFETY: both were checked non-NULL and are valid for one write (# Safety).
        unsafe {
            *out_input = std::ptr::null_mut();
            *out_len = 0;
        }
        let d = handle::handle_mut!(decoder)?;
        let after = d.decoder.input_after()?;
        if !after.is_empty() {
            // SAFETY: as above.
            unsafe {
                *out_input = after.as_mut_ptr().cast();
                *out_len = after.len();
            }
        }
        Ok(HURRAY_OK)
    })
}

/// As `hurray_decoder_next`, in the assembled view (docs/spec/stream.md §Composite tensors): a
/// plain tensor comes back in `*out` as there; a composite is read to its last member and
/// comes back whole in `*out_composite` (`*out` then holds no tensor; destroy the composite
/// with `hurray_composite_destroy`). `HURRAY_NEED_INPUT` may come in the middle of a
/// composite: the part read so far is kept. Do not mix with `hurray_decoder_next` while a
/// composite is partly read. Errors as `hurray_decoder_next`, plus `TRUNCATED` (the stream
/// ends inside a composite), `CORRUPT` (a member count that disagrees with the members that
/// follow) and `LIMIT_EXCEEDED` (nesting or size). Added in ABI 4 (additive).
///
/// # Safety
/// As `hurray_decoder_next`; `out_composite` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_decoder_next_item(
    decoder: *mut HurrayDecoder,
    filled: usize,
    flags: u32,
    out: *mut HurrayDecodeResult,
    out_composite: *mut *mut crate::composite::HurrayComposite,
) -> HurrayStatus {
    guard("hurray_decoder_next_item", || {
        non_null(out, "out")?;
        non_null(out_composite, "out_composite")?;
        // SAFETY: `out` and `out_composite` were checked non-NULL just above and are valid for one write each
        // (# Safety).
        unsafe {
            out.write(empty_result());
            *out_composite = std::ptr::null_mut();
        }
        let d = handle::handle_mut!(decoder)?;
        // A failed item is sticky, like the decoder's own errors.
        if let Some(e) = d.items.failure() {
            return Err(e.clone().into());
        }
        d.take_input(filled, flags)?;
        loop {
            match d.decoder.poll()? {
                Decoded::End => {
                    d.items.end_of_stream()?;
                    return Ok(HURRAY_END_OF_STREAM);
                }
                // SAFETY: `out` was checked non-NULL at the top and is valid for one write (# Safety).
                Decoded::NeedInput => return unsafe { d.offer_input(out) },
                Decoded::Tensor(t) => match d.items.push_tensor(t)? {
                    None => continue,
                    Some(hurray_core::Item::Tensor(t)) => {
                        // SAFETY: `out` was checked non-NULL at the top and is valid for one write (# Safety), as
                        // emit_tensor requires.
                        unsafe { emit_tensor(d, t, out)? };
                        return Ok(HURRAY_OK);
                    }
                    Some(hurray_core::Item::Composite(c)) => {
                        // SAFETY: `out_composite` was checked non-NULL at the top and is valid for one pointer write
                        // (# Safety).
                        unsafe { crate::composite::emit_composite(out_composite, c)? };
                        return Ok(HURRAY_OK);
                    }
                },
            }
        }
    })
}

impl DecoderInner {
    /// Checks the decode `flags`, commits the `filled` bytes written at the last offered input
    /// buffer, and notes the end of input when the flags say so. Shared by every decode entry point.
    fn take_input(&mut self, filled: usize, flags: u32) -> FfiResult<()> {
        if flags & !HURRAY_DECODE_END_OF_INPUT != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("unknown decode flags {flags:#x}")));
        }
        if filled > 0 {
            self.decoder.commit(filled)?;
        }
        if flags & HURRAY_DECODE_END_OF_INPUT != 0 {
            self.decoder.commit(0)?;
        }
        Ok(())
    }

    /// Writes the decoder's input buffer to `out` and returns `HURRAY_NEED_INPUT`.
    ///
    /// # Safety
    /// `out` valid for one write.
    unsafe fn offer_input(&mut self, out: *mut HurrayDecodeResult) -> FfiResult<HurrayStatus> {
        let dst = self.decoder.input_buffer()?;
        if dst.is_empty() {
            return Err(FfiError::new(HURRAY_ERR_INTERNAL_PANIC, "the decoder needs input but offered no room"));
        }
        let r = HurrayDecodeResult { input: dst.as_mut_ptr().cast(), input_len: dst.len(), ..empty_result() };
        // SAFETY: caller contract.
        unsafe { out.write(r) };
        Ok(HURRAY_NEED_INPUT)
    }

    /// `hurray_decoder_next_header`'s body.
    ///
    /// # Safety
    /// `out` valid for one write.
    pub(crate) unsafe fn next_header(
        &mut self,
        filled: usize,
        flags: u32,
        out: *mut HurrayDecodeResult,
    ) -> FfiResult<HurrayStatus> {
        // SAFETY: caller contract.
        unsafe { out.write(empty_result()) };
        self.take_input(filled, flags)?;
        if !self.decoder.poll_header()? {
            // SAFETY: caller contract.
            return unsafe { self.offer_input(out) };
        }
        let md = self.decoder.metadata().unwrap_or(&[]);
        crate::stream_metadata::views_of(md, &mut self.header_views);
        let mut r = empty_result();
        r.fields.metadata_count = self.header_views.len();
        r.metadata = if self.header_views.is_empty() { std::ptr::null() } else { self.header_views.as_ptr() };
        // SAFETY: caller contract.
        unsafe { out.write(r) };
        Ok(HURRAY_OK)
    }
}

fn empty_result() -> HurrayDecodeResult {
    HurrayDecodeResult {
        tensor: std::ptr::null_mut(),
        input: std::ptr::null_mut(),
        input_len: 0,
        fields: zeroed_fields(),
        buffers: std::ptr::null(),
        metadata: std::ptr::null(),
    }
}

fn zeroed_fields() -> HurrayDescriptorFields {
    HurrayDescriptorFields {
        element_type: 0,
        layout: 0,
        version: 0,
        flags: 0,
        rank: 0,
        dims: std::ptr::null(),
        strides: std::ptr::null(),
        byte_offset: 0,
        element_count: 0,
        buffer_count: 0,
        metadata_count: 0,
        name: std::ptr::null(),
        name_len: 0,
        encoded: std::ptr::null(),
        encoded_len: 0,
        quantization: Default::default(),
    }
}
