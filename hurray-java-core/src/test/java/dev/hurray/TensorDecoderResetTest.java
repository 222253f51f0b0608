package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link TensorDecoder#reset()} and {@link TensorDecoder#reset(ReaderOptions)}: one decoder, one stream per message. */
class TensorDecoderResetTest {

    private static byte[] stream(Tensor... ts) throws IOException {
        return TestSupport.stream(List.of(ts), WriterOptions.defaults());
    }

    /** Feeds a whole message and returns its only tensor. */
    private static Tensor one(TensorDecoder d, byte[] message) throws HurrayException {
        d.feed(MemorySegment.ofArray(message));
        d.endOfInput();
        Tensor t = d.next();
        assertNull(d.next());
        return t;
    }

    @Test
    void aResetDecoderSharesTheLastDescriptorWithTheNextStream() throws IOException {
        byte[] m1;
        byte[] m2;
        byte[] other;
        try (Tensor a = Tensor.of(new float[] {1, 2, 3}); Tensor b = Tensor.of(new float[] {4, 5, 6});
             Tensor c = Tensor.of(new int[] {7, 8, 9})) {
            m1 = stream(a);
            m2 = stream(b);
            other = stream(c);
        }
        try (TensorDecoder d = TensorDecoder.create()) {
            Tensor t1 = one(d, m1);
            d.reset();
            Tensor t2 = one(d, m2);
            d.reset();
            Tensor t3 = one(d, other);
            // Same descriptor bytes in two messages: one immutable descriptor; another shape: its own.
            assertSame(t1.descriptor(), t2.descriptor());
            assertNotSame(t2.descriptor(), t3.descriptor());
            assertArrayEquals(new float[] {1, 2, 3}, t1.toFloatArray());
            assertArrayEquals(new float[] {4, 5, 6}, t2.toFloatArray());
            assertArrayEquals(new int[] {7, 8, 9}, t3.toIntArray());
            t2.close();
            t3.close();
            t1.close();
        }
    }

    @Test
    void resetWithOptionsGivesTheNextStreamItsOwnLimits() throws IOException {
        byte[] small;
        byte[] big;
        try (Tensor s = Tensor.of(new float[16]); Tensor b = Tensor.of(new float[4096])) {
            small = stream(s);
            big = stream(b);
        }
        ReaderOptions tight = ReaderOptions.defaults().withMaxTensorBytes(1024);
        ReaderOptions loose = ReaderOptions.defaults().withMaxTensorBytes(1 << 20);
        long made;
        List<Tensor> kept = new ArrayList<>();
        try (TensorDecoder d = TensorDecoder.create(loose)) {
            kept.add(one(d, big));
            made = dev.hurray.internal.NativeReader.decodersMade();
            for (int round = 0; round < 3; round++) {
                d.reset(tight);
                HurrayException e = assertThrows(HurrayException.class, () -> one(d, big));
                assertEquals(Status.LIMIT_EXCEEDED, e.status());
                d.reset(tight); // the same limits again: a plain reset, the failure forgotten
                kept.add(one(d, small));
                d.reset(loose);
                kept.add(one(d, big));
            }
            // The scope and the pool cap are the decoder's own.
            assertThrows(IllegalArgumentException.class, () -> d.reset(loose.withTensorScope(TensorScope.SHARED)));
            assertThrows(IllegalArgumentException.class, () -> d.reset(loose.withBufferPoolBytes(1 << 20)));
            d.reset(loose);
            kept.add(one(d, small));
        }
        assertEquals(0, dev.hurray.internal.NativeReader.decodersMade() - made, "new limits make no native decoder");
        // Every tensor outlives the resets and the decoder, closed in any order.
        for (int i = kept.size() - 1; i >= 0; i--) {
            Tensor t = kept.get(i);
            assertEquals(t.descriptor().elementCount() == 16 ? 16 : 4096, t.toFloatArray().length);
            t.close();
        }
    }

    @Test
    void tensorsDecodedAheadAndNotTakenDoNotOutliveAReset() throws IOException {
        byte[] three;
        byte[] single;
        try (Tensor a = Tensor.of(new float[] {1}); Tensor b = Tensor.of(new float[] {2}); Tensor c = Tensor.of(new float[] {3})) {
            three = stream(a, b, c);
            single = stream(b);
        }
        try (TensorDecoder d = TensorDecoder.create()) {
            for (int i = 0; i < 1000; i++) {
                d.feed(MemorySegment.ofArray(three));
                try (Tensor first = d.next()) {
                    assertArrayEquals(new float[] {1}, first.toFloatArray());
                }
                d.reset(); // the other two were decoded in the same batch: destroyed here
                try (Tensor t = one(d, single)) {
                    assertArrayEquals(new float[] {2}, t.toFloatArray());
                }
                d.reset();
            }
        }
    }
}
