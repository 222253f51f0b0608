//! Stream encoders: the writer without a transport (docs/spec/c-abi.md §Decoders and
//! encoders). The encoder stages items and hands out the bytes to send; the caller sends them
//! however it likes and reports what left.

use hurray_core::{OutSeg, StreamEncoder};

use crate::descriptor::HurrayDescriptor;
use crate::handle::{self, opaque_handle};
use crate::panic::{guard, non_null, FfiError, FfiResult};
use crate::status::*;
use crate::writer::{HurrayIoSlice, HurrayWriterOptions};

/// Most payloads one tensor can have (the format's buffer-table limit).
const MAX_PAYLOADS: usize = hurray_core::MAX_BUFFERS;

/// The encoder's pending output, as `hurray_encoder_encode` and `hurray_encoder_finish`
/// report it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurrayEncoderState {
    /// Bytes staged and not yet consumed.
    pub pending_bytes: u64,
    /// Pieces of pending output (`hurray_encoder_output` lists them).
    pub pending_pieces: u32,
    /// 1 while the pending output points into the last item's payloads: send it all and
    /// consume it before those payloads may change or be freed, and before the next item.
    pub borrows_payloads: u32,
}

pub(crate) struct EncoderInner {
    encoder: StreamEncoder,
    /// The last item's payload ranges, which `OutSeg::Borrowed` pieces index.
    borrowed: Vec<HurrayIoSlice>,
    /// The last descriptor `hurray_encoder_encode_batch` made from a spec.
    specs: crate::spec_cache::SpecCache,
}

