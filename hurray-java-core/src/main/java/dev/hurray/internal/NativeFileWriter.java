package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayFileWriterOptions;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.HurrayTransport;
import dev.hurray.ffm.HurrayTransportReleaseFn;
import dev.hurray.ffm.HurrayTransportWriteFn;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native container writer ({@code HurrayFileWriter*}; docs/spec/hrryfile.md §5, §8) with its
 * transport's upcall stubs and a preallocated payload-slice array. The arena scheme is
 * {@link NativeReader}'s: one shared arena per writer, allocated at creation, closed right
 * after {@code hurray_file_writer_destroy}.
 *
 * <p>Not thread-safe: the public {@code HurrayFileWriter} serialises access.
 */
public final class NativeFileWriter {
    private final Arena arena;
    private final WriteTransport transport;
    private final MemorySegment out;
    private final MemorySegment slices;
    private MemorySegment handle;

    private NativeFileWriter(Arena arena, WriteTransport transport, MemorySegment out, MemorySegment slices, MemorySegment handle) {
        this.arena = arena;
        this.transport = transport;
        this.out = out;
        this.slices = slices;
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
     * Makes a native container writer over {@code transport}; nothing is written yet. On
     * failure nothing is kept and the sink is not closed.
     *
     * @param payloadChecksums store each payload's CRC32C in the index
     * @param minPayloadAlignment every payload starts at a multiple of at least this many bytes
     * @throws HurrayException {@link Status#INVALID_ALIGNMENT} for a bad alignment
     */
    public static NativeFileWriter open(WriteTransport transport, boolean payloadChecksums, long minPayloadAlignment)
            throws HurrayException {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment t = HurrayTransport.allocate(arena);
            HurrayTransport.ctx(t, MemorySegment.NULL);
            HurrayTransport.write(t, HurrayTransportWriteFn.allocate(transport::upcall, arena));
            HurrayTransport.release(t, HurrayTransportReleaseFn.allocate(transport::upcallRelease, arena));
            MemorySegment opts = HurrayFileWriterOptions.allocate(arena);
            Native.check(hurray_h.hurray_file_writer_options_init(opts));
            HurrayFileWriterOptions.flags(opts, payloadChecksums ? 0 : hurray_h.HURRAY_FILE_WRITER_NO_PAYLOAD_CHECKSUMS());
            HurrayFileWriterOptions.min_payload_alignment(opts, minPayloadAlignment);
            MemorySegment out = arena.allocate(16, 8);
            MemorySegment slices = HurrayIoSlice.allocateArray(NativeWriter.MAX_PAYLOADS, arena);
            Native.check(hurray_h.hurray_file_writer_new(t, opts, out));
            MemorySegment h = out.get(ADDRESS, 0);
            Native.debug("hurray: file writer {} created", h);
            return new NativeFileWriter(arena, transport, out, slices, h);
        } catch (HurrayException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** The transport (for flushing). */
    public WriteTransport transport() {
        return transport;
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

    private void call(int rc) throws HurrayException {
        if (rc < 0) {
            throw Native.error(rc, transport.takeFailure());
        }
    }

    /**
     * Appends one tensor ({@code hurray_file_writer_add_tensor}). The caller guarantees that
     * every payload is a live native segment for the duration of the call.
     *
     * @param descriptor a live native descriptor (owned or borrowed) with a name
     * @param payloads native segments, one per buffer, at most {@link NativeWriter#MAX_PAYLOADS}
     */
    public void add(MemorySegment descriptor, MemorySegment[] payloads) throws HurrayException {
        MemorySegment h = live();
        for (int i = 0; i < payloads.length; i++) {
            MemorySegment s = HurrayIoSlice.asSlice(slices, i);
            HurrayIoSlice.ptr(s, payloads[i].byteSize() == 0 ? MemorySegment.NULL : payloads[i]);
            HurrayIoSlice.len(s, payloads[i].byteSize());
        }
        transport.clearFailure();
        call(hurray_h.hurray_file_writer_add_tensor(h, descriptor, slices, payloads.length));
    }

    /**
     * Adds a composite ({@code hurray_file_writer_add_composite}): the head under the builder's
     * name, members under {@code name/role}.
     */
    public void addComposite(MemorySegment builder) throws HurrayException {
        MemorySegment h = live();
        transport.clearFailure();
        call(hurray_h.hurray_file_writer_add_composite(h, builder));
    }

    /** Sets a file-level metadata entry ({@code hurray_file_writer_set_metadata}); both are copied. */
    public void setMetadata(byte[] key, byte[] value) throws HurrayException {
        MemorySegment h = live();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = key.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, key);
            MemorySegment v = value.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, value);
            transport.clearFailure();
            call(hurray_h.hurray_file_writer_set_metadata(h, k, key.length, v, value.length));
        }
    }

    /** Pushes staged bytes to the transport ({@code hurray_file_writer_flush}). */
    public void flush() throws HurrayException {
        MemorySegment h = live();
        transport.clearFailure();
        call(hurray_h.hurray_file_writer_flush(h));
    }

    /** Writes index, metadata and trailer ({@code hurray_file_writer_finish}); returns the file size in bytes. */
    public long finish() throws HurrayException {
        MemorySegment h = live();
        transport.clearFailure();
        call(hurray_h.hurray_file_writer_finish(h, out.asSlice(8)));
        return out.get(JAVA_LONG, 8);
    }

    /** Bytes the transport has accepted so far. */
    public long bytesWritten() throws HurrayException {
        Native.check(hurray_h.hurray_file_writer_bytes_written(live(), out.asSlice(8)));
        return out.get(JAVA_LONG, 8);
    }

    /** Tensors added so far. */
    public long tensorCount() throws HurrayException {
        Native.check(hurray_h.hurray_file_writer_tensor_count(live(), out.asSlice(8)));
        return out.get(JAVA_LONG, 8);
    }

    /**
     * Destroys the native writer (it does not finish the container; staged bytes are dropped)
     * and closes the sink through the release callback, then frees the stubs. Idempotent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the sink threw (the cause)
     */
    public void close() throws HurrayException {
        if (handle == null) {
            return;
        }
        MemorySegment h = handle;
        handle = null;
        out.set(ADDRESS, 0, h);
        transport.clearFailure();
        int rc = hurray_h.hurray_file_writer_destroy(out);
        arena.close();
        Native.debug("hurray: file writer {} destroyed", h);
        if (rc < 0) {
            throw Native.error(rc, null);
        }
        Throwable t = transport.closeFailure();
        if (t != null) {
            throw new HurrayException(Status.TRANSPORT, "closing the sink failed", t);
        }
    }
}
