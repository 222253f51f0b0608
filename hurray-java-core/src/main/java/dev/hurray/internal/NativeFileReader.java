package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayFileRead;
import dev.hurray.ffm.HurrayFileReaderOptions;
import dev.hurray.ffm.hurray_h;
import java.io.Closeable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A native container reader ({@code HurrayFileReader*}; docs/spec/hrryfile.md §4, §8) over a
 * file the library opens and reads itself ({@code hurray_file_reader_open_path}), over a
 * {@link FileChannel} that this class reads for it ({@code hurray_file_reader_new_ranges}), or
 * over a caller's memory region ({@code hurray_file_reader_open_span}).
 *
 * <p><b>No upcalls.</b> Over a channel, every native call that needs bytes it was not given
 * returns {@code HURRAY_NEED_INPUT}; this class then reads the range the reader names with a
 * positional {@link FileChannel#read(ByteBuffer, long)} in Java, outside any native frame,
 * straight into the native destination (for a tensor's payload, the tensor's own allocation),
 * supplies the count and repeats the call (docs/spec/c-abi.md §Containers without a
 * transport). A virtual thread blocked on the channel unmounts from its carrier, and a channel
 * that throws cannot unwind through native code: its exception becomes the cause of a
 * {@link Status#TRANSPORT} failure, and the native reader is unchanged, so the call can be
 * repeated. A channel that failed fatally ({@link HurrayException#isRetryableCause}) reports
 * that failure again on every later read.
 *
 * <p><b>Memory.</b> A reader over a path or a span runs no Java code during its calls. It holds
 * an area lent by {@link ScratchPool#FILE_READERS} from open to close for its out-parameters,
 * options and names, so its calls borrow nothing; when every kept area of that pool is held
 * (many readers open at once), each of its calls borrows an area from {@link ScratchPool} for
 * the call instead (the scratch rule in {@link Native}). Either way opening one allocates
 * nothing in Java but this object, and the areas follow the readers or calls in progress, not
 * the threads. A reader over a channel runs the channel's code between its downcalls, so it
 * has an area of its own: out-parameters, the pending-read struct and a name buffer (one
 * allocation) in an automatic arena, freed by the garbage collector with this object, so a
 * reader made on one thread can be used (one thread at a time) and closed on another without a
 * shared arena, whose close is a handshake with every Java thread. Nothing is allocated per
 * call except for names and keys longer than the name buffer.
 *
 * <p><b>Entries.</b> {@link #entry} and {@link #find} return owned {@code HurrayFileEntry*}
 * pointers: the caller destroys them ({@link NativeFileEntry#destroy}), hands them to a
 * {@link NativeFileEntry.Owned} set, or binds them to an automatic arena
 * ({@link NativeFileEntry#own}). Entries are plain data, independent of the reader, so any
 * thread may destroy them.
 *
 * <p>Not thread-safe: the public {@code HurrayFile} serialises access.
 */
public final class NativeFileReader {
    /** {@code HURRAY_NEED_INPUT}: a channel reader's call wants a range read first. */
    private static final int NEED_INPUT = hurray_h.HURRAY_NEED_INPUT();
    /** Bytes of the reusable name/key buffer (names are at most 4096 bytes). */
    private static final long NAME_BYTES = 4096;
    /** Bytes of the out-parameter area (up to four 8-byte results), as a lent area's {@code slots}. */
    private static final long OUT_BYTES = Native.SLOTS_BYTES;

    /** How many readers were opened over a Java channel since the process started (for tests). */
    private static final java.util.concurrent.atomic.AtomicLong CHANNEL_READERS = new java.util.concurrent.atomic.AtomicLong();

    /** The channel this class reads for the native reader; null for a path or span reader. */
    private final FileChannel channel;
    /** Closes the channel's owner at {@link #close()}, or null. */
    private final Closeable onClose;
    /** The reader's own out-parameter slots and name buffer; null when each call borrows an area from {@link ScratchPool}. */
    private final MemorySegment ownOut;
    private final MemorySegment ownNameBuf;
    /** A channel reader's pending-read struct; null for a path or span reader. */
    private final MemorySegment pendingRead;
    /** The area lent by {@link ScratchPool#FILE_READERS}, given back when the native reader goes; null if none. */
    private MemorySegment lent;
    /** The channel's first fatal failure, reported again by every later read. */
    private Throwable dead;
    private MemorySegment handle;
    private Leaks.Resource resource;

    /**
     * A reader over {@code channel} with its area from {@link #area()}; or, {@code channel}
     * null, over a path or span with {@code area} lent by {@link ScratchPool#FILE_READERS}, or
     * null to borrow per call.
     */
    private NativeFileReader(FileChannel channel, Closeable onClose, MemorySegment area, MemorySegment handle) {
        this.channel = channel;
        this.onClose = onClose;
        this.ownOut = area == null ? null : area.asSlice(0, OUT_BYTES);
        if (channel != null) {
            this.ownNameBuf = area.asSlice(OUT_BYTES, NAME_BYTES);
            this.pendingRead = area.asSlice(OUT_BYTES + NAME_BYTES, HurrayFileRead.sizeof());
        } else {
            this.ownNameBuf = area == null ? null : Native.textIn(area);
            this.pendingRead = null;
            this.lent = area;
        }
        this.handle = handle;
    }

    /**
     * How many readers were opened over a Java channel ({@link #open(FileChannel, Closeable, Settings)})
     * since the process started. Lets tests check that a path does not take the Java I/O route.
     */
    public static long channelReaders() {
        return CHANNEL_READERS.get();
    }

    /**
     * The out-parameter slots for one call (see the class comment on memory): the reader's own,
     * or an area lent for the call, which {@link #done} gives back.
     */
    private MemorySegment out() {
        return ownOut != null ? ownOut : ScratchPool.borrow();
    }

    /** Ends the use of {@code out} from {@link #out()}: a lent area goes back to the pool. */
    private void done(MemorySegment out) {
        if (out != ownOut) {
            ScratchPool.giveBack(out);
        }
    }

    /** The name buffer that goes with {@code out} from {@link #out()}: the reader's own, or the call's area's {@code text} part. */
    private MemorySegment nameBuf(MemorySegment out) {
        return out == ownOut ? ownNameBuf : Native.textIn(out);
    }

    /** The per-handle area: {@code OUT_BYTES} of out-parameters, the name buffer, the pending-read struct. */
    private static MemorySegment area() {
        return Arena.ofAuto().allocate(OUT_BYTES + NAME_BYTES + HurrayFileRead.sizeof(), 8);
    }

    /**
     * The reader settings as the native struct takes them.
     *
     * @param eagerIndexBytes index plus metadata up to this are read at open, bytes
     * @param maxDescriptorBytes largest encoded descriptor, bytes
     * @param maxTensorBytes largest tensor read into new memory, bytes
     * @param maxMetadataBytes largest file metadata block, bytes
     * @param maxIndexBytes largest index plus metadata {@code verify} loads, bytes
     * @param flags {@code HURRAY_FILE_READER_*}
     */
    public record Settings(long eagerIndexBytes, long maxDescriptorBytes, long maxTensorBytes,
            long maxMetadataBytes, long maxIndexBytes, int flags) {
        /** The native defaults ({@code hurray_file_reader_options_init}). */
        public static Settings defaults() {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment o = HurrayFileReaderOptions.allocate(a);
                hurray_h.hurray_file_reader_options_init(o);
                return new Settings(HurrayFileReaderOptions.eager_index_bytes(o),
                        HurrayFileReaderOptions.max_descriptor_bytes(o), HurrayFileReaderOptions.max_tensor_bytes(o),
                        HurrayFileReaderOptions.max_metadata_bytes(o), HurrayFileReaderOptions.max_index_bytes(o),
                        HurrayFileReaderOptions.flags(o));
            }
        }

        private MemorySegment toNative(Arena a) throws HurrayException {
            return fill(HurrayFileReaderOptions.allocate(a));
        }

        /** Writes these settings into {@code o}, a {@code HurrayFileReaderOptions}. */
        private MemorySegment fill(MemorySegment o) throws HurrayException {
            Native.check(hurray_h.hurray_file_reader_options_init(o));
            HurrayFileReaderOptions.flags(o, flags);
            HurrayFileReaderOptions.eager_index_bytes(o, eagerIndexBytes);
            HurrayFileReaderOptions.max_descriptor_bytes(o, maxDescriptorBytes);
            HurrayFileReaderOptions.max_tensor_bytes(o, maxTensorBytes);
            HurrayFileReaderOptions.max_metadata_bytes(o, maxMetadataBytes);
            HurrayFileReaderOptions.max_index_bytes(o, maxIndexBytes);
            return o;
        }
    }

    /**
     * Opens a container read through {@code channel} ({@code hurray_file_reader_new_ranges},
     * then {@code _open_ranges}): one {@link FileChannel#size()} call and at most three
     * positional reads, made here between downcalls. On failure nothing is kept and the channel
     * is not closed.
     *
     * @param onClose closed by {@link #close()} (the channel, usually), or null
     * @throws HurrayException the native status; {@link Status#TRANSPORT} carries the channel's
     *     exception as its cause
     */
    public static NativeFileReader open(FileChannel channel, Closeable onClose, Settings settings) throws HurrayException {
        long size;
        try {
            size = channel.size();
        } catch (IOException | RuntimeException e) {
            throw new HurrayException(Status.TRANSPORT, "the channel's size could not be read", e);
        }
        MemorySegment area = area();
        MemorySegment out = area.asSlice(0, OUT_BYTES);
        try (Arena arena = Arena.ofConfined()) {
            Native.check(hurray_h.hurray_file_reader_new_ranges(size, settings.toNative(arena), out));
        }
        NativeFileReader r = new NativeFileReader(channel, onClose, area, out.get(ADDRESS, 0));
        try {
            r.call(() -> hurray_h.hurray_file_reader_open_ranges(r.handle));
        } catch (HurrayException | RuntimeException | Error e) {
            r.destroyNative();
            throw e;
        }
        CHANNEL_READERS.incrementAndGet();
        return r;
    }

    /**
     * Opens the container in the file at {@code path} ({@code hurray_file_reader_open_path}):
     * the library opens the file and reads it with its own positional reads, so neither open
     * nor any later read calls back into Java.
     *
     * @param path the file's name as the operating system takes it (no NUL)
     * @throws HurrayException the native status: {@link Status#NOT_FOUND} for a missing file,
     *     {@link Status#TRANSPORT} for other operating-system failures (the message names
     *     them), {@link Status#INVALID_ARGUMENT} for a directory or other non-regular file,
     *     and the container's own errors
     */
    public static NativeFileReader openPath(byte[] path, Settings settings) throws HurrayException {
        return openByPath(path, settings, false);
    }

    /**
     * Opens the container at {@code path} by having the native library map the whole file
     * read-only and read it there ({@code hurray_file_reader_open_mapped}): tensors point into
     * the map, which the library unmaps once this reader and every such tensor are destroyed.
     *
     * @throws HurrayException as {@link #openPath}, and {@link Status#UNSUPPORTED} where the
     *     library has no memory map for the platform
     */
    public static NativeFileReader openMapped(byte[] path, Settings settings) throws HurrayException {
        return openByPath(path, settings, true);
    }

    private static NativeFileReader openByPath(byte[] path, Settings settings, boolean mapped) throws HurrayException {
        // No Java code runs during these calls, so a lent area may hold everything: the
        // reader's own when one is free, else one for the open.
        MemorySegment lent = ScratchPool.FILE_READERS.lendKept();
        MemorySegment s = lent != null ? lent : ScratchPool.borrow();
        MemorySegment h;
        try {
            MemorySegment opts = settings.fill(Native.optionsIn(s));
            MemorySegment name = Native.textIn(s);
            int rc;
            if (path.length <= name.byteSize()) {
                MemorySegment.copy(path, 0, name, JAVA_BYTE, 0, path.length);
                rc = mapped ? hurray_h.hurray_file_reader_open_mapped(name, path.length, opts, s)
                        : hurray_h.hurray_file_reader_open_path(name, path.length, opts, s);
            } else {
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment p = a.allocateFrom(JAVA_BYTE, path);
                    rc = mapped ? hurray_h.hurray_file_reader_open_mapped(p, path.length, opts, s)
                            : hurray_h.hurray_file_reader_open_path(p, path.length, opts, s);
                }
            }
            Native.check(rc);
            h = s.get(ADDRESS, 0);
        } catch (HurrayException | RuntimeException | Error e) {
            if (lent != null) {
                ScratchPool.FILE_READERS.takeBack(lent);
            }
            throw e;
        } finally {
            if (lent == null) {
                ScratchPool.giveBack(s);
            }
        }
        return new NativeFileReader(null, null, lent, h);
    }

    /**
     * The whole memory map of a reader made by {@link #openMapped}, as a new owned native
     * buffer handle ({@code hurray_file_reader_mapping}) that keeps the map alive until it is
     * destroyed with {@link #destroyMapping}; its address and size come with it.
     *
     * @return {@code {handle address, data address, byte size}}
     */
    public long[] mapping() throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            Native.check(hurray_h.hurray_file_reader_mapping(live(), s));
            MemorySegment b = s.get(ADDRESS, 0);
            Native.check(hurray_h.hurray_buffer_data_ptr(b, s));
            long data = s.get(ADDRESS, 0).address();
            Native.check(hurray_h.hurray_buffer_byte_size(b, s));
            return new long[] {b.address(), data, s.get(JAVA_LONG, 0)};
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /** Destroys a buffer handle from {@link #mapping()}: its share of the map goes. */
    public static void destroyMapping(long handle) {
        Native.destroyThroughSlot(MemorySegment.ofAddress(handle), hurray_h::hurray_buffer_destroy);
    }

    /**
     * Opens a container held in {@code region} ({@code hurray_file_reader_open_span}). The
     * caller keeps the region mapped and unchanged until this reader and every tensor read
     * from it are destroyed.
     *
     * @param region the container's bytes (native; may be {@link MemorySegment#NULL} when
     *     {@code length} is 0)
     * @param length the region's length in bytes
     */
    public static NativeFileReader openSpan(MemorySegment region, long length, Settings settings) throws HurrayException {
        // The raw address: the region's lifetime is managed by the caller (see above).
        MemorySegment data = length == 0 ? MemorySegment.NULL : MemorySegment.ofAddress(region.address());
        // As for a path: the reader's own lent area when one is free, else one for the open.
        MemorySegment lent = ScratchPool.FILE_READERS.lendKept();
        MemorySegment s = lent != null ? lent : ScratchPool.borrow();
        MemorySegment h;
        try {
            MemorySegment opts = settings.fill(Native.optionsIn(s));
            Native.check(hurray_h.hurray_file_reader_open_span(data, length, opts, s));
            h = s.get(ADDRESS, 0);
        } catch (HurrayException | RuntimeException | Error e) {
            if (lent != null) {
                ScratchPool.FILE_READERS.takeBack(lent);
            }
            throw e;
        } finally {
            if (lent == null) {
                ScratchPool.giveBack(s);
            }
        }
        return new NativeFileReader(null, null, lent, h);
    }

    /**
     * Sets the cap in bytes of the reader's buffer pool ({@code
     * hurray_file_reader_set_buffer_pool_bytes}; 0 removes it). A span reader ignores it.
     *
     * @throws HurrayException on a native failure
     */
    public void setBufferPoolBytes(long maxBytes) throws HurrayException {
        Native.check(hurray_h.hurray_file_reader_set_buffer_pool_bytes(live(), maxBytes));
    }

    private MemorySegment live() {
        MemorySegment h = handle;
        if (h == null) {
            throw new IllegalStateException("the container reader is closed");
        }
        return h;
    }

    /**
     * Runs {@code op} (a native reader call) until it stops asking for input: after each
     * {@code HURRAY_NEED_INPUT} reads the range the reader names from the channel and supplies
     * it. Returns the last status.
     */
    private int run(java.util.function.IntSupplier op) throws HurrayException {
        int rc = op.getAsInt();
        while (rc == NEED_INPUT) {
            supplyPendingRead();
            rc = op.getAsInt();
        }
        return rc;
    }

    private void call(java.util.function.IntSupplier op) throws HurrayException {
        call(run(op));
    }

    private void call(int rc) throws HurrayException {
        if (rc < 0) {
            throw Native.error(rc, null);
        }
    }

    /**
     * Reads the range of the last {@code HURRAY_NEED_INPUT} with one positional read into its
     * native destination and supplies the count (fewer bytes than asked are fine; the end of
     * the channel supplies 0). A failing read supplies nothing: the native reader is unchanged.
     */
    private void supplyPendingRead() throws HurrayException {
        MemorySegment h = live();
        Native.check(hurray_h.hurray_file_reader_pending_read(h, pendingRead));
        long offset = HurrayFileRead.offset(pendingRead);
        long len = Math.min(HurrayFileRead.len(pendingRead), Source.MAX_CHANNEL_TRANSFER);
        long n;
        try {
            if (dead != null) {
                throw dead;
            }
            if (offset < 0) {
                throw new IOException("a read beyond 2^63 bytes (offset " + Long.toUnsignedString(offset) + ")");
            }
            ByteBuffer dst = Native.view(HurrayFileRead.dst(pendingRead), len).asByteBuffer();
            n = Math.max(0, channel.read(dst, offset));
        } catch (Throwable e) { // whatever the channel threw is its failure: the cause, never lost
            if (dead == null && !HurrayException.isRetryableCause(e)) {
                dead = e;
            }
            throw new HurrayException(Status.TRANSPORT, "reading " + len + " bytes at offset " + offset
                    + " of the channel failed: " + e, e);
        }
        Native.check(hurray_h.hurray_file_reader_supply(h, n));
    }

    /** Calls {@code call} with this call's out-parameter slots, checks its status and returns the {@code uint64_t} it wrote. */
    private long outLong(java.util.function.ToIntFunction<MemorySegment> call) throws HurrayException {
        MemorySegment out = out();
        try {
            Native.check(call.applyAsInt(out));
            return out.get(JAVA_LONG, 0);
        } finally {
            done(out);
        }
    }

    /** The container's size in bytes. */
    public long size() throws HurrayException {
        return outLong(out -> hurray_h.hurray_file_reader_size(live(), out));
    }

    /** The number of tensors. */
    public long count() throws HurrayException {
        return outLong(out -> hurray_h.hurray_file_reader_count(live(), out));
    }

    /** The number of {@code read_at} calls made so far, open included (span: index copies). */
    public long readAtCalls() throws HurrayException {
        return outLong(out -> hurray_h.hurray_file_reader_read_at_calls(live(), out));
    }

    /** The name of entry {@code index} ({@code hurray_file_reader_name}); decodes no descriptor. */
    public String name(long index) throws HurrayException {
        MemorySegment h = live();
        MemorySegment out = out();
        try {
            MemorySegment nameBuf = nameBuf(out);
            int rc = run(() -> hurray_h.hurray_file_reader_name(h, index, nameBuf, nameBuf.byteSize(), out));
            if (rc == Native.ERR_BUFFER_TOO_SMALL) {
                // Names are at most 4096 bytes; a lent area's name buffer holds 3 KiB.
                long len = out.get(JAVA_LONG, 0);
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment big = a.allocate(Math.max(1, len));
                    call(() -> hurray_h.hurray_file_reader_name(h, index, big, big.byteSize(), out));
                    return utf8(big, out.get(JAVA_LONG, 0));
                }
            }
            call(rc);
            return utf8(nameBuf, out.get(JAVA_LONG, 0));
        } finally {
            done(out);
        }
    }

    /** Entry {@code index} in name order ({@code hurray_file_reader_entry}): an owned pointer (see the class comment). */
    public MemorySegment entry(long index) throws HurrayException {
        MemorySegment h = live();
        return callForAddress(out -> hurray_h.hurray_file_reader_entry(h, index, out));
    }

    /** Makes call {@code op} with this call's out-parameter slots as {@link #call} does; returns the pointer it wrote. */
    private MemorySegment callForAddress(java.util.function.ToIntFunction<MemorySegment> op) throws HurrayException {
        MemorySegment out = out();
        try {
            call(() -> op.applyAsInt(out));
            return out.get(ADDRESS, 0);
        } finally {
            done(out);
        }
    }

    /**
     * The entry named by {@code name} ({@code hurray_file_reader_find}, a binary search): an
     * owned pointer (see the class comment), or {@code null} when there is none.
     */
    public MemorySegment find(byte[] name) throws HurrayException {
        MemorySegment h = live();
        MemorySegment out = out();
        try {
            MemorySegment nameBuf = nameBuf(out);
            int rc;
            if (name.length <= nameBuf.byteSize()) {
                MemorySegment.copy(name, 0, nameBuf, JAVA_BYTE, 0, name.length);
                rc = run(() -> hurray_h.hurray_file_reader_find(h, nameBuf, name.length, out));
            } else {
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment n = a.allocateFrom(JAVA_BYTE, name);
                    rc = run(() -> hurray_h.hurray_file_reader_find(h, n, name.length, out));
                }
            }
            if (rc == hurray_h.HURRAY_ERR_NOT_FOUND()) {
                return null;
            }
            call(rc);
            return out.get(ADDRESS, 0);
        } finally {
            done(out);
        }
    }

    /**
     * Checks every stored payload CRC32C in windows of at most 1 MiB (in place over a span),
     * whatever payload checks this reader was opened with, then reads and checks each sparse or
     * paged tensor ({@code hurray_file_reader_verify_payloads}).
     */
    public void verifyPayloads() throws HurrayException {
        MemorySegment h = live();
        call(() -> hurray_h.hurray_file_reader_verify_payloads(h));
    }

    /** Reads the tensor of {@code entry} ({@code hurray_file_reader_read_tensor}): an owned {@code HurrayTensor*}. */
    public MemorySegment readTensor(MemorySegment entry) throws HurrayException {
        MemorySegment h = live();
        return callForAddress(out -> hurray_h.hurray_file_reader_read_tensor(h, entry, out));
    }

    /**
     * Reads the composite stored under {@code name} ({@code hurray_file_reader_read_composite}):
     * an owned {@code HurrayComposite*}.
     */
    public MemorySegment readComposite(byte[] name) throws HurrayException {
        MemorySegment h = live();
        MemorySegment out = out();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment n = name.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, name);
            call(() -> hurray_h.hurray_file_reader_read_composite(h, n, name.length, out));
            return out.get(ADDRESS, 0);
        } finally {
            done(out);
        }
    }

    /**
     * Reads payload {@code buffer} of {@code entry} into {@code dst}
     * ({@code hurray_file_reader_read_buffer_into}).
     *
     * @return the payload's length in bytes
     */
    public long readBufferInto(MemorySegment entry, long buffer, MemorySegment dst) throws HurrayException {
        MemorySegment h = live();
        MemorySegment out = out();
        try {
            call(() -> hurray_h.hurray_file_reader_read_buffer_into(h, entry, buffer, dst, dst.byteSize(), out));
            return out.get(JAVA_LONG, 0);
        } finally {
            done(out);
        }
    }

    /** The file-level metadata in key order, values copied ({@code hurray_file_reader_metadata_*}). */
    public List<Map.Entry<String, byte[]>> metadata() throws HurrayException {
        MemorySegment h = live();
        MemorySegment out = out();
        try {
            call(() -> hurray_h.hurray_file_reader_metadata_count(h, out));
            long n = out.get(JAVA_LONG, 0);
            List<Map.Entry<String, byte[]>> list = new ArrayList<>((int) Math.min(n, 1 << 16));
            for (long i = 0; i < n; i++) {
                long k = i;
                call(() -> hurray_h.hurray_file_reader_metadata_get(h, k, out, out.asSlice(8), out.asSlice(16), out.asSlice(24)));
                String key = utf8(out.get(ADDRESS, 0), out.get(JAVA_LONG, 8));
                byte[] value = copy(out.get(ADDRESS, 16), out.get(JAVA_LONG, 24));
                list.add(new AbstractMap.SimpleImmutableEntry<>(key, value));
            }
            return list;
        } finally {
            done(out);
        }
    }

    /** The value of metadata {@code key} (copied), or {@code null} when absent. */
    public byte[] metadataValue(byte[] key) throws HurrayException {
        MemorySegment h = live();
        MemorySegment out = out();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = key.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, key);
            int rc = run(() -> hurray_h.hurray_file_reader_metadata_find(h, k, key.length, out, out.asSlice(8)));
            if (rc == hurray_h.HURRAY_ERR_NOT_FOUND()) {
                return null;
            }
            call(rc);
            return copy(out.get(ADDRESS, 0), out.get(JAVA_LONG, 8));
        } finally {
            done(out);
        }
    }

    /** Checks the whole index ({@code hurray_file_reader_verify}); reads no payload. */
    public void verify() throws HurrayException {
        MemorySegment h = live();
        call(() -> hurray_h.hurray_file_reader_verify(h));
    }

    /** Checks every composite's structure from the index ({@code hurray_file_reader_check_composites}). */
    public void checkComposites() throws HurrayException {
        MemorySegment h = live();
        call(() -> hurray_h.hurray_file_reader_check_composites(h));
    }

    private static String utf8(MemorySegment p, long len) {
        return new String(copy(p, len), StandardCharsets.UTF_8);
    }

    private static byte[] copy(MemorySegment p, long len) {
        return len == 0 ? new byte[0] : Native.bytes(p, len);
    }

    /**
     * Destroys the native reader, then closes the channel's owner. Idempotent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the source threw (the cause)
     */
    public void close() throws HurrayException {
        if (handle == null) {
            return;
        }
        MemorySegment h = handle;
        if (resource != null && !resource.disarm()) {
            // The leak cleaner ran first (the owner became unreachable during its own close):
            // it destroyed the reader and gave its area back already; doing either again would
            // free them twice.
            handle = null;
            lent = null;
            return;
        }
        int rc = destroyNative();
        Throwable t = null;
        if (onClose != null) {
            try {
                onClose.close();
            } catch (IOException | RuntimeException e) {
                t = e;
            }
        }
        if (rc < 0) {
            throw Native.error(rc, null);
        }
        if (t != null) {
            throw new HurrayException(Status.TRANSPORT, "closing the source failed", t);
        }
    }

    /** Destroys the native reader (not the channel) and gives a lent area back; returns the status. */
    private int destroyNative() {
        MemorySegment out = out();
        try {
            out.set(ADDRESS, 0, handle);
            handle = null;
            return hurray_h.hurray_file_reader_destroy(out);
        } finally {
            done(out);
            MemorySegment area = lent;
            if (area != null) {
                lent = null; // nothing of this reader touches it after
                ScratchPool.FILE_READERS.takeBack(area);
            }
        }
    }

    /**
     * Lets the leak cleaner destroy the native reader (and close the channel's owner) once
     * {@code owner} (the public file) is unreachable without having been closed; {@code also}
     * runs after that (releasing a mapping), or is null. See {@link Leaks}.
     */
    public void watch(Object owner, Runnable also) {
        MemorySegment h = handle;
        Closeable c = onClose;
        MemorySegment area = lent;
        resource = Leaks.track(owner, "HurrayFile", () -> {
            ScratchPool.destroyThroughSlot(h, hurray_h::hurray_file_reader_destroy);
            if (area != null) {
                ScratchPool.FILE_READERS.takeBack(area);
            }
            if (c != null) {
                try {
                    c.close();
                } catch (IOException | RuntimeException ignored) {
                    // nobody is left to tell: the owner was dropped without close()
                }
            }
            if (also != null) {
                also.run();
            }
        });
    }
}
