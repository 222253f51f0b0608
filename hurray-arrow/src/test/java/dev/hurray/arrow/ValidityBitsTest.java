package dev.hurray.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The bitmap scan against a bit-by-bit reference, across byte and block boundaries and past the end. */
class ValidityBitsTest {

    /** The first clear bit of {@code [start, start + count)} one bit at a time; past the end is clear. */
    private static long reference(byte[] bitmap, long start, long count) {
        for (long i = start; i < start + count; i++) {
            if (i >= bitmap.length * 8L || (bitmap[(int) (i >> 3)] & (1 << (i & 7))) == 0) {
                return i;
            }
        }
        return -1;
    }

    private static long scan(byte[] bitmap, long start, long count) {
        MemorySegment copy = java.lang.foreign.Arena.ofAuto().allocate(Math.max(1, bitmap.length));
        MemorySegment.copy(bitmap, 0, copy, ValueLayout.JAVA_BYTE, 0, bitmap.length);
        return ValidityBits.firstClear(copy.asSlice(0, bitmap.length), start, count);
    }

    @Test
    void findsEachSingleClearBit() {
        int bytes = (16 << 10) * 2 + 37; // more than two comparison blocks, not a multiple of 8
        byte[] bitmap = new byte[bytes];
        Arrays.fill(bitmap, (byte) -1);
        long bits = bytes * 8L;
        long[] clears = {0, 1, 7, 8, 63, 64, 65, 8 * 1000 + 3, (16 << 10) * 8L - 1, (16 << 10) * 8L, (16 << 10) * 8L + 5,
            bits - 9, bits - 1};
        for (long c : clears) {
            bitmap[(int) (c >> 3)] &= (byte) ~(1 << (c & 7));
            for (long start : new long[] {0, 1, 5, 8, c > 3 ? c - 3 : 0, c, c + 1}) {
                for (long end : new long[] {c, c + 1, bits, bits + 12, Math.min(bits, c + 70)}) {
                    if (end < start) {
                        continue;
                    }
                    assertEquals(reference(bitmap, start, end - start), scan(bitmap, start, end - start),
                            "clear bit " + c + ", range [" + start + ", " + end + ")");
                }
            }
            bitmap[(int) (c >> 3)] = (byte) -1;
        }
        assertEquals(-1, scan(bitmap, 0, bits));
        assertEquals(bits, scan(bitmap, 3, bits), "past the last byte counts as clear");
        assertEquals(-1, scan(bitmap, 17, 0));
    }

    @Test
    void agreesWithTheReferenceOnRandomBitmaps() {
        Random r = new Random(24);
        for (int k = 0; k < 300; k++) {
            byte[] bitmap = new byte[r.nextInt(3 * (16 << 10))];
            Arrays.fill(bitmap, (byte) -1);
            for (int n = r.nextInt(4); n > 0 && bitmap.length > 0; n--) {
                int at = r.nextInt(bitmap.length);
                bitmap[at] = (byte) r.nextInt(256);
            }
            long bits = bitmap.length * 8L;
            long start = bits == 0 ? 0 : (long) (r.nextDouble() * bits);
            long count = (long) (r.nextDouble() * (bits - start + 20));
            assertEquals(reference(bitmap, start, count), scan(bitmap, start, count),
                    "bitmap of " + bitmap.length + " bytes, range [" + start + ", " + (start + count) + ")");
        }
    }
}