impl EncoderInner {
    /// Stages a group of frames as one item (a composite); see `hurray_encoder_encode_composite`.
    pub(crate) fn encode_group(&mut self, items: &[hurray_core::encoder::GroupEntry<'_>]) -> hurray_core::Result<()> {
        self.encoder.encode_group(items)
    }

    /// Sets the stream metadata (before the first item).
    pub(crate) fn set_metadata(&mut self, md: &[(String, Vec<u8>)]) -> hurray_core::Result<()> {
        self.encoder.set_metadata(md)
    }

    /// Writes up to `capacity` pending output ranges to `out`; returns how many.
    ///
    /// # Safety
    /// `out` valid for `capacity` writes.
    unsafe fn list_output(&self, out: *mut HurrayIoSlice, capacity: usize) -> FfiResult<usize> {
        let e = &self.encoder;
        // SAFETY: as this function's (# Safety); the borrowed ranges are the last item's payloads.
        unsafe { list_pieces(e.segments(), e.offset(), e.staged(), &self.borrowed, out, capacity) }
    }

    /// Stages one tensor with its payload ranges (checked, at most [`MAX_PAYLOADS`]).
    ///
    /// # Safety
    /// `payloads` valid for `count` reads, each range readable for its length.
    unsafe fn encode_one(
        &mut self,
        desc: &hurray_core::TensorDescriptor,
        encoded: &[u8],
        payloads: *const HurrayIoSlice,
        count: usize,
    ) -> FfiResult<()> {
        // SAFETY: as for this function (# Safety).
        unsafe { stage(&mut self.encoder, &mut self.borrowed, desc, encoded, payloads, count) }
    }

    /// Writes the state to a nullable out-pointer.
    pub(crate) fn put_state(&self, out: *mut HurrayEncoderState) {
        put_state(out, self.state());
    }

    fn state(&self) -> HurrayEncoderState {
        HurrayEncoderState {
            pending_bytes: self.encoder.pending_bytes(),
            pending_pieces: self.encoder.segments().len() as u32,
            borrows_payloads: self.encoder.borrows_payloads() as u32,
        }
    }
}

/// Stages one tensor into `encoder`, recording its payload ranges in `borrowed` when the
/// output borrows them (see [`EncoderInner::encode_one`]).
///
/// # Safety
/// `payloads` valid for `count` slices, each valid for its length.
unsafe fn stage(
    encoder: &mut StreamEncoder,
    borrowed: &mut Vec<HurrayIoSlice>,
    desc: &hurray_core::TensorDescriptor,
    encoded: &[u8],
    payloads: *const HurrayIoSlice,
    count: usize,
) -> FfiResult<()> {
    if count > MAX_PAYLOADS {
        return Err(FfiError::new(
            HURRAY_ERR_INVALID_ARGUMENT,
            format!("{count} payloads; a tensor has at most {MAX_PAYLOADS} buffers"),
        ));
    }
    // SAFETY: the caller passes `count` readable slices, each valid for its length (# Safety).
    let (slices, parts) = unsafe { crate::writer::payload_parts(payloads, count)? };
    encoder.encode(desc, encoded, &parts)?;
    borrowed.clear();
    if encoder.borrows_payloads() {
        borrowed.extend_from_slice(slices);
    }
    Ok(())
}

/// Writes up to `capacity` ranges of pending output (`segs`, the first from byte `offset` on)
/// to `out` and returns how many: staged pieces point into `staged`, borrowed ones into
/// `borrowed` (the payload ranges of the call that staged them). Shared by the stream and the
/// container encoders.
///
/// # Safety
/// `out` valid for `capacity` writes; every `borrowed` range valid for its length.
pub(crate) unsafe fn list_pieces(
    segs: &[OutSeg],
    offset: usize,
    staged: &[u8],
    borrowed: &[HurrayIoSlice],
    out: *mut HurrayIoSlice,
    capacity: usize,
) -> FfiResult<usize> {
    let n = segs.len().min(capacity);
    if n > 0 {
        non_null(out, "out")?;
    }
    for (i, seg) in segs[..n].iter().enumerate() {
        let skip = if i == 0 { offset } else { 0 };
        let slice = match *seg {
            OutSeg::Staged { start, end } => {
                HurrayIoSlice { ptr: staged[start + skip..end].as_ptr(), len: end - start - skip }
            }
            OutSeg::Borrowed { index, len } => {
                let b = borrowed
                    .get(index)
                    .ok_or_else(|| FfiError::new(HURRAY_ERR_INTERNAL_PANIC, "borrowed payload missing"))?;
                // SAFETY: `skip < len` bytes into a payload range the caller vouched for.
                HurrayIoSlice { ptr: unsafe { b.ptr.add(skip) }, len: len - skip }
            }
        };
        // SAFETY: `i < n ≤ capacity` slots of `out` are writable (# Safety).
        unsafe { out.add(i).write(slice) };
    }
    Ok(n)
}

/// Encodes a stream into bytes the caller sends, with no transport and no callbacks. Owned;
/// one thread at a time (any thread, one after another).
pub struct HurrayEncoder {
    pub(crate) shell: crate::handle::Shell<EncoderInner>,
}
opaque_handle!(HurrayEncoder, EncoderInner, 0x4855_5252_454E_3031);

/// Makes an encoder (`options` NULL: defaults) and writes it to `*out_encoder` (destroy it with
/// `hurray_encoder_destroy`). Nothing is staged until the first item or `hurray_encoder_finish`.
/// Added in ABI 4 (additive). Errors: `NULL_POINTER`, `INVALID_ARGUMENT` (options).
///
/// # Safety
/// `options` NULL or valid for reads; `out_encoder` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_new(
    options: *const HurrayWriterOptions,
    out_encoder: *mut *mut HurrayEncoder,
) -> HurrayStatus {
    guard("hurray_encoder_new", || {
        non_null(out_encoder, "out_encoder")?;
        // SAFETY: `options` is non-NULL in this branch and valid for one read (# Safety).
        let opts = if options.is_null() { HurrayWriterOptions::defaults() } else { unsafe { *options } };
        let encoder = StreamEncoder::new(opts.to_core()?);
        // SAFETY: `out_encoder` was checked non-NULL above and is valid for one pointer write (# Safety).
        unsafe { handle::emit(out_encoder, EncoderInner { encoder, borrowed: Vec::new(), specs: Default::default() }) };
        Ok(HURRAY_OK)
    })
}

/// Stages one tensor: the stream header before the first item, the frame, the descriptor,
/// payloads of up to 64 KiB copied, and checksums; larger payloads are referenced, not copied.
/// `payloads[i]` is buffer `i` of the descriptor's buffer table, exactly its byte size.
/// Writes the pending output's state to `*out_state` (may be NULL). Items that borrow no
/// payload may stay pending and leave together with later ones.
///
/// Errors (nothing staged): `INVALID_ARGUMENT` (payload count differs from the buffer count, a
/// payload is too long, more than 64 payloads), `BUFFER_TOO_SMALL`, `INVALID_STATE` (after
/// finish, or while output borrowing the previous item's payloads is pending), `POISONED`,
/// `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` and `descriptor` live; `payloads` valid for `count` reads, each range readable
/// and unchanged until the output borrowing it was consumed (or the item taken back).
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_encode(
    encoder: *mut HurrayEncoder,
    descriptor: *const HurrayDescriptor,
    payloads: *const HurrayIoSlice,
    count: usize,
    out_state: *mut HurrayEncoderState,
) -> HurrayStatus {
    guard("hurray_encoder_encode", || {
        let e = handle::handle_mut!(encoder)?;
        let d = handle::handle_ref!(descriptor)?;
        // SAFETY: the caller passes `count` readable slices, each valid for its length (# Safety).
        unsafe { e.encode_one(&d.desc, d.encoded(), payloads, count)? };
        put_state(out_state, e.state());
        Ok(HURRAY_OK)
    })
}

