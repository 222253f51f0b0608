package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.ffm.HurrayFileBufferLocation;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/**
 * Helpers over a native container entry ({@code HurrayFileEntry*}): ownership and field
 * accessors. The accessors borrow a scratch area from {@link ScratchPool} for their
 * out-parameters and never call back into Java.
 */
public final class NativeFileEntry {
    /** {@code HURRAY_FILE_BUFFER_HAS_CRC}. */
    public static final int HAS_CRC = hurray_h.HURRAY_FILE_BUFFER_HAS_CRC();
    private NativeFileEntry() {
    }

    /**
     * Binds an owned entry pointer to an automatic arena whose cleanup destroys it
     * ({@code hurray_file_entry_destroy}) once the returned segment is unreachable. A cleaner
     * registration per entry, and a free that waits for a garbage collection: for entries
     * nobody else owns (see {@link Owned}).
     */
    public static MemorySegment own(MemorySegment raw) {
        return raw.reinterpret(Arena.ofAuto(), NativeFileEntry::destroyQuietly);
    }

    /** Destroys an owned entry pointer now, on this thread. */
    public static void destroy(MemorySegment raw) {
        ScratchPool.destroyThroughSlot(raw, hurray_h::hurray_file_entry_destroy);
    }

    /**
     * Entry pointers owned by one file and destroyed together when it closes: at most
     * {@code capacity} of them, so a file used for a long time holds a bounded number. Cheaper
     * than {@link #own} (no cleaner registration; the memory comes back at once, not after a
     * garbage collection). Thread-safe; {@link #destroyAll} may run on the cleaner thread.
     */
    public static final class Owned {
        private final int capacity;
        private long[] addresses = new long[4];
        private int size;
        private boolean closed;

        /** @param capacity the most entries held */
        public Owned(int capacity) {
            this.capacity = capacity;
        }

        /** How many entries are held now. */
        public synchronized int size() {
            return size;
        }

        /** Takes {@code raw}; false (nothing taken) when full or already destroyed. */
        public synchronized boolean add(MemorySegment raw) {
            if (closed || size == capacity) {
                return false;
            }
            if (size == addresses.length) {
                addresses = java.util.Arrays.copyOf(addresses, Math.min(capacity, size * 2));
            }
            addresses[size++] = raw.address();
            return true;
        }

        /** Destroys every entry taken; later {@link #add} calls take nothing. Idempotent. */
        public synchronized void destroyAll() {
            closed = true;
            if (size == 0) {
                return;
            }
            // A lent area serves any thread, the cleaner's included (the destroy never reaches Java).
            MemorySegment slot = ScratchPool.borrow();
            try {
                for (int i = 0; i < size; i++) {
                    slot.set(ADDRESS, 0, MemorySegment.ofAddress(addresses[i]));
                    hurray_h.hurray_file_entry_destroy(slot);
                }
            } finally {
                ScratchPool.giveBack(slot);
            }
            size = 0;
            addresses = new long[0];
        }
    }

    /** The cleanup, on the cleaner thread, through a slot in a lent area (no allocation). */
    private static void destroyQuietly(MemorySegment entry) {
        ScratchPool.destroyThroughSlot(entry, hurray_h::hurray_file_entry_destroy);
    }

    /** The entry's position in the name-sorted index. */
    public static long index(MemorySegment entry) throws HurrayException {
        return ScratchPool.outLong(s -> hurray_h.hurray_file_entry_index(entry, s));
    }

    /** The entry's name. */
    public static String name(MemorySegment entry) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            Native.check(hurray_h.hurray_file_entry_name(entry, s, s.asSlice(8)));
            long len = s.get(JAVA_LONG, 8);
            return new String(s.get(ADDRESS, 0).reinterpret(len).toArray(JAVA_BYTE), StandardCharsets.UTF_8);
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /** The entry's borrowed descriptor, valid while the entry lives; never destroy it. */
    public static MemorySegment descriptor(MemorySegment entry) throws HurrayException {
        return ScratchPool.outAddress(s -> hurray_h.hurray_file_entry_descriptor(entry, s));
    }

    /** The number of payloads. */
    public static int bufferCount(MemorySegment entry) throws HurrayException {
        return (int) ScratchPool.outLong(s -> hurray_h.hurray_file_entry_buffer_count(entry, s));
    }

    /**
     * Where payload {@code buffer} lies: {offset, length, alignment, crc32c, flags} (offset and
     * length in bytes; crc32c and flags as unsigned 32-bit values).
     */
    public static long[] buffer(MemorySegment entry, int buffer) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            Native.check(hurray_h.hurray_file_entry_buffer(entry, buffer, s));
            return new long[] {
                HurrayFileBufferLocation.offset(s),
                HurrayFileBufferLocation.length(s),
                Integer.toUnsignedLong(HurrayFileBufferLocation.alignment(s)),
                Integer.toUnsignedLong(HurrayFileBufferLocation.crc32c(s)),
                Integer.toUnsignedLong(HurrayFileBufferLocation.flags(s))
            };
        } finally {
            ScratchPool.giveBack(s);
        }
    }
}
