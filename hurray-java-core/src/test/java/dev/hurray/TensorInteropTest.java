package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.junit.jupiter.api.Test;

/** Rank-0 factories, java.nio views and the TensorShare keep-alive. */
class TensorInteropTest {

    @Test
    void scalarsAreRankZeroAndOfIsRankOne() {
        try (Tensor s = Tensor.scalar(2.5f); Tensor v = Tensor.of(new float[] {2.5f})) {
            assertEquals(0, s.descriptor().shape().rank());
            assertEquals(TensorDescriptor.of(ElementType.FLOAT32), s.descriptor());
            assertArrayEquals(new float[] {2.5f}, s.toFloatArray());
            assertEquals(1, v.descriptor().shape().rank());
            assertEquals(2.5f, s.asFloatBuffer().get(0));
        }
        try (Tensor d = Tensor.scalar(1.25); Tensor i = Tensor.scalar(7); Tensor l = Tensor.scalar(1L << 40)) {
            assertArrayEquals(new double[] {1.25}, d.toDoubleArray());
            assertArrayEquals(new int[] {7}, i.toIntArray());
            assertArrayEquals(new long[] {1L << 40}, l.toLongArray());
            assertEquals(0, l.descriptor().shape().rank());
        }
    }

    @Test
    void viewsAliasTheMemoryLittleEndian() {
        try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2)) {
            ByteBuffer b = t.asByteBuffer();
            assertEquals(ByteOrder.LITTLE_ENDIAN, b.order());
            assertEquals(16, b.capacity());
            assertEquals(0x3f800000, b.getInt(0));
            FloatBuffer f = t.asFloatBuffer();
            assertTrue(f.isDirect());
            f.put(3, 40f);
            assertArrayEquals(new float[] {1, 2, 3, 40}, t.toFloatArray());
            assertThrows(IllegalStateException.class, t::asIntBuffer);
            assertThrows(IllegalStateException.class, t::asDoubleBuffer);
        }
        try (Tensor i = Tensor.of(new int[] {5, 6}); Tensor l = Tensor.of(new long[] {7}); Tensor s = Tensor.of(new short[] {9});
                Tensor d = Tensor.of(new double[] {0.5})) {
            assertEquals(6, i.asIntBuffer().get(1));
            assertEquals(7, l.asLongBuffer().get(0));
            assertEquals(9, s.asShortBuffer().get(0));
            assertEquals(0.5, d.asDoubleBuffer().get(0));
        }
    }

    @Test
    void viewsHonourTheByteOffset() throws Exception {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2).byteOffset(8)
                .buffer(BufferSpec.cpu(16)).build();
        try (Tensor t = Tensor.allocate(d)) {
            t.buffer(0).set(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, 8, 3f);
            t.buffer(0).set(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, 12, 4f);
            FloatBuffer f = t.asFloatBuffer();
            assertEquals(2, f.capacity());
            assertEquals(3f, f.get(0));
            assertEquals(4f, f.get(1));
            assertEquals(16, t.asByteBuffer().capacity());
        }
    }

    @Test
    void viewsAfterCloseThrowNeverCrash() {
        Tensor t = Tensor.of(new float[] {1, 2});
        FloatBuffer f = t.asFloatBuffer();
        t.close();
        assertThrows(IllegalStateException.class, t::asFloatBuffer);
        assertThrows(IllegalStateException.class, t::asByteBuffer);
        assertThrows(IllegalStateException.class, () -> f.get(0));
    }

    @Test
    void viewsAbove2GiBAreRefusedClearly() {
        // 3 GiB described over an address that is never touched: the check comes first.
        long n = 3L << 28;
        MemorySegment fake = MemorySegment.ofAddress(1L << 20).reinterpret(n * 4);
        try (Tensor t = Tensor.wrap(fake, TensorDescriptor.of(ElementType.FLOAT32, n))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, t::asFloatBuffer);
            assertTrue(e.getMessage().contains("2 GiB"), e.getMessage());
            assertThrows(IllegalStateException.class, t::asByteBuffer);
        }
    }

    @Test
    void aSharedTensorCannotBeClosedUntilEveryShareIs() throws Exception {
        Tensor t = Tensor.of(new float[] {1, 2, 3});
        TensorShare a = t.share();
        TensorShare b = t.share();
        assertThrows(IllegalStateException.class, t::close);
        assertTrue(t.isOpen());
        assertEquals(2f, a.asFloatBuffer().get(1));
        assertEquals(ByteOrder.LITTLE_ENDIAN, a.asByteBuffer().order());
        assertThrows(IllegalStateException.class, a::asIntBuffer);
        a.close();
        a.close();
        assertThrows(IllegalStateException.class, a::asFloatBuffer);
        assertThrows(IllegalStateException.class, t::close);
        Thread other = new Thread(b::close);
        other.start();
        other.join();
        t.close();
        assertFalse(t.isOpen());
        assertThrows(IllegalStateException.class, t::share);
    }

    @Test
    void wrappedReadOnlyMemoryGivesReadOnlyViews() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(8, 64).asReadOnly();
            try (Tensor t = Tensor.wrap(m, TensorDescriptor.of(ElementType.FLOAT32, 2))) {
                assertTrue(t.asFloatBuffer().isReadOnly());
            }
        }
    }
}
