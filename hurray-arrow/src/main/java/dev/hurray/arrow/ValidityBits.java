package dev.hurray.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Scans of Arrow validity bitmaps (bit {@code i} is bit {@code i % 8}, least significant first,
 * of byte {@code i / 8}; set means valid). Whole bytes are compared with a block of set bits by
 * {@link MemorySegment#mismatch}, which the JDK runs many bytes at a time, so a column's bitmap
 * (one bit per element: 9.6 MB for 100,000 rows of 768) costs a pass at memory speed.
 */
final class ValidityBits {
    /** Set bits to compare against, a block at a time. */
    private static final MemorySegment ONES;

    static {
        byte[] ones = new byte[16 << 10];
        Arrays.fill(ones, (byte) -1);
        ONES = MemorySegment.ofArray(ones);
    }

    private ValidityBits() {
    }

    /**
     * The first clear bit among bits {@code [start, start + count)} of {@code bitmap}, or -1 when
     * all are set; a bit past the bitmap's last byte counts as clear.
     */
    static long firstClear(MemorySegment bitmap, long start, long count) {
        long end = start + count;
        long bits = bitmap.byteSize() * 8;
        long i = start;
        for (; i < end && (i & 7) != 0; i++) {
            if (!set(bitmap, bits, i)) {
                return i;
            }
        }
        while (end - i >= 8 && i < bits) { // whole bytes; i is a multiple of 8 here
            long from = i >> 3;
            long n = Math.min(Math.min((end - i) >> 3, bitmap.byteSize() - from), ONES.byteSize());
            long at = MemorySegment.mismatch(bitmap, from, from + n, ONES, 0, n);
            if (at >= 0) {
                int clear = ~bitmap.get(ValueLayout.JAVA_BYTE, from + at) & 0xFF;
                return ((from + at) << 3) + Integer.numberOfTrailingZeros(clear);
            }
            i += n << 3;
        }
        for (; i < end; i++) {
            if (!set(bitmap, bits, i)) {
                return i;
            }
        }
        return -1;
    }

    private static boolean set(MemorySegment bitmap, long bits, long i) {
        return i < bits && (bitmap.get(ValueLayout.JAVA_BYTE, i >> 3) & (1 << (i & 7))) != 0;
    }
}