/// As `hurray_encoder_encode`, with the descriptor given as its encoding (`len` bytes at
/// `descriptor`, docs/spec/descriptor.md), which is decoded and validated first: a binding
/// that keeps descriptors as bytes needs no descriptor handle per tensor. Errors as
/// `hurray_encoder_encode`, plus the decoder's (`INVALID_MAGIC`, `CORRUPT`, validation
/// statuses). Added in ABI 4 (additive).
///
/// # Safety
/// As `hurray_encoder_encode`; `descriptor` valid for `len` reads.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_encode_encoded(
    encoder: *mut HurrayEncoder,
    descriptor: *const u8,
    len: usize,
    payloads: *const HurrayIoSlice,
    count: usize,
    out_state: *mut HurrayEncoderState,
) -> HurrayStatus {
    guard("hurray_encoder_encode_encoded", || {
        let e = handle::handle_mut!(encoder)?;
        non_null(descriptor, "descriptor")?;
        if len > hurray_core::MAX_DESCRIPTOR_BYTES {
            return Err(FfiError::new(
                HURRAY_ERR_LIMIT_EXCEEDED,
                format!("a descriptor of {len} bytes exceeds {}", hurray_core::MAX_DESCRIPTOR_BYTES),
            ));
        }
        // SAFETY: the caller passes `len` readable bytes (bounded above).
        let bytes = unsafe { std::slice::from_raw_parts(descriptor, len) };
        let desc = hurray_core::TensorDescriptor::decode(bytes)?;
        // SAFETY: the caller passes `count` readable slices, each valid for its length (# Safety).
        unsafe { e.encode_one(&desc, bytes, payloads, count)? };
        put_state(out_state, e.state());
        Ok(HURRAY_OK)
    })
}

/// One tensor for `hurray_encoder_encode_batch`: its descriptor's fields and its payloads.
/// Pointers are borrowed for the call (payloads longer, while the encoder borrows them).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HurrayTensorSpec {
    /// The descriptor's fields, as `hurray_descriptor_new` takes them.
    pub descriptor: crate::descriptor_spec::HurrayDescriptorSpec,
    /// `payload_count` ranges: buffer `i` of the descriptor's buffer table, exactly its size.
    pub payloads: *const HurrayIoSlice,
    /// Entries in `payloads` (at most 64).
    pub payload_count: usize,
}

/// `hurray_encoder_encode_batch` flag: stage the end-of-stream marker after the items.
pub const HURRAY_ENCODE_FINISH: u32 = 1;

/// What `hurray_encoder_encode_batch` did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HurrayEncodeBatchResult {
    /// Items staged by this call, from the first.
    pub encoded: usize,
    /// Ranges written to `pieces` (the pending output, in order, up to the capacity).
    pub piece_count: usize,
    /// The pending output after the call.
    pub state: HurrayEncoderState,
}

