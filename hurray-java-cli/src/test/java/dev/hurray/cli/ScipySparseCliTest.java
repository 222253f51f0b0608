package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.HurrayFile;
import dev.hurray.Layout;
import dev.hurray.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hurray convert} with scipy.sparse {@code save_npz} files written by scipy itself
 * (src/test/resources/scipy, made by tools/scipy-fixtures/make_fixtures.py).
 */
class ScipySparseCliTest {
    @TempDir
    Path dir;

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> manifest() throws IOException {
        byte[] b;
        try (InputStream in = ScipySparseCliTest.class.getResourceAsStream("/scipy/manifest.json")) {
            b = in.readAllBytes();
        }
        return (List<Map<String, Object>>) ((Map<String, Object>) JsonOut.parse(b)).get("files");
    }

    private Path fixture(String name) throws IOException {
        Path p = dir.resolve(name);
        try (InputStream in = ScipySparseCliTest.class.getResourceAsStream("/scipy/" + name)) {
            Files.copy(in, p);
        }
        return p;
    }

    private static double[] asDoubles(Tensor t) {
        long n = t.descriptor().elementCount();
        double[] out = new double[(int) n];
        var seg = t.buffer(0);
        for (int i = 0; i < n; i++) {
            out[i] = switch (t.descriptor().elementType()) {
                case FLOAT32 -> seg.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i);
                case FLOAT64 -> seg.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i);
                case INT32 -> seg.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i);
                default -> throw new AssertionError(t.descriptor().elementType());
            };
        }
        return out;
    }

    private static Map<String, byte[]> entries(Path npz) throws IOException {
        Map<String, byte[]> m = new HashMap<>();
        try (ZipFile z = new ZipFile(npz.toFile())) {
            for (ZipEntry e : java.util.Collections.list(z.entries())) {
                try (InputStream in = z.getInputStream(e)) {
                    m.put(e.getName(), in.readAllBytes());
                }
            }
        }
        return m;
    }

    /** The array bytes of an npy entry (after its header). */
    private static byte[] payload(byte[] npy) {
        int len = (npy[8] & 0xFF) | (npy[9] & 0xFF) << 8;
        return java.util.Arrays.copyOfRange(npy, 10 + len, npy.length);
    }

    @Test
    void everyScipyFixtureKeepsItsLayoutAndDensifiesToWhatScipySees() throws Exception {
        for (Map<String, Object> f : manifest()) {
            String file = (String) f.get("file");
            Path npz = fixture(file);
            Path hrry = dir.resolve(file + ".hrry");
            CliTest.run("convert", npz.toString(), hrry.toString()).assertOk();
            try (HurrayFile h = HurrayFile.open(hrry); Tensor t = h.read(h.entries().get(0))) {
                Layout l = t.descriptor().layout();
                assertEquals(f.get("format"), l.kind().formatName(), file);
                long nnz = ((Number) f.get("nnz")).longValue();
                assertEquals(nnz, l.nnz(), file);
                if (l.kind() == Layout.Kind.BSR) {
                    List<?> bs = (List<?>) f.get("block_shape");
                    assertArrayEquals(new int[] {((Number) bs.get(0)).intValue(), ((Number) bs.get(1)).intValue()},
                            l.blockShape(), file);
                }
                assertEquals(f.get("index_dtype"), l.indexType().orElseThrow().formatName(), file);
                assertEquals(f.get("dtype"), t.descriptor().elementType().formatName(), file);
                double[] want = ((List<?>) f.get("dense")).stream().mapToDouble(x -> ((Number) x).doubleValue()).toArray();
                try (Tensor d = t.densify()) {
                    assertArrayEquals(want, asDoubles(d), 0.0, file);
                }
            }
            CliTest.Result ins = CliTest.run("inspect", "--json", hrry.toString());
            ins.assertOk();
            assertTrue(ins.out().contains("\"layout\" : \"" + f.get("format") + "\"")
                    || ins.out().contains("\"layout\":\"" + f.get("format") + "\""), ins.out());
            assertTrue(ins.out().contains("\"nnz\""), ins.out());
            // Back to npz: the same arrays, byte for byte.
            Path back = dir.resolve(file + ".back.npz");
            CliTest.run("convert", hrry.toString(), back.toString()).assertOk();
            Map<String, byte[]> a = entries(npz);
            Map<String, byte[]> b = entries(back);
            assertEquals(a.keySet(), b.keySet(), file);
            for (String k : a.keySet()) {
                if (k.equals("format.npy")) {
                    assertEquals(new String(payload(a.get(k))), new String(payload(b.get(k))), file);
                } else {
                    assertArrayEquals(payload(a.get(k)), payload(b.get(k)), file + "!" + k);
                }
            }
            // --densify writes a dense row-major tensor.
            Path dense = dir.resolve(file + ".dense.hrry");
            CliTest.run("convert", "--densify", npz.toString(), dense.toString()).assertOk();
            try (HurrayFile h = HurrayFile.open(dense); Tensor t = h.read(h.entries().get(0))) {
                assertEquals(Layout.Kind.ROW_MAJOR, t.descriptor().layout().kind());
                double[] want = ((List<?>) f.get("dense")).stream().mapToDouble(x -> ((Number) x).doubleValue()).toArray();
                assertArrayEquals(want, asDoubles(t), 0.0, file);
            }
        }
    }

    @Test
    void aHostileSparseNpzIsRefusedWithAClearError() throws Exception {
        // Rewrite csr_f32's indices with one column out of range.
        Path npz = fixture("csr_f32.npz");
        Map<String, byte[]> e = entries(npz);
        byte[] idx = e.get("indices.npy");
        int at = idx.length - 4;
        idx[at] = 99;
        Path bad = dir.resolve("bad.npz");
        try (var z = new java.util.zip.ZipOutputStream(Files.newOutputStream(bad))) {
            for (var en : e.entrySet()) {
                z.putNextEntry(new ZipEntry(en.getKey()));
                z.write(en.getValue());
                z.closeEntry();
            }
        }
        CliTest.Result r = CliTest.run("convert", bad.toString(), dir.resolve("bad.hrry").toString());
        assertFalse(r.code() == ExitCode.OK);
        assertTrue(r.err().contains("outside 0..8"), r.err());
        assertFalse(Files.exists(dir.resolve("bad.hrry")));
    }
}
