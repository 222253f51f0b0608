package dev.hurray.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** The library's shared copy helpers ({@link Native#copy}, {@link Native#words}) keep the checks of the JDK copies they wrap. */
class NativeCopyTest {
    @Test
    void copyMovesTheRangeAndRefusesWhatTheJdkCopyRefuses() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment src = a.allocate(16);
            MemorySegment dst = a.allocate(16);
            for (int i = 0; i < 16; i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i + 1));
            }
            Native.copy(src, 4, dst, 2, 8);
            assertEquals(5, dst.get(ValueLayout.JAVA_BYTE, 2));
            assertEquals(12, dst.get(ValueLayout.JAVA_BYTE, 9));
            assertEquals(0, dst.get(ValueLayout.JAVA_BYTE, 10));
            Native.copy(src, 99, dst, 99, 0); // nothing to copy: no bounds to check
            assertThrows(IndexOutOfBoundsException.class, () -> Native.copy(src, 0, dst, 0, -1));
            assertThrows(IndexOutOfBoundsException.class, () -> Native.copy(src, 10, dst, 0, 8));
            Arena closing = Arena.ofConfined();
            MemorySegment closed = closing.allocate(8);
            closing.close();
            assertThrows(IllegalStateException.class, () -> Native.copy(closed, 0, dst, 0, 8));
        }
    }

    @Test
    void wordsReadsNativeWordsAndRefusesACountOverTheArray() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(32, 8);
            for (int i = 0; i < 4; i++) {
                s.set(ValueLayout.JAVA_LONG, 8L * i, 100L + i);
            }
            long[] into = new long[4];
            Native.words(s.address(), into, 3);
            assertArrayEquals(new long[] {100, 101, 102, 0}, into);
            Native.words(s.address(), into, 0);
            assertThrows(IndexOutOfBoundsException.class, () -> Native.words(s.address(), into, 5));
            assertThrows(IndexOutOfBoundsException.class, () -> Native.words(s.address(), into, -1));
        }
    }
}
