package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayReaderOptions;
import dev.hurray.ffm.HurrayTransport;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native stream reader ({@code HurrayReader*}) over a {@link ReadTransport}.
 *
 * <p><b>Memory.</b> The upcall stubs are process-wide (see {@link Transport}); the transport is
 * entered in the transport table at creation and leaves it right after
 * {@code hurray_reader_destroy}, so the native reader can reach it exactly as long as it lives.
 * The transport struct and options are copied by {@code hurray_reader_new} and live in a
 * confined arena closed before {@link #open} returns; the one out-pointer slot used by every
 * call is in an automatic arena (freed by the garbage collector with this object), so that a
 * reader made on one thread can be used (one thread at a time) and closed on another without
 * the cost of a shared arena. Nothing is allocated per call.
 *
 * <p>Not thread-safe: the public {@code Reader} serialises access.
 */
public final class NativeReader {
    private final ReadTransport transport;
    private final MemorySegment slot;
    private MemorySegment handle;

    private NativeReader(ReadTransport transport, MemorySegment slot, MemorySegment handle) {
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
     * @param bufferPoolBytes cap in bytes of the reader's buffer pool
     *     ({@code hurray_reader_set_buffer_pool_bytes}); 0 for none
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for options the library refuses
     */
    public static NativeReader open(ReadTransport transport, int maxRank, long maxDescriptorBytes,
            long maxTensorBytes, boolean requirePayloadChecksums, long bufferPoolBytes) throws HurrayException {
        MemorySegment slot = Arena.ofAuto().allocate(ADDRESS);
        MemorySegment h;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment t = HurrayTransport.allocate(arena);
            HurrayTransport.ctx(t, transport.register());
            HurrayTransport.read(t, ReadTransport.READ_STUB);
            HurrayTransport.release(t, Transport.RELEASE_STUB);
            MemorySegment opts = HurrayReaderOptions.allocate(arena);
            Native.check(hurray_h.hurray_reader_options_init(opts));
            HurrayReaderOptions.max_rank(opts, maxRank);
            HurrayReaderOptions.max_descriptor_bytes(opts, maxDescriptorBytes);
            HurrayReaderOptions.max_tensor_bytes(opts, maxTensorBytes);
            HurrayReaderOptions.flags(opts, requirePayloadChecksums ? hurray_h.HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS() : 0);
            Native.check(hurray_h.hurray_reader_new(t, opts, slot));
            h = slot.get(ADDRESS, 0);
        } catch (HurrayException | RuntimeException | Error e) {
            transport.unregister();
            throw e;
        }
        if (bufferPoolBytes > 0) {
            int rc = hurray_h.hurray_reader_set_buffer_pool_bytes(h, bufferPoolBytes);
            if (rc < 0) {
                HurrayException e = Native.error(rc, null);
                // Destroy the reader without closing the source (the failure contract above).
                transport.forgetSource();
                hurray_h.hurray_reader_destroy(slot);
                transport.unregister();
                throw e;
            }
        }
        Native.debug("hurray: reader {} created", h);
        return new NativeReader(transport, slot, h);
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
     * Reads the next item ({@code hurray_reader_next_item}): a tensor or a whole composite.
     *
     * @return {@code {tensor, null}} or {@code {null, composite}} (owned handles), or
     *     {@code null} at the end-of-stream marker
     * @throws HurrayException as {@link #next()}; a {@code TRANSPORT} failure keeps the partial
     *     composite and the next call resumes
     */
    public MemorySegment[] nextItem() throws HurrayException {
        transport.clearFailure();
        MemorySegment s = Native.scratch();
        int rc = hurray_h.hurray_reader_next_item(handle, s, s.asSlice(8));
        if (rc == Native.OK) {
            MemorySegment t = s.get(ADDRESS, 0);
            MemorySegment c = s.get(ADDRESS, 8);
            return new MemorySegment[] {t.equals(MemorySegment.NULL) ? null : t, c.equals(MemorySegment.NULL) ? null : c};
        }
        if (rc == Native.END_OF_STREAM) {
            return null;
        }
        throw Native.error(rc, transport.takeFailure());
    }

    /**
     * Destroys the native reader (its release callback closes the source), then takes the
     * transport out of the transport table. Idempotent.
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
        transport.unregister();
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
