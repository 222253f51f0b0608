package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.HurrayTransport;
import dev.hurray.ffm.HurrayTransportReleaseFn;
import dev.hurray.ffm.HurrayTransportWriteFn;
import dev.hurray.ffm.HurrayWriterOptions;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native stream writer ({@code HurrayWriter*}) with its transport's upcall stubs and a
 * preallocated payload-slice array. The arena scheme is {@link NativeReader}'s: one shared
 * arena per writer, allocated at creation, closed right after {@code hurray_writer_destroy}.
 *
 * <p>Not thread-safe: the public {@code Writer} serialises access.
 */
public final class NativeWriter {
    /** Most payloads one tensor can have (the format's buffer-table limit). */
    public static final int MAX_PAYLOADS = 64;

    private final Arena arena;
    private final WriteTransport transport;
    private final MemorySegment slot;
    private final MemorySegment slices;
    private MemorySegment handle;

    private NativeWriter(Arena arena, WriteTransport transport, MemorySegment slot, MemorySegment slices, MemorySegment handle) {
        this.arena = arena;
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
        Arena arena = Arena.ofShared();
        try {
            MemorySegment t = HurrayTransport.allocate(arena);
            HurrayTransport.ctx(t, MemorySegment.NULL);
            HurrayTransport.write(t, HurrayTransportWriteFn.allocate(transport::upcall, arena));
            HurrayTransport.release(t, HurrayTransportReleaseFn.allocate(transport::upcallRelease, arena));
            MemorySegment opts = HurrayWriterOptions.allocate(arena);
            Native.check(hurray_h.hurray_writer_options_init(opts));
            HurrayWriterOptions.flags(opts, payloadChecksums ? hurray_h.HURRAY_WRITER_PAYLOAD_CHECKSUMS() : 0);
            MemorySegment slot = arena.allocate(ADDRESS);
            MemorySegment slices = HurrayIoSlice.allocateArray(MAX_PAYLOADS, arena);
            Native.check(hurray_h.hurray_writer_new(t, opts, slot));
            MemorySegment h = slot.get(ADDRESS, 0);
            Native.debug("hurray: writer {} created", h);
            return new NativeWriter(arena, transport, slot, slices, h);
        } catch (HurrayException | RuntimeException | Error e) {
            arena.close();
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
     * finished nor poisoned, and then closes the sink through the release callback), then frees
     * the stubs. Idempotent.
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
        arena.close();
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
