package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Sparse and block-paged layouts and composite membership through the Java API. */
class SparseLayoutTest {
    private static MemorySegment ints(int... v) {
        return MemorySegment.ofArray(v);
    }

    private static MemorySegment floats(float... v) {
        return MemorySegment.ofArray(v);
    }

    /** A CSR tensor of a random dense matrix, built here independently of the library. */
    private static Tensor csrOf(float[] dense, int rows, int cols, boolean corruptLastIndex) throws HurrayException {
        int nnz = 0;
        for (float x : dense) {
            nnz += x != 0 ? 1 : 0;
        }
        float[] vals = new float[nnz];
        int[] ptr = new int[rows + 1];
        int[] idx = new int[nnz];
        int k = 0;
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                if (dense[r * cols + c] != 0) {
                    vals[k] = dense[r * cols + c];
                    idx[k++] = c;
                }
            }
            ptr[r + 1] = k;
        }
        if (corruptLastIndex) {
            idx[nnz - 1] = cols;
        }
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, rows, cols)
                .layout(Layout.csr(ElementType.INT32, nnz, true))
                .buffer(BufferSpec.cpu(4L * nnz)).buffer(BufferSpec.cpu(4L * (rows + 1))).buffer(BufferSpec.cpu(4L * nnz))
                .build();
        return Tensor.copyOf(d, floats(vals), ints(ptr), ints(idx));
    }

    private static float[] randomDense(Random rnd, int rows, int cols) {
        float[] d = new float[rows * cols];
        for (int i = 0; i < d.length; i++) {
            d[i] = rnd.nextInt(3) == 0 ? rnd.nextInt(1000) - 500 : 0;
        }
        d[0] = 1; // at least one stored entry
        return d;
    }

    @Test
    void csrRoundTripsThroughAStreamAndDensifiesToItsMatrix() throws Exception {
        Random rnd = new Random(42);
        for (int round = 0; round < 10; round++) {
            int rows = 1 + rnd.nextInt(8);
            int cols = 1 + rnd.nextInt(8);
            float[] dense = randomDense(rnd, rows, cols);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (Tensor t = csrOf(dense, rows, cols, false); Writer w = Writer.of(out)) {
                w.write(t);
            }
            try (Reader r = Reader.of(out.toByteArray()); Tensor back = r.read()) {
                Layout l = back.descriptor().layout();
                assertEquals(Layout.Kind.CSR, l.kind());
                assertEquals(ElementType.INT32, l.indexType().orElseThrow());
                assertTrue(l.isCanonical());
                assertEquals(3, back.descriptor().buffers().size());
                try (Tensor d = back.densify()) {
                    assertEquals(Layout.Kind.ROW_MAJOR, d.descriptor().layout().kind());
                    assertArrayEquals(dense, d.toFloatArray());
                }
                assertThrows(IllegalStateException.class, back::gather);
            }
        }
    }

    @Test
    void anIndexOutOfRangeIsRefusedWithAClearError() throws Exception {
        try (Tensor t = csrOf(new float[] {1, 0, 2, 3}, 2, 2, true)) {
            HurrayException e = assertThrows(HurrayException.class, t::densify);
            assertEquals(Status.CORRUPT, e.status());
            assertTrue(e.getMessage().contains("outside 0..2"), e.getMessage());
            try (Writer w = Writer.of(new ByteArrayOutputStream())) {
                assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, () -> w.write(t)).status());
            }
        }
        assertThrows(IllegalStateException.class, () -> Tensor.of(new float[] {1}, 1).densify());
        assertThrows(IllegalArgumentException.class, () -> Layout.csr(ElementType.FLOAT32, 1, true));
    }

    @Test
    void pagedTensorsGatherThroughThePageTable() throws Exception {
        // 5 tokens x 2 features in pages of 2 tokens; blocks 0,1,2 in pages 2,0,1.
        float[] pages = new float[3 * 2 * 2];
        for (int i = 0; i < pages.length; i++) {
            pages[i] = i;
        }
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 5, 2)
                .layout(Layout.paged(ElementType.INT32, 2, 3, 3))
                .buffer(BufferSpec.cpu(4L * pages.length)).buffer(BufferSpec.cpu(12))
                .build();
        assertEquals("paged(int32, page=2, blocks=3, pages=3)", d.layout().toString());
        try (Tensor t = Tensor.copyOf(d, floats(pages), ints(2, 0, 1)); Tensor g = t.gather()) {
            assertArrayEquals(new float[] {8, 9, 10, 11, 0, 1, 2, 3, 4, 5}, g.toFloatArray());
        }
        try (Tensor t = Tensor.copyOf(d, floats(pages), ints(2, 3, 1))) {
            HurrayException e = assertThrows(HurrayException.class, t::gather);
            assertEquals(Status.CORRUPT, e.status());
            assertTrue(e.getMessage().contains("page-table entry 1"), e.getMessage());
        }
    }

    @Test
    void aCompositeHeadDescribesItsMembers() throws Exception {
        // A head per docs/spec/descriptor.md §Composite membership: version 2, no buffers,
        // extension bit 5, member count 2, depth 0, roles "w" and "scales".
        ByteBuffer b = ByteBuffer.allocate(24 + 16 + 3 + 8).order(ByteOrder.LITTLE_ENDIAN);
        b.put("HRDS".getBytes(StandardCharsets.US_ASCII)).putShort((short) 2).putShort((short) 0);
        b.put((byte) 0).put((byte) 0).put((byte) 0).put((byte) 0).putInt(1 << 5).putLong(0);
        b.putInt(2).putShort((short) 0).putShort((short) 0).putInt(0).putInt(0);
        b.putShort((short) 1).put((byte) 'w').putShort((short) 6).put("scales".getBytes(StandardCharsets.US_ASCII));
        TensorDescriptor head = TensorDescriptor.decode(b.array());
        CompositeMembership m = head.compositeMembership().orElseThrow();
        assertEquals(new CompositeMembership(0, 0, List.of("w", "scales")), m);
        assertTrue(m.isHead());
        assertTrue(head.buffers().isEmpty());
        assertFalse(TensorDescriptor.of(ElementType.FLOAT32, 2).compositeMembership().isPresent());
        // The same bytes labelled version 1 use a reserved extension bit there.
        byte[] v1 = b.array().clone();
        v1[4] = 1;
        assertEquals(Status.UNSUPPORTED, assertThrows(HurrayException.class, () -> TensorDescriptor.decode(v1)).status());
    }

    @Test
    void layoutsAreSealedValueTypesWithBuilders() {
        Layout bsr = Layout.sparse(Layout.Kind.BSR).indexType(ElementType.INT64).nnz(3).blockShape(2, 2).build();
        assertEquals(Layout.bsr(ElementType.INT64, 3, 2, 2, false), bsr);
        String what = switch (bsr) {
            case Layout.Dense d -> "dense";
            case Layout.Strided s -> "strided";
            case Layout.Coo c -> "coo";
            case Layout.Csr c -> "csr";
            case Layout.Csc c -> "csc";
            case Layout.Bsr b -> "bsr " + b.blockRows() + "x" + b.blockCols();
            case Layout.Paged p -> "paged";
        };
        assertEquals("bsr 2x2", what);
        Layout.Paged p = Layout.Paged.builder().pageSize(8).blockCount(2).pageCount(3).build();
        assertEquals(Layout.paged(ElementType.INT32, 8, 2, 3), p);
        assertThrows(IllegalArgumentException.class, () -> Layout.sparse(Layout.Kind.CSR).blockShape(2, 2).build());
        assertThrows(IllegalArgumentException.class, () -> Layout.sparse(Layout.Kind.PAGED));
        assertTrue(Layout.rowMajor() instanceof Layout.Dense d && !d.columnMajor());
    }

    @Test
    void layoutsCompareByTheirParameters() {
        assertEquals(Layout.bsr(ElementType.INT64, 3, 2, 2, false), Layout.bsr(ElementType.INT64, 3, 2, 2, false));
        assertFalse(Layout.coo(ElementType.INT64, 3, false).equals(Layout.coo(ElementType.INT64, 3, true)));
        assertArrayEquals(new int[] {2, 4}, Layout.bsr(ElementType.INT32, 1, 2, 4, true).blockShape());
        assertEquals("bsr(int64, nnz=3, block=2x2)", Layout.bsr(ElementType.INT64, 3, 2, 2, false).toString());
    }
}
