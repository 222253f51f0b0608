package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayFileEncoderState;
import dev.hurray.ffm.HurrayFileWriterOptions;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.hurray_h;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A native container encoder ({@code HurrayFileEncoder*}; docs/spec/hrryfile.md §5,
 * docs/spec/c-abi.md §Containers without a transport) drained into a {@link Sink}.
 *
 * <p><b>No upcalls.</b> Each call stages with one downcall ({@code hurray_file_encoder_add_tensor},
 * {@code _finish}, …); when the output must leave (it borrows a payload over 64 KiB, 64 KiB are
 * pending, or on flush and finish) this class asks for the pending ranges and writes them
 * with {@link Sink#write} in Java, outside any native frame, then reports the count. A virtual
 * thread blocked on the sink unmounts from its carrier, and a sink that throws cannot unwind
 * through native code. The failure rules are the encoder's: a failed send takes the tensor
 * back when none of it had left (the call can be retried), poisons the encoder when part of
 * it had, and leaves every byte the encoder owns pending otherwise (a failed flush or finish
 * loses nothing and can be repeated).
 *
 * <p><b>Memory.</b> Slices, pieces and the state struct live in one automatic arena owned by
 * this object; nothing is allocated per call. Not thread-safe: the public
 * {@code HurrayFileWriter} serialises access; any thread may use it, one at a time.
 */
public final class NativeFileWriter {
    /** Pending bytes at which staged output is sent (the encoder's staging size). */
    private static final long SEND_AT_BYTES = 64 * 1024;
    /** Pieces listed per {@code hurray_file_encoder_output} call. */
    private static final int MAX_PIECES = 16;

    private final Sink sink;
    private final MemorySegment out;
    private final MemorySegment slices;
    private final MemorySegment pieces;
    private final MemorySegment state;
    /** The sink's first fatal failure (a reset connection, a closed channel), reported on every later send. */
    private Throwable dead;
    private Throwable closeFailure;
    private MemorySegment handle;

    private NativeFileWriter(Sink sink, Arena auto, MemorySegment handle) {
        this.sink = sink;
        this.out = auto.allocate(16, 8);
        this.slices = HurrayIoSlice.allocateArray(NativeWriter.MAX_PAYLOADS, auto);
        this.pieces = HurrayIoSlice.allocateArray(MAX_PIECES, auto);
        this.state = HurrayFileEncoderState.allocate(auto);
        this.handle = handle;
    }

    /** The native default minimum payload alignment in bytes ({@code hurray_file_writer_options_init}). */
    public static long defaultMinPayloadAlignment() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment o = HurrayFileWriterOptions.allocate(a);
            hurray_h.hurray_file_writer_options_init(o);
            return HurrayFileWriterOptions.min_payload_alignment(o);
        }
    }

    /**
     * Makes a native container encoder draining into {@code sink}; nothing is written yet. On
     * failure nothing is kept and the sink is not closed.
     *
     * @param payloadChecksums store each payload's CRC32C in the index
     * @param minPayloadAlignment every payload starts at a multiple of at least this many bytes
     * @throws HurrayException {@link Status#INVALID_ALIGNMENT} for a bad alignment
     */
    public static NativeFileWriter open(Sink sink, boolean payloadChecksums, long minPayloadAlignment)
            throws HurrayException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment opts = HurrayFileWriterOptions.allocate(arena);
            Native.check(hurray_h.hurray_file_writer_options_init(opts));
            HurrayFileWriterOptions.flags(opts, payloadChecksums ? 0 : hurray_h.HURRAY_FILE_WRITER_NO_PAYLOAD_CHECKSUMS());
            HurrayFileWriterOptions.min_payload_alignment(opts, minPayloadAlignment);
            MemorySegment slot = arena.allocate(ADDRESS);
            Native.check(hurray_h.hurray_file_encoder_new(opts, slot));
            MemorySegment h = slot.get(ADDRESS, 0);
            return new NativeFileWriter(sink, Arena.ofAuto(), h);
        }
    }

    /** The sink (for flushing). */
    public Sink sink() {
        return sink;
    }

    /** True once {@link #close()} ran. */
    public boolean isClosed() {
        return handle == null;
    }

    private MemorySegment live() {
        MemorySegment h = handle;
        if (h == null) {
            throw new IllegalStateException("the container writer is closed");
        }
        return h;
    }

    /**
     * Appends one tensor ({@code hurray_file_encoder_add_tensor}) and sends the pending output
     * when it borrows the payloads or has grown to 64 KiB. The caller guarantees that every
     * payload is a live native segment for the duration of the call.
     *
     * @param descriptor a live native descriptor (owned or borrowed) with a name
     * @param payloads native segments, one per buffer, at most {@link NativeWriter#MAX_PAYLOADS}
     * @throws HurrayException validation statuses (nothing staged); {@link Status#TRANSPORT} or
     *     {@link Status#SINK_CLOSED} with the sink's exception as cause (the tensor was taken
     *     back and the call can be retried, unless the message says the writer is poisoned);
     *     {@link Status#POISONED}
     */
    public void add(MemorySegment descriptor, MemorySegment[] payloads) throws HurrayException {
        MemorySegment h = live();
        for (int i = 0; i < payloads.length; i++) {
            long len = payloads[i].byteSize();
            long at = i * HurrayIoSlice.sizeof();
            slices.set(JAVA_LONG, at + HurrayIoSlice.ptr$offset(), len == 0 ? 0 : payloads[i].address());
            slices.set(JAVA_LONG, at + HurrayIoSlice.len$offset(), len);
        }
        Native.check(hurray_h.hurray_file_encoder_add_tensor(h, descriptor, slices, payloads.length, state));
        afterStaging();
    }

    /**
     * Adds a composite ({@code hurray_file_encoder_add_composite}): the head under the builder's
     * name, members under {@code name/role}, staged as one group (payloads copied).
     */
    public void addComposite(MemorySegment builder) throws HurrayException {
        Native.check(hurray_h.hurray_file_encoder_add_composite(live(), builder, state));
        afterStaging();
    }

    private void afterStaging() throws HurrayException {
        if (HurrayFileEncoderState.borrows_payloads(state) != 0
                || HurrayFileEncoderState.pending_bytes(state) >= SEND_AT_BYTES) {
            send(true);
        }
    }

    /** Sets a file-level metadata entry ({@code hurray_file_encoder_set_metadata}); both are copied. */
    public void setMetadata(byte[] key, byte[] value) throws HurrayException {
        MemorySegment h = live();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = key.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, key);
            MemorySegment v = value.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, value);
            Native.check(hurray_h.hurray_file_encoder_set_metadata(h, k, key.length, v, value.length));
        }
    }

    /** Sends everything pending. A failure leaves it pending (retryable), unless the writer is poisoned. */
    public void flush() throws HurrayException {
        live();
        if (HurrayFileEncoderState.poisoned(state) != 0) {
            throw new HurrayException(Status.POISONED, "an earlier failure left part of a tensor in the output", null);
        }
        send(false);
    }

    /**
     * Stages index, metadata and trailer ({@code hurray_file_encoder_finish}) and sends every
     * pending byte; returns the file size in bytes. A failed send can be repeated by calling
     * this again: nothing already written is written twice.
     */
    public long finish() throws HurrayException {
        MemorySegment h = live();
        Native.check(hurray_h.hurray_file_encoder_finish(h, out, state));
        long size = out.get(JAVA_LONG, 0);
        send(false);
        return size;
    }

    /** Bytes the sink has accepted so far. */
    public long bytesWritten() {
        live();
        return HurrayFileEncoderState.bytes_written(state);
    }

    /** Tensors added so far. */
    public long tensorCount() {
        live();
        return HurrayFileEncoderState.tensor_count(state);
    }

    /**
     * Writes the pending output to the sink, piece by piece (a gathering sink takes the listed
     * pieces in one call), reporting each count. On a failure, reports it to the encoder
     * ({@code hurray_file_encoder_abort}, taking the last tensor back when {@code takeBack}).
     */
    private void send(boolean takeBack) throws HurrayException {
        MemorySegment h = handle;
        while (HurrayFileEncoderState.pending_bytes(state) > 0) {
            Native.check(hurray_h.hurray_file_encoder_output(h, pieces, MAX_PIECES, out));
            int n = (int) out.get(JAVA_LONG, 0);
            long k;
            try {
                if (dead != null) {
                    throw dead;
                }
                k = n > 1 && sink.gathers() ? sink.write(listed(n)) : sink.write(piece(0));
            } catch (Throwable e) { // everything the sink threw is its failure
                if (dead == null && !HurrayException.isRetryableCause(e)) {
                    dead = e;
                }
                throw abort(takeBack, new HurrayException(Status.TRANSPORT, "writing to the sink failed", e));
            }
            if (k <= 0) {
                throw abort(takeBack, new HurrayException(Status.SINK_CLOSED, "the sink accepted 0 bytes: it is closed", null));
            }
            Native.check(hurray_h.hurray_file_encoder_consume(h, k, state));
        }
    }

    private MemorySegment piece(int i) {
        long at = i * HurrayIoSlice.sizeof();
        return Native.view(pieces.get(JAVA_LONG, at + HurrayIoSlice.ptr$offset()),
                pieces.get(JAVA_LONG, at + HurrayIoSlice.len$offset()));
    }

    private ByteBuffer[] listed(int n) {
        ByteBuffer[] ranges = new ByteBuffer[n];
        for (int i = 0; i < n; i++) {
            MemorySegment p = piece(i);
            ranges[i] = p.asSlice(0, Math.min(p.byteSize(), Source.MAX_CHANNEL_TRANSFER)).asByteBuffer();
        }
        return ranges;
    }

    private HurrayException abort(boolean takeBack, HurrayException failure) {
        int rc = hurray_h.hurray_file_encoder_abort(handle, takeBack ? 1 : 0, state);
        if (rc == hurray_h.HURRAY_ERR_POISONED()) {
            return new HurrayException(failure.status(), failure.nativeMessage()
                    + " after part of the tensor was written; the writer is poisoned", failure.getCause());
        }
        return failure;
    }

    /**
     * Destroys the native encoder (it does not finish the container; pending bytes are
     * dropped) and closes the sink. Idempotent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the sink threw (the cause)
     */
    public void close() throws HurrayException {
        if (handle == null) {
            return;
        }
        MemorySegment h = handle;
        handle = null;
        int rc;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment slot = a.allocate(ADDRESS);
            slot.set(ADDRESS, 0, h);
            rc = hurray_h.hurray_file_encoder_destroy(slot);
        }
        try {
            sink.close();
        } catch (IOException | RuntimeException e) {
            closeFailure = e;
        }
        if (rc < 0) {
            throw Native.error(rc, null);
        }
        if (closeFailure != null) {
            throw new HurrayException(Status.TRANSPORT, "closing the sink failed", closeFailure);
        }
    }
}
