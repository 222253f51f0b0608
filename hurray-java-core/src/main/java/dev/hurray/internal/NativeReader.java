package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayReaderOptions;
import dev.hurray.ffm.HurrayTransport;
import dev.hurray.ffm.HurrayTransportReadFn;
import dev.hurray.ffm.HurrayTransportReleaseFn;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native stream reader ({@code HurrayReader*}) with its transport's upcall stubs.
 *
 * <p><b>Arena.</b> One shared arena per reader holds the two upcall stubs ({@code read},
 * {@code release}), the transport struct, the options and the out-pointer slot; it is allocated
 * once at creation (nothing is allocated per call) and closed right after
 * {@code hurray_reader_destroy}, so the stubs live exactly as long as the native reader can call
 * them. It is shared, not confined, so that a reader made on one thread can be used (one thread
 * at a time) and closed on another; that costs one shared-arena close per reader, never per
 * tensor.
 *
 * <p>Not thread-safe: the public {@code Reader} serialises access.
 */
public final class NativeReader {
    private final Arena arena;
    private final ReadTransport transport;
    private final MemorySegment slot;
    private MemorySegment handle;

    private NativeReader(Arena arena, ReadTransport transport, MemorySegment slot, MemorySegment handle) {
        this.arena = arena;
        this.transport = transport;
        this.slot = slot;
        this.handle = handle;
    }

    /**
     * Makes a native reader over {@code transport}. On failure nothing is kept and the source is
     * not closed.
     *
     * @param maxRank largest accepted rank
     * @param maxDescriptorBytes largest accepted encoded descriptor, bytes
     * @param maxTensorBytes largest accepted sum of a tensor's buffer sizes, bytes
     * @param requirePayloadChecksums fail streams written without payload checksums
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for options the library refuses
     */
    public static NativeReader open(ReadTransport transport, int maxRank, long maxDescriptorBytes,
            long maxTensorBytes, boolean requirePayloadChecksums) throws HurrayException {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment t = HurrayTransport.allocate(arena);
            HurrayTransport.ctx(t, MemorySegment.NULL);
            HurrayTransport.read(t, HurrayTransportReadFn.allocate(transport::upcall, arena));
            HurrayTransport.release(t, HurrayTransportReleaseFn.allocate(transport::upcallRelease, arena));
            MemorySegment opts = HurrayReaderOptions.allocate(arena);
            Native.check(hurray_h.hurray_reader_options_init(opts));
            HurrayReaderOptions.max_rank(opts, maxRank);
            HurrayReaderOptions.max_descriptor_bytes(opts, maxDescriptorBytes);
            HurrayReaderOptions.max_tensor_bytes(opts, maxTensorBytes);
            HurrayReaderOptions.flags(opts, requirePayloadChecksums ? hurray_h.HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS() : 0);
            MemorySegment slot = arena.allocate(ADDRESS);
            Native.check(hurray_h.hurray_reader_new(t, opts, slot));
            MemorySegment h = slot.get(ADDRESS, 0);
            Native.debug("hurray: reader {} created", h);
            return new NativeReader(arena, transport, slot, h);
        } catch (HurrayException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** The default reader options of the native library: {max_rank, max_descriptor_bytes, max_tensor_bytes}. */
    public static long[] defaultLimits() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment opts = HurrayReaderOptions.allocate(a);
            hurray_h.hurray_reader_options_init(opts);
            return new long[] {
                Integer.toUnsignedLong(HurrayReaderOptions.max_rank(opts)),
                HurrayReaderOptions.max_descriptor_bytes(opts),
                HurrayReaderOptions.max_tensor_bytes(opts)
            };
        }
    }

    /**
     * Reads the next tensor ({@code hurray_reader_next_tensor}).
     *
     * @return a new owned {@code HurrayTensor*}, or {@code null} at the end-of-stream marker
     * @throws HurrayException for a failure; {@link Status#TRANSPORT} carries the source's
     *     exception as its cause and can be retried (the reader resumes mid-tensor)
     */
    public MemorySegment next() throws HurrayException {
        transport.clearFailure();
        int rc = hurray_h.hurray_reader_next_tensor(handle, slot);
        if (rc == Native.OK) {
            return slot.get(ADDRESS, 0);
        }
        if (rc == Native.END_OF_STREAM) {
            return null;
        }
        throw Native.error(rc, transport.takeFailure());
    }

    /**
     * Destroys the native reader (its release callback closes the source), then frees the
     * stubs. Idempotent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the source threw (the cause)
     */
    public void close() throws HurrayException {
        if (handle == null) {
            return;
        }
        MemorySegment h = handle;
        handle = null;
        slot.set(ADDRESS, 0, h);
        int rc = hurray_h.hurray_reader_destroy(slot);
        arena.close();
        Native.debug("hurray: reader {} destroyed", h);
        if (rc < 0) {
            throw Native.error(rc, null);
        }
        Throwable t = transport.closeFailure();
        if (t != null) {
            throw new HurrayException(Status.TRANSPORT, "closing the source failed", t);
        }
    }
}