/// The encoder's whole step for a batch of tensors, in one call: records that the first
/// `consumed` pending bytes were sent (as `hurray_encoder_consume`), stages `items` in order
/// (each as `hurray_encoder_encode` would, with its descriptor made from its spec as
/// `hurray_descriptor_new` makes it: validated and encoded once), then, with
/// `HURRAY_ENCODE_FINISH`, the end marker, and lists the pending output in `pieces` (as
/// `hurray_encoder_output`). A binding that queues small tensors thus crosses the boundary
/// once per batch. Staging stops early, with `HURRAY_OK`, after an item whose output borrows
/// its payloads (a payload above the coalescing size): send the output, then call again with
/// the rest. `*out` is written on every return, errors included.
///
/// Errors: the item at index `out.encoded` was refused (every earlier item is staged and
/// stays pending; it and the later ones are not; list the output with
/// `hurray_encoder_output`): the statuses of `hurray_descriptor_new` and
/// `hurray_encoder_encode`. Before any item: `INVALID_ARGUMENT` (`consumed` exceeds the
/// pending bytes, unknown flags), `POISONED`, `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` live; `items` valid for `count` reads, with every pointer in them valid for its
/// count (payload ranges as for `hurray_encoder_encode`); `pieces` valid for `capacity`
/// writes; `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_encode_batch(
    encoder: *mut HurrayEncoder,
    consumed: u64,
    items: *const HurrayTensorSpec,
    count: usize,
    flags: u32,
    pieces: *mut HurrayIoSlice,
    capacity: usize,
    out: *mut HurrayEncodeBatchResult,
) -> HurrayStatus {
    guard("hurray_encoder_encode_batch", || {
        non_null(out, "out")?;
        // SAFETY: `out` was checked non-NULL and is valid for one write (# Safety).
        unsafe { out.write(HurrayEncodeBatchResult::default()) };
        let e = handle::handle_mut!(encoder)?;
        if flags & !HURRAY_ENCODE_FINISH != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("unknown encode flags {flags:#x}")));
        }
        if consumed > 0 {
            e.encoder.consume(consumed)?;
            if !e.encoder.borrows_payloads() {
                e.borrowed.clear();
            }
        }
        // SAFETY: `items` is valid for `count` reads (# Safety); slice_arg rejects NULL with a non-zero count.
        let items = unsafe { crate::slices::slice_arg(items, count, "items")? };
        let mut done = 0;
        let mut failure = None;
        for item in items {
            if e.encoder.borrows_payloads() {
                break;
            }
            // SAFETY: the item's pointers are valid for their counts (# Safety).
            // A spec that repeats the last one but for its strings reuses its descriptor
            // (spec_cache.rs): the same descriptor, encoding and errors, without allocating.
            let staged = unsafe { e.specs.descriptor(&item.descriptor) }.and_then(|(d, encoded)| {
                // SAFETY: the item's payload ranges are valid (# Safety).
                unsafe { stage(&mut e.encoder, &mut e.borrowed, d, encoded, item.payloads, item.payload_count) }
            });
            if let Err(f) = staged {
                failure = Some(f);
                break;
            }
            done += 1;
        }
        if failure.is_none() && done == items.len() && flags & HURRAY_ENCODE_FINISH != 0 {
            if let Err(f) = e.encoder.finish() {
                failure = Some(f.into());
            }
        }
        let piece_count = match failure {
            // SAFETY: `pieces` is valid for `capacity` writes (# Safety).
            None => unsafe { e.list_output(pieces, capacity)? },
            Some(_) => 0,
        };
        let r = HurrayEncodeBatchResult { encoded: done, piece_count, state: e.state() };
        // SAFETY: `out` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { out.write(r) };
        match failure {
            Some(f) => Err(f.with_prefix(&format!("batch item {done}: "))),
            None => Ok(HURRAY_OK),
        }
    })
}

/// Stages the end-of-stream marker (and the stream header if nothing was staged); idempotent.
/// Writes the pending output's state to `*out_state` (may be NULL). Errors: `POISONED`,
/// `INVALID_STATE` (output borrowing payloads is pending). Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_finish(
    encoder: *mut HurrayEncoder,
    out_state: *mut HurrayEncoderState,
) -> HurrayStatus {
    guard("hurray_encoder_finish", || {
        let e = handle::handle_mut!(encoder)?;
        e.encoder.finish()?;
        put_state(out_state, e.state());
        Ok(HURRAY_OK)
    })
}

/// Lists the pending output, in order, as up to `capacity` ranges in `out` (the first starts
/// after the bytes already consumed); `*out_count` receives the number written. Ranges point
/// into the encoder (valid until the next call that stages, consumes or aborts) or into the
/// last item's payloads. Send them in order, then report the count with
/// `hurray_encoder_consume`. Fewer than all pieces are listed when `capacity` is smaller; list
/// again after consuming. Added in ABI 4 (additive).
///
/// Errors: `NULL_POINTER` (`out` with `capacity > 0`, `out_count`), `USE_AFTER_DESTROY`.
///
/// # Safety
/// `encoder` live; `out` valid for `capacity` writes; `out_count` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_output(
    encoder: *const HurrayEncoder,
    out: *mut HurrayIoSlice,
    capacity: usize,
    out_count: *mut usize,
) -> HurrayStatus {
    guard("hurray_encoder_output", || {
        let e = handle::handle_ref!(encoder)?;
        non_null(out_count, "out_count")?;
        // SAFETY: `out` is valid for `capacity` writes (# Safety).
        let n = unsafe { e.list_output(out, capacity)? };
        // SAFETY: `out_count` was checked non-NULL above and is valid for one write (# Safety).
        unsafe { *out_count = n };
        Ok(HURRAY_OK)
    })
}

