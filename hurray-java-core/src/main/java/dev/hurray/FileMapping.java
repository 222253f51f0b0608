package dev.hurray;

import dev.hurray.internal.NativeFileReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.FileChannel.MapMode;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The read-only memory map of a {@link HurrayFile#map mapped} file, shared by the file and
 * the tensors read from it: one reference for the file, one per open tensor; the last release
 * ends {@link #region()}. Either a map the native library made
 * ({@code hurray_file_reader_open_mapped}; the usual case), of which this holds one share (a
 * native buffer handle) while the reader and every tensor buffer pointing into it hold their
 * own, so the library unmaps only when the last of them goes; or one made by
 * {@link FileChannel#map(MapMode, long, long, Arena)} in a shared arena (platforms and file
 * systems the library cannot map). The Java segment over a native map ({@link #region()})
 * exists only once asked for, in a shared arena closed at the last release.
 */
final class FileMapping {
    private final Arena arena;
    /** The native buffer handle holding this mapping's share of a native map; 0 for a channel map. */
    private final long share;
    private final long address;
    private final long size;
    private final AtomicInteger refs = new AtomicInteger(1);
    /** Guarded by this: the segment {@link #region()} returns, and its arena (native map only). */
    private MemorySegment region;
    private Arena regionArena;
    private boolean released;

    /** A map made by a channel: {@code region} belongs to {@code arena}. */
    FileMapping(Arena arena, MemorySegment region) {
        this.arena = arena;
        this.share = 0;
        this.address = region.address();
        this.size = region.byteSize();
        this.region = region;
    }

    /** A native map: {@code {share handle, address, size}} from {@link NativeFileReader#mapping()}. */
    FileMapping(long[] nativeMap) {
        this.arena = null;
        this.share = nativeMap[0];
        this.address = nativeMap[1];
        this.size = nativeMap[2];
    }

    /** The whole map as a read-only segment, valid until the last release. */
    synchronized MemorySegment region() {
        if (region == null) {
            Arena a = released ? Arena.ofConfined() : Arena.ofShared();
            region = MemorySegment.ofAddress(address).reinterpret(size, a, null).asReadOnly();
            if (released) {
                a.close(); // asked for too late: a segment that throws IllegalStateException
            } else {
                regionArena = a;
            }
        }
        return region;
    }

    /** Called only while the file is open, so the count is at least 1. */
    void acquire() {
        refs.incrementAndGet();
    }

    void release() {
        if (refs.decrementAndGet() != 0) {
            return;
        }
        if (share == 0) {
            arena.close();
            return;
        }
        synchronized (this) {
            released = true;
            if (regionArena != null) {
                regionArena.close();
            }
        }
        NativeFileReader.destroyMapping(share);
    }
}
