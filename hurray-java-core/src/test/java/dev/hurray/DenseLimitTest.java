package dev.hurray;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Tensor#densify()} and {@link Tensor#gather()} refuse a dense form over their byte
 * limit before allocating anything: a few bytes of sparse or paged input can describe
 * gigabytes of output.
 */
class DenseLimitTest {
    /** float32 COO [60000, 60000] (13.4 GiB dense) with one stored value. */
    private static Tensor hugeCoo() throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 60000, 60000)
                .layout(Layout.coo(ElementType.INT32, 1, true))
                .buffer(BufferSpec.cpu(4)).buffer(BufferSpec.cpu(8)).build();
        return Tensor.copyOf(d, MemorySegment.ofArray(new float[] {3}), MemorySegment.ofArray(new int[] {5, 7}));
    }

    /** float32 paged [rows, 256] whose every page-table entry points at the one stored page. */
    private static Tensor repeatedPages(int blocks) throws HurrayException {
        int[] table = new int[blocks];
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 16L * blocks, 256)
                .layout(Layout.paged(ElementType.INT32, 16, blocks, 1))
                .buffer(BufferSpec.cpu(4L * 16 * 256)).buffer(BufferSpec.cpu(4L * blocks)).build();
        return Tensor.copyOf(d, MemorySegment.ofArray(new float[16 * 256]), MemorySegment.ofArray(table));
    }

    @Test
    void densifyRefusesADenseFormOverTheLimitBeforeAllocating() throws HurrayException {
        try (Tensor t = hugeCoo()) {
            long t0 = System.nanoTime();
            HurrayException e = assertThrows(HurrayException.class, t::densify);
            assertEquals(Status.LIMIT_EXCEEDED, e.status());
            assertTrue(e.getMessage().contains("14400000000 bytes") && e.getMessage().contains("densify(maxBytes)"),
                    e.getMessage());
            assertTrue(System.nanoTime() - t0 < 2_000_000_000L, "refused at once, not after filling 13 GiB");
            assertEquals(Status.LIMIT_EXCEEDED, assertThrows(HurrayException.class, () -> t.densify(1L << 33)).status());
            assertThrows(IllegalArgumentException.class, () -> t.densify(-1));
        }
    }

    @Test
    void densifyWithinAGivenLimitWorks() throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3)
                .layout(Layout.coo(ElementType.INT32, 1, true)).buffer(BufferSpec.cpu(4)).buffer(BufferSpec.cpu(8)).build();
        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(new float[] {3}), MemorySegment.ofArray(new int[] {1, 2}))) {
            assertEquals(Status.LIMIT_EXCEEDED, assertThrows(HurrayException.class, () -> t.densify(23)).status());
            try (Tensor x = t.densify(24)) {
                assertArrayEquals(new float[] {0, 0, 0, 0, 0, 3}, x.toFloatArray());
            }
        }
    }

    @Test
    void gatherRefusesOverTheLimitAndWorksWithinIt() throws HurrayException {
        // 16 KiB of pages and 256 KiB of page table describe 1 GiB + 16 KiB.
        try (Tensor t = repeatedPages(65537)) {
            HurrayException e = assertThrows(HurrayException.class, t::gather);
            assertEquals(Status.LIMIT_EXCEEDED, e.status());
            assertTrue(e.getMessage().contains("gather(maxBytes)"), e.getMessage());
        }
        try (Tensor t = repeatedPages(4); Tensor g = t.gather(4L * 64 * 256)) {
            assertEquals(64 * 256, g.toFloatArray().length);
        }
    }

    @Test
    void dequantizeOfASparseOrPagedTensorRefusesTheSameDenseForms() throws HurrayException {
        try (Tensor t = hugeCoo()) {
            for (ElementType target : new ElementType[] {null, ElementType.FLOAT64, ElementType.FLOAT32}) {
                long t0 = System.nanoTime();
                HurrayException e = assertThrows(HurrayException.class,
                        () -> (target == null ? t.dequantize() : t.dequantize(target)).close());
                assertEquals(Status.LIMIT_EXCEEDED, e.status());
                assertTrue(e.getMessage().contains("densify(maxBytes)"), e.getMessage());
                assertTrue(System.nanoTime() - t0 < 2_000_000_000L, "refused at once, not after filling gigabytes");
            }
        }
        try (Tensor t = repeatedPages(65537)) {
            HurrayException e = assertThrows(HurrayException.class, () -> t.dequantize().close());
            assertEquals(Status.LIMIT_EXCEEDED, e.status());
            assertTrue(e.getMessage().contains("gather(maxBytes)"), e.getMessage());
        }
        // Within the limit a sparse tensor still dequantizes.
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3)
                .layout(Layout.coo(ElementType.INT32, 1, true)).buffer(BufferSpec.cpu(4)).buffer(BufferSpec.cpu(8)).build();
        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(new float[] {3}), MemorySegment.ofArray(new int[] {1, 2}));
                Tensor x = t.dequantize()) {
            assertArrayEquals(new float[] {0, 0, 0, 0, 0, 3}, x.toFloatArray());
        }
    }
}
