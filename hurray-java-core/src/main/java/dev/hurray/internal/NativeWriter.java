package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayEncoderState;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.HurrayWriterOptions;
import dev.hurray.ffm.hurray_h;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native stream encoder ({@code HurrayEncoder*}, docs/spec/c-abi.md §Decoders and encoders)
 * drained into a {@link Sink}.
 *
 * <p><b>No upcalls.</b> {@link #write} stages the item with one {@code hurray_encoder_encode}
 * call; when the output must leave (it borrows a large payload, the batch is full, or batching
 * is off) this class asks the encoder for the pending ranges and writes them with
 * {@link Sink#write} in Java, outside any native frame, then reports the count. A virtual
 * thread blocked on the sink unmounts from its carrier, and a sink that throws cannot unwind
 * through native code. Transport rule 4 holds: a send that fails after part of the pending
 * output left poisons the writer; one that fails before takes the item back, so the call can
 * be retried.
 *
 * <p><b>Memory.</b> The slice, piece and state structs live in an automatic arena owned by
 * this object; nothing is allocated per call. Not thread-safe: the public {@code Writer}
 * serialises access; any thread may use it, one at a time.
 */
public final class NativeWriter {
    /** Most payloads one tensor can have (the format's buffer-table limit). */
    public static final int MAX_PAYLOADS = 64;
    /** Largest payload copied into the staging buffer when the sink gathers (16 KiB). */
    private static final long GATHER_COALESCE_BYTES = 16 * 1024;
    /** Pieces listed per {@code hurray_encoder_output} call. */
    private static final int MAX_PIECES = 2 * MAX_PAYLOADS + 2;

    private final Sink sink;
    /** The sink's first fatal failure (a reset connection), reported on every later write. */
    private Throwable dead;
    private final long batchBytes;
    private final MemorySegment slices;
    private final MemorySegment pieces;
    private final MemorySegment state;
    private final MemorySegment count;
    private MemorySegment descriptorScratch;
    private MemorySegment handle;
    private Leaks.Resource resource;

    private NativeWriter(Sink sink, long batchBytes, Arena auto, MemorySegment handle) {
        this.sink = sink;
        this.batchBytes = batchBytes;
        this.slices = HurrayIoSlice.allocateArray(MAX_PAYLOADS, auto);
        this.pieces = HurrayIoSlice.allocateArray(MAX_PIECES, auto);
        this.state = HurrayEncoderState.allocate(auto);
        this.count = auto.allocate(JAVA_LONG);
        this.descriptorScratch = auto.allocate(4096, 8);
        this.handle = handle;
    }

    /**
     * Makes a native encoder; nothing is written yet.
     *
     * @param payloadChecksums follow every payload with its CRC32C
     * @param batchBytes 0: send every item at once; else keep small items pending until this
     *     many bytes are staged (see {@code WriterOptions.batchBytes})
     */
    public static NativeWriter open(Sink sink, boolean payloadChecksums, long batchBytes) throws HurrayException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment opts = HurrayWriterOptions.allocate(arena);
            Native.check(hurray_h.hurray_writer_options_init(opts));
            HurrayWriterOptions.flags(opts, payloadChecksums ? hurray_h.HURRAY_WRITER_PAYLOAD_CHECKSUMS() : 0);
            MemorySegment slot = arena.allocate(ADDRESS);
            Native.check(hurray_h.hurray_encoder_new(opts, slot));
            MemorySegment h = slot.get(ADDRESS, 0);
            if (sink.gathers()) {
                // Pieces leave in one gathering write, so copying mid-sized payloads into the
                // staging buffer would only cost a memcpy.
                Native.check(hurray_h.hurray_encoder_set_coalesce_bytes(h, GATHER_COALESCE_BYTES));
            }
            Native.debug("hurray: encoder {} created", h);
            return new NativeWriter(sink, batchBytes, Arena.ofAuto(), h);
        }
    }

    /** The sink. */
    public Sink sink() {
        return sink;
    }

    /**
     * Stages one tensor and, unless it may wait for a batch, sends the pending output. The
     * payloads are read by address: the caller guarantees each is live native memory of its
     * length until this call returns (when it returns, nothing refers to them any more).
     *
     * @param descriptor a live native descriptor (owned or borrowed)
     * @param payloads native segments, one per buffer, at most {@link #MAX_PAYLOADS}
     * @throws HurrayException validation statuses (nothing staged); {@link Status#TRANSPORT}
     *     with the sink's exception as cause (the item was taken back, and the call can be
     *     retried, unless the message says the writer is poisoned); {@link Status#POISONED}
     */
    public void write(MemorySegment descriptor, MemorySegment[] payloads) throws HurrayException {
        fillSlices(payloads);
        Native.check(hurray_h.hurray_encoder_encode(handle, descriptor, slices, payloads.length, state));
        afterStaging();
    }

    private void fillSlices(MemorySegment[] payloads) {
        for (int i = 0; i < payloads.length; i++) {
            long len = payloads[i].byteSize();
            long at = i * HurrayIoSlice.sizeof();
            slices.set(JAVA_LONG, at + HurrayIoSlice.ptr$offset(), len == 0 ? 0 : payloads[i].address());
            slices.set(JAVA_LONG, at + HurrayIoSlice.len$offset(), len);
        }
    }

    /** Sends the pending output unless it may wait for the batch. */
    private void afterStaging() throws HurrayException {
        if (HurrayEncoderState.borrows_payloads(state) != 0 || HurrayEncoderState.pending_bytes(state) >= batchBytes) {
            send(true);
            if (batchBytes == 0) {
                flushSink();
            }
        }
    }

    /**
     * As {@link #write(MemorySegment, MemorySegment[])}, for a descriptor that Java holds as
     * its encoding only ({@code hurray_encoder_encode_encoded}: decoded and validated natively,
     * no descriptor handle needed). The bytes pass through a scratch area owned by this writer.
     */
    public void writeEncoded(byte[] encoded, MemorySegment[] payloads) throws HurrayException {
        if (encoded.length > descriptorScratch.byteSize()) {
            descriptorScratch = Arena.ofAuto().allocate(Math.max(encoded.length, 2 * descriptorScratch.byteSize()), 8);
        }
        MemorySegment.copy(encoded, 0, descriptorScratch, JAVA_BYTE, 0, encoded.length);
        fillSlices(payloads);
        Native.check(hurray_h.hurray_encoder_encode_encoded(handle, descriptorScratch, encoded.length, slices,
                payloads.length, state));
        afterStaging();
    }

    /**
     * Stages a whole composite from a live native composite builder
     * ({@code hurray_encoder_encode_composite}: head and members in preorder, payloads copied, so
     * it is sent or taken back as one item) and sends it unless it may wait for the batch. The
     * builder's payloads must be live native memory for the duration of the call.
     */
    public void writeComposite(MemorySegment builder) throws HurrayException {
        Native.check(hurray_h.hurray_encoder_encode_composite(handle, builder, state));
        afterStaging();
    }

    /**
     * Sets the stream's metadata ({@code hurray_encoder_set_metadata}), sent with the stream
     * header: before the first item.
     *
     * @throws HurrayException {@link Status#INVALID_STATE} after the first item; the metadata
     *     rules ({@link Status#INVALID_ARGUMENT}, {@link Status#LIMIT_EXCEEDED},
     *     {@link Status#DUPLICATE_NAME})
     */
    public void setMetadata(java.util.Map<String, byte[]> metadata) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            int n = metadata.size();
            MemorySegment views = a.allocate(Math.max(1, n) * dev.hurray.ffm.HurrayMetadataView.sizeof(), 8);
            int i = 0;
            for (java.util.Map.Entry<String, byte[]> e : metadata.entrySet()) {
                byte[] k = Utf8.encode(e.getKey(), "metadata key");
                byte[] v = e.getValue();
                MemorySegment view = views.asSlice(i * dev.hurray.ffm.HurrayMetadataView.sizeof(), dev.hurray.ffm.HurrayMetadataView.sizeof());
                dev.hurray.ffm.HurrayMetadataView.key(view, k.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, k));
                dev.hurray.ffm.HurrayMetadataView.key_len(view, k.length);
                dev.hurray.ffm.HurrayMetadataView.value(view, v.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, v));
                dev.hurray.ffm.HurrayMetadataView.value_len(view, v.length);
                i++;
            }
            Native.check(hurray_h.hurray_encoder_set_metadata(handle, views, n));
        }
    }

    /**
     * Starts a new stream ({@code hurray_encoder_reset}): output not yet sent, the stream
     * metadata, the finished state and a poisoning are dropped; the next item or finish stages
     * the stream header again. A sink that failed for good stays failed.
     */
    public void reset() throws HurrayException {
        Native.check(hurray_h.hurray_encoder_reset(handle, state));
        if (sink instanceof Sink.Memory m) {
            m.clear();
        }
    }

    /** Sends whatever is pending and flushes the sink. */
    public void flush() throws HurrayException {
        send(false);
        flushSink();
    }

    /** Stages and sends the end-of-stream marker; idempotent after success. */
    public void finish() throws HurrayException {
        Native.check(hurray_h.hurray_encoder_finish(handle, state));
        send(true);
        flushSink();
    }

    /**
     * Writes the pending output to the sink. On failure, reports what left and aborts: a
     * partial send poisons the encoder, none takes the last item back when {@code takeBackLast}.
     */
    private void send(boolean takeBackLast) throws HurrayException {
        while (HurrayEncoderState.pending_bytes(state) > 0) {
            Native.check(hurray_h.hurray_encoder_output(handle, pieces, MAX_PIECES, count));
            long n = count.get(JAVA_LONG, 0);
            long sent = 0;
            if (n > 1 && sink.gathers()) {
                sendGathered((int) n, takeBackLast);
                continue;
            }
            for (int i = 0; i < n; i++) {
                MemorySegment p = HurrayIoSlice.asSlice(pieces, i);
                MemorySegment bytes = HurrayIoSlice.ptr(p).reinterpret(HurrayIoSlice.len(p));
                long off = 0;
                while (off < bytes.byteSize()) {
                    MemorySegment rest = bytes.asSlice(off);
                    long k = sendSome(() -> sink.write(rest), sent, takeBackLast);
                    off += k;
                    sent += k;
                }
            }
            Native.check(hurray_h.hurray_encoder_consume(handle, sent, state));
        }
    }

    /** Sends {@code n} listed pieces with gathering writes (one system call when the socket takes them all). */
    private void sendGathered(int n, boolean takeBackLast) throws HurrayException {
        java.nio.ByteBuffer[] ranges = new java.nio.ByteBuffer[n];
        long total = 0;
        for (int i = 0; i < n; i++) {
            MemorySegment p = HurrayIoSlice.asSlice(pieces, i);
            long len = HurrayIoSlice.len(p);
            ranges[i] = HurrayIoSlice.ptr(p).reinterpret(len).asByteBuffer();
            total += len;
        }
        long sent = 0;
        while (sent < total) {
            sent += sendSome(() -> sink.write(ranges), sent, takeBackLast);
        }
        Native.check(hurray_h.hurray_encoder_consume(handle, sent, state));
    }

    /** One write to the sink. */
    @FunctionalInterface
    private interface SinkWrite {
        long write() throws Throwable;
    }

    /**
     * One sink write of the pending output, of which {@code sent} bytes already left: the bytes
     * it took (at least 1). A dead connection reports its failure again
     * (HurrayException.isRetryableCause) and a failure that is not retryable marks it dead;
     * either way, and when the sink takes nothing, the output is aborted ({@link #abort}).
     */
    private long sendSome(SinkWrite w, long sent, boolean takeBackLast) throws HurrayException {
        if (dead != null) {
            throw abort(sent, takeBackLast, new HurrayException(Status.TRANSPORT, "writing to the sink failed", dead));
        }
        long k;
        try {
            k = w.write();
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            if (!HurrayException.isRetryableCause(e)) {
                dead = e;
            }
            throw abort(sent, takeBackLast, new HurrayException(Status.TRANSPORT, "writing to the sink failed", e));
        }
        if (k <= 0) {
            throw abort(sent, takeBackLast, new HurrayException(Status.SINK_CLOSED,
                    "the sink accepted 0 bytes: it is closed", null));
        }
        return k;
    }

    private HurrayException abort(long sent, boolean takeBackLast, HurrayException failure) {
        if (sent > 0) {
            hurray_h.hurray_encoder_consume(handle, sent, state);
        }
        int rc = hurray_h.hurray_encoder_abort(handle, takeBackLast ? 1 : 0, state);
        if (rc == hurray_h.HURRAY_ERR_POISONED()) {
            return new HurrayException(failure.status(), failure.nativeMessage() + " after " + sent
                    + " bytes of the pending output; the writer is poisoned", failure.getCause());
        }
        return failure;
    }

    private void flushSink() throws HurrayException {
        try {
            sink.flush();
        } catch (IOException | RuntimeException e) {
            throw new HurrayException(Status.TRANSPORT, "flushing the sink failed", e);
        }
    }

    /**
     * Destroys the native encoder (pending output is dropped: call {@link #finish()} first),
     * then closes the sink. Idempotent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the sink threw (the cause)
     */
    public void close() throws HurrayException {
        if (handle == null) {
            return;
        }
        MemorySegment h = handle;
        handle = null;
        if (resource != null) {
            resource.close();
        } else {
            destroy(h);
        }
        Native.debug("hurray: encoder {} destroyed", h);
        try {
            sink.close();
        } catch (IOException | RuntimeException e) {
            throw new HurrayException(Status.TRANSPORT, "closing the sink failed", e);
        }
    }

    /**
     * Lets the leak cleaner destroy the native encoder once {@code owner} (the public handle)
     * is unreachable without having been closed (see {@link Leaks}).
     */
    public void watch(Object owner, String what) {
        MemorySegment h = handle;
        resource = Leaks.track(owner, what, () -> destroy(h));
    }

    private static void destroy(MemorySegment h) {
        Native.destroyThroughSlot(h, hurray_h::hurray_encoder_destroy);
    }
}
