package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.HurrayTransport;
import dev.hurray.ffm.HurrayWriterOptions;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native stream writer ({@code HurrayWriter*}) over a {@link WriteTransport}, with a
 * preallocated payload-slice array. The memory scheme is {@link NativeReader}'s: process-wide
 * upcall stubs, the transport in the transport table from creation until right after
 * {@code hurray_writer_destroy}, and the out-pointer slot and slice array in an automatic arena.
 *
 * <p>Not thread-safe: the public {@code Writer} serialises access.
 */
public final class NativeWriter {
    /** Most payloads one tensor can have (the format's buffer-table limit). */
    public static final int MAX_PAYLOADS = 64;

    private final WriteTransport transport;
    private final MemorySegment slot;
    private final MemorySegment slices;
    private MemorySegment handle;

    private NativeWriter(WriteTransport transport, MemorySegment slot, MemorySegment slices, MemorySegment handle) {
        this.transport = transport;
        this.slot = slot;
        this.slices = slices;
        this.handle = handle;
    }

    /**
     * Makes a native writer over {@code transport}; nothing is written yet.
     *
     * @param payloadChecksums follow every payload with its CRC32C
     */
    public static NativeWriter open(WriteTransport transport, boolean payloadChecksums) throws HurrayException {
        Arena auto = Arena.ofAuto();
        MemorySegment slot = auto.allocate(ADDRESS);
        MemorySegment slices = HurrayIoSlice.allocateArray(MAX_PAYLOADS, auto);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment t = HurrayTransport.allocate(arena);
            HurrayTransport.ctx(t, transport.register());
            HurrayTransport.write(t, WriteTransport.WRITE_STUB);
            HurrayTransport.release(t, Transport.RELEASE_STUB);
            MemorySegment opts = HurrayWriterOptions.allocate(arena);
            Native.check(hurray_h.hurray_writer_options_init(opts));
            HurrayWriterOptions.flags(opts, payloadChecksums ? hurray_h.HURRAY_WRITER_PAYLOAD_CHECKSUMS() : 0);
            Native.check(hurray_h.hurray_writer_new(t, opts, slot));
            MemorySegment h = slot.get(ADDRESS, 0);
            Native.debug("hurray: writer {} created", h);
            return new NativeWriter(transport, slot, slices, h);
        } catch (HurrayException | RuntimeException | Error e) {
            transport.unregister();
            throw e;
        }
    }

    /** The transport (for flushing). */
    public WriteTransport transport() {
        return transport;
    }

    /**
     * Writes one tensor ({@code hurray_writer_write_tensor}). The caller guarantees that every
     * payload is a live native segment for the duration of the call.
     *
     * @param descriptor a live native descriptor (owned or borrowed)
     * @param payloads native segments, one per buffer, at most {@link #MAX_PAYLOADS}
     */
    public void write(MemorySegment descriptor, MemorySegment[] payloads) throws HurrayException {
        for (int i = 0; i < payloads.length; i++) {
            MemorySegment s = HurrayIoSlice.asSlice(slices, i);
            HurrayIoSlice.ptr(s, payloads[i].byteSize() == 0 ? MemorySegment.NULL : payloads[i]);
            HurrayIoSlice.len(s, payloads[i].byteSize());
        }
        transport.clearFailure();
        int rc = hurray_h.hurray_writer_write_tensor(handle, descriptor, slices, payloads.length);
        if (rc < 0) {
            throw Native.error(rc, transport.takeFailure());
        }
    }

    /**
     * Writes a composite ({@code hurray_writer_write_composite}) from a live builder whose
     * payloads are live native segments for the duration of the call.
     */
    public void writeComposite(MemorySegment builder) throws HurrayException {
        transport.clearFailure();
        int rc = hurray_h.hurray_writer_write_composite(handle, builder);
        if (rc < 0) {
            throw Native.error(rc, transport.takeFailure());
        }
    }

    /** Writes the end-of-stream marker ({@code hurray_writer_finish}); idempotent after success. */
    public void finish() throws HurrayException {
        transport.clearFailure();
        int rc = hurray_h.hurray_writer_finish(handle);
        if (rc < 0) {
            throw Native.error(rc, transport.takeFailure());
        }
    }

    /**
     * Destroys the native writer (which writes the end marker first if the stream is neither
     * finished nor poisoned, and then closes the sink through the release callback), then takes
     * the transport out of the transport table. Idempotent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the sink threw (the cause)
     */
    public void close() throws HurrayException {
        if (handle == null) {
            return;
        }
        MemorySegment h = handle;
        handle = null;
        slot.set(ADDRESS, 0, h);
        transport.clearFailure();
        int rc = hurray_h.hurray_writer_destroy(slot);
        transport.unregister();
        Native.debug("hurray: writer {} destroyed", h);
        if (rc < 0) {
            throw Native.error(rc, null);
        }
        Throwable t = transport.closeFailure();
        if (t != null) {
            throw new HurrayException(Status.TRANSPORT, "closing the sink failed", t);
        }
    }
}
