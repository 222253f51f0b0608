package dev.hurray.bench;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/** The deterministic byte pattern every harness sends, so smoke tests can check what arrived. */
public final class Payloads {
    private Payloads() {
    }

    /** The pattern's byte at offset {@code i}: not periodic at any power of two up to 2^31. */
    public static byte at(long i) {
        return (byte) (i * 131 + (i >>> 11) + 7);
    }

    /** Fills {@code seg} with the pattern from offset 0. */
    public static void fill(MemorySegment seg) {
        fill(seg, 0);
    }

    /** Fills {@code seg} with the pattern starting at pattern offset {@code start} (tensor {@code k} of a file uses its own start). */
    public static void fill(MemorySegment seg, long start) {
        for (long i = 0; i < seg.byteSize(); i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, at(start + i));
        }
    }

    /** Fills {@code buf} (position 0 to capacity) with the pattern; position and limit are left as they are. */
    public static void fill(ByteBuffer buf) {
        fill(MemorySegment.ofBuffer(buf.duplicate().clear()));
    }

    /**
     * The first offset where {@code seg} differs from the pattern, or -1 if it matches over its
     * whole length.
     */
    public static long mismatch(MemorySegment seg) {
        return mismatch(seg, 0);
    }

    /** As {@link #mismatch(MemorySegment)} for a segment filled from pattern offset {@code start}. */
    public static long mismatch(MemorySegment seg, long start) {
        for (long i = 0; i < seg.byteSize(); i++) {
            if (seg.get(ValueLayout.JAVA_BYTE, i) != at(start + i)) {
                return i;
            }
        }
        return -1;
    }

    /** Sum of the segment's native-order longs (a read of every byte, as a consumer would touch them). */
    public static long sumLongs(MemorySegment seg) {
        long sum = 0;
        long n = seg.byteSize() & ~7L;
        for (long i = 0; i < n; i += 8) {
            sum += seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i);
        }
        return sum;
    }
}
