package dev.hurray.formats;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * scipy.sparse {@code save_npz} files against scipy itself (skipped when scipy is absent), and
 * the rules those cross-checks found, tested without Python.
 */
class ScipyReferenceTest {
    @TempDir
    Path tmp;

    /** A CSR tensor [2, 3] with int32 indices whose column index 7 is out of range. */
    private static Tensor badCsr() throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).layout(Layout.csr(ElementType.INT32, 2, false))
                .buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(8)).build();
        return Tensor.copyOf(d, MemorySegment.ofArray(new float[] {1, 2}), MemorySegment.ofArray(new int[] {0, 1, 2}),
                MemorySegment.ofArray(new int[] {0, 7}));
    }

    @Test
    void writingNpzChecksTheIndicesFirst() throws IOException {
        Path out = tmp.resolve("bad.npz");
        try (Tensor t = badCsr()) {
            HurrayException e = assertThrows(HurrayException.class, () -> ScipySparse.write(t, out));
            assertEquals(Status.CORRUPT, e.status());
            assertThrows(HurrayException.class, t::checkContents);
        }
        assertFalse(Files.exists(out), "nothing written");
    }

    @Test
    void csrAndCooArraysStayArraysAndEveryShapeIntegerTypeReads() throws IOException {
        ReferencePython.assume("scipy", "numpy");
        String make = """
                import sys, numpy as np, scipy.sparse as sp
                d = sys.argv[1]
                m = sp.random(5, 7, density=0.4, format='csr', random_state=3, dtype=np.float64)
                for cls in ['csr_array', 'csc_array', 'coo_array', 'bsr_array', 'csr_matrix', 'coo_matrix']:
                    sp.save_npz(f'{d}/{cls}.npz', getattr(sp, cls)(m.toarray()[:4, :6] if cls.startswith('bsr') else m))
                for t in ['int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64']:
                    np.savez(f'{d}/shape_{t}.npz', format=np.array(b'csr'), shape=np.array([5, 7], dtype=t),
                             data=m.data, indices=m.indices, indptr=m.indptr)
                """;
        ReferencePython.run(make, tmp.toString());
        String[] classes = {"csr_array", "csc_array", "coo_array", "bsr_array", "csr_matrix", "coo_matrix"};
        for (String cls : classes) {
            Path in = tmp.resolve(cls + ".npz");
            Path back = tmp.resolve(cls + "-back.npz");
            try (Tensor t = ScipySparse.read(in)) {
                assertEquals(cls.endsWith("_array"), t.descriptor().metadata().containsKey(ScipySparse.ARRAY_FLAG_KEY), cls);
                ScipySparse.write(t, back);
            }
            String out = ReferencePython.run("""
                    import sys, numpy as np, scipy.sparse as sp
                    a, b = sp.load_npz(sys.argv[1]), sp.load_npz(sys.argv[2])
                    assert (a.toarray() == b.toarray()).all()
                    print(type(a).__name__, type(b).__name__)
                    """, in.toString(), back.toString()).strip();
            assertEquals(cls + " " + cls, out, "scipy's class survives npz -> Hurray -> npz");
        }
        for (String t : new String[] {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}) {
            try (Tensor x = ScipySparse.read(tmp.resolve("shape_" + t + ".npz"))) {
                assertArrayEquals(new long[] {5, 7}, x.descriptor().shape().dims(), t);
            }
        }
    }

    @Test
    void densifyAgreesWithScipyToarray() throws IOException {
        ReferencePython.assume("scipy", "numpy");
        Path in = tmp.resolve("dup.npz");
        // A non-canonical COO with duplicates: scipy sums them, and so must densify.
        String raw = ReferencePython.run("""
                import sys, numpy as np, scipy.sparse as sp
                m = sp.coo_array((np.array([1.5, 2.0, -1.0, 4.0], dtype=np.float32),
                                  (np.array([0, 2, 0, 1]), np.array([1, 3, 1, 0]))), shape=(3, 4))
                sp.save_npz(sys.argv[1], m, compressed=False)
                print(m.toarray().astype('<f4').tobytes().hex())
                """, in.toString()).strip();
        try (Tensor t = ScipySparse.read(in); Tensor d = t.densify()) {
            assertTrue(t.descriptor().layout().kind().isSparse());
            assertArrayEquals(java.util.HexFormat.of().parseHex(raw),
                    d.buffer(0).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        }
    }
}
