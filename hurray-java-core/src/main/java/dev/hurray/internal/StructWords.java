package dev.hurray.internal;

/**
 * C structs handled as {@code long[]} words: built or read with plain array stores and loads,
 * then copied to or from native memory in one call (a fresh JVM interprets its first
 * thousands of tensors, where a segment access costs many times an array access). Offsets come
 * from the generated struct classes; words are little-endian, as on every platform the library
 * is built for.
 */
final class StructWords {
    static {
        if (java.nio.ByteOrder.nativeOrder() != java.nio.ByteOrder.LITTLE_ENDIAN) {
            throw new ExceptionInInitializerError("struct words are little-endian; this platform is big-endian");
        }
    }

    private StructWords() {
    }

    /** The word index of an 8-byte field (or the word count of a struct) at byte {@code offset}, which must be 8-aligned. */
    static int index(long offset) {
        if ((offset & 7) != 0) {
            throw new ExceptionInInitializerError("struct offset " + offset + " is not 8-aligned");
        }
        return (int) (offset >>> 3);
    }

    /** ORs the low {@code bytes} bytes of {@code value} into {@code w} at byte {@code offset} of the struct starting at word {@code base}. */
    static void put(long[] w, int base, long offset, long value, int bytes) {
        long mask = bytes == 8 ? -1L : (1L << (8 * bytes)) - 1;
        w[base + (int) (offset >>> 3)] |= (value & mask) << (8 * (offset & 7));
    }

    /** The {@code bytes} bytes (unsigned) at byte {@code offset} of {@code w}. */
    static long get(long[] w, long offset, int bytes) {
        long v = w[(int) (offset >>> 3)] >>> (8 * (offset & 7));
        return bytes == 8 ? v : v & ((1L << (8 * bytes)) - 1);
    }
}