/// Records that the first `n` bytes of the pending output were sent. When nothing is pending
/// any more, the encoder stops borrowing payloads. Writes the new state to `*out_state` (may
/// be NULL). Errors: `INVALID_ARGUMENT` (`n` exceeds the pending bytes; nothing recorded).
/// Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_consume(
    encoder: *mut HurrayEncoder,
    n: u64,
    out_state: *mut HurrayEncoderState,
) -> HurrayStatus {
    guard("hurray_encoder_consume", || {
        let e = handle::handle_mut!(encoder)?;
        e.encoder.consume(n)?;
        if !e.encoder.borrows_payloads() {
            e.borrowed.clear();
        }
        put_state(out_state, e.state());
        Ok(HURRAY_OK)
    })
}

/// Reports that sending the pending output failed (transport rule 4). If part of it had been
/// consumed, the stream on the wire is cut inside an item: the encoder is poisoned and this
/// returns `HURRAY_ERR_POISONED`. Otherwise it returns `HURRAY_OK`, and with `take_back_last`
/// non-zero the last staged item (or end marker) is taken back, so that the caller can stage
/// it again later; earlier pending items stay pending. Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_abort(
    encoder: *mut HurrayEncoder,
    take_back_last: u32,
    out_state: *mut HurrayEncoderState,
) -> HurrayStatus {
    guard("hurray_encoder_abort", || {
        let e = handle::handle_mut!(encoder)?;
        let poisoned = e.encoder.abort(take_back_last != 0);
        if !e.encoder.borrows_payloads() {
            e.borrowed.clear();
        }
        put_state(out_state, e.state());
        if poisoned {
            return Err(FfiError::new(
                HURRAY_ERR_POISONED,
                "sending failed after part of the pending output left; the encoder is poisoned",
            ));
        }
        Ok(HURRAY_OK)
    })
}

/// Makes an encoder ready for a new stream from its first byte, as if just made with the same
/// options and coalesce size (the mirror of `hurray_decoder_reset`): pending output (sent or
/// not, including output borrowing payloads), the stream metadata, the finished state and a
/// poisoning are dropped, and the next `hurray_encoder_encode*` or `hurray_encoder_finish`
/// stages the stream header again. A caller that sends one short stream per message (a Kafka
/// record: header, one item, end marker) keeps one encoder instead of making one per message,
/// and never spells out the header or the end marker itself. `*out_state` (may be NULL) is
/// then all zero. Added in ABI 4 (additive).
///
/// Errors: `NULL_POINTER`, `USE_AFTER_DESTROY`.
///
/// # Safety
/// `encoder` live, not used concurrently; `out_state` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_reset(
    encoder: *mut HurrayEncoder,
    out_state: *mut HurrayEncoderState,
) -> HurrayStatus {
    guard("hurray_encoder_reset", || {
        let e = handle::handle_mut!(encoder)?;
        e.encoder.reset();
        e.borrowed.clear();
        put_state(out_state, e.state());
        Ok(HURRAY_OK)
    })
}

/// Sets the largest payload the encoder copies into its staged output (default and maximum
/// 65536 bytes); larger payloads are borrowed (see `hurray_encoder_encode`). For callers that
/// send an item's pieces with one gathering write (`writev`), a smaller value saves copying
/// mid-sized payloads. The bytes on the wire do not change. Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` live.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_set_coalesce_bytes(encoder: *mut HurrayEncoder, bytes: usize) -> HurrayStatus {
    guard("hurray_encoder_set_coalesce_bytes", || {
        handle::handle_mut!(encoder)?.encoder.set_coalesce_bytes(bytes);
        Ok(HURRAY_OK)
    })
}

/// Destroys an encoder (pending output is dropped, not sent) and writes NULL to `*encoder`;
/// NULL or `*encoder == NULL` is a no-op. Added in ABI 4 (additive).
///
/// # Safety
/// `encoder` NULL or valid for read and write.
#[no_mangle]
pub unsafe extern "C" fn hurray_encoder_destroy(encoder: *mut *mut HurrayEncoder) -> HurrayStatus {
    guard("hurray_encoder_destroy", || {
        // SAFETY: `encoder` is NULL or valid for a read and a write; `*encoder` is NULL or a handle from this library
        // (# Safety).
        unsafe { handle::destroy_pp(encoder, "encoder")? };
        Ok(HURRAY_OK)
    })
}

fn put_state(out: *mut HurrayEncoderState, s: HurrayEncoderState) {
    if !out.is_null() {
        // SAFETY: a non-NULL out-pointer is valid for one write (documented on every caller).
        unsafe { out.write(s) };
    }
}
