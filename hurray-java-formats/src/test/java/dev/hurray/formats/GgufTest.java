package dev.hurray.formats;

import static dev.hurray.formats.TestSupport.bytes;
import static dev.hurray.formats.TestSupport.list;
import static dev.hurray.formats.TestSupport.map;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.hurray.ElementType;
import dev.hurray.HurrayFile;
import dev.hurray.Layout;
import dev.hurray.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GgufTest {
    @TempDir
    Path tmp;

    /** llama.cpp's own vocab GGUF files, checked against what llama.cpp's gguf-py reads in them. */
    @Test
    void realLlamaCppFilesMatchGgufPy() throws IOException {
        Path dir = Path.of(System.getProperty("hurray.gguf.dir", System.getProperty("user.home") + "/.cache/hurray/llama-cpp-gguf"));
        assumeTrue(Files.isRegularFile(dir.resolve("manifest.json")),
                "skipped: no GGUF files in " + dir + " (run .ci/fetch-gguf.sh, which tools/setup.sh runs)");
        Map<String, Object> manifest = map(TestSupport.json(dir.resolve("manifest.json")));
        assertTrue(manifest.size() >= 19, "files: " + manifest.size());
        for (Map.Entry<String, Object> f : manifest.entrySet()) {
            Path file = dir.resolve(f.getKey());
            Map<String, Object> want = map(f.getValue());
            Gguf.Header h = Gguf.readHeader(file);
            String w = f.getKey();
            assertEquals(((BigInteger) want.get("version")).intValue(), h.version(), w);
            assertEquals(((BigInteger) want.get("alignment")).intValue(), h.alignment(), w);
            assertEquals(((BigInteger) want.get("data_offset")).longValue(), h.dataOffset(), w);
            List<Object> meta = list(want.get("metadata"));
            assertEquals(meta.size(), h.metadata().size(), w);
            int i = 0;
            for (Map.Entry<String, Gguf.Value> e : h.metadata().entrySet()) {
                Map<String, Object> m = map(meta.get(i++));
                String k = w + " " + e.getKey();
                assertEquals(m.get("key"), e.getKey(), w);
                assertEquals(((BigInteger) m.get("type")).intValue(), e.getValue().type().code(), k);
                if (e.getValue().type() == Gguf.ValueType.ARRAY) {
                    List<?> l = (List<?>) e.getValue().value();
                    assertEquals(((BigInteger) m.get("element_type")).intValue(), e.getValue().elementType().code(), k);
                    assertEquals(((BigInteger) m.get("length")).intValue(), l.size(), k);
                    if (m.containsKey("last")) {
                        assertEquals(m.get("first"), l.get(0), k);
                        assertEquals(m.get("last"), l.get(l.size() - 1), k);
                    }
                } else if (e.getValue().type() == Gguf.ValueType.FLOAT32 || e.getValue().type() == Gguf.ValueType.FLOAT64) {
                    assertEquals(Double.parseDouble((String) m.get("value")), (Double) e.getValue().value(), k);
                } else if (e.getValue().value() instanceof Long v) {
                    assertEquals(((BigInteger) m.get("value")).longValue(), v, k);
                } else {
                    assertEquals(m.get("value"), e.getValue().value(), k);
                }
            }
            assertEquals(list(want.get("tensors")).size(), h.tensors().size(), w);
            // Through a model into an HRRYFILE and back: every metadata value survives as text.
            Path hrry = tmp.resolve(f.getKey() + ".hrry");
            try (ForeignModel m = Gguf.read(file)) {
                m.toHurrayFile(hrry);
                try (HurrayFile hf = HurrayFile.open(hrry); ForeignModel back = ForeignModel.of(hf)) {
                    assertEquals(m.metadata(), back.metadata(), w);
                }
            }
        }
    }

    @Test
    void writtenFilesReadBackWithTheirTypesShapesAndBytes() throws IOException {
        Random rnd = new Random(7);
        try (Arena arena = Arena.ofShared()) {
            List<ForeignTensor> ts = List.of(
                    Models.random(arena, rnd, "tok_embd.weight", ElementType.FLOAT32, Layout.Kind.ROW_MAJOR, 5, 3),
                    Models.random(arena, rnd, "norm", ElementType.FLOAT16, Layout.Kind.ROW_MAJOR, 7),
                    Models.random(arena, rnd, "col", ElementType.BFLOAT16, Layout.Kind.COLUMN_MAJOR, 2, 3, 4),
                    Models.random(arena, rnd, "ids", ElementType.INT64, Layout.Kind.ROW_MAJOR, 1, 1, 2, 3));
            Map<String, String> meta = new LinkedHashMap<>();
            meta.put("general.architecture", "test");
            meta.put("general.name", "ünïcode");
            Path p = tmp.resolve("m.gguf");
            try (ForeignModel m = new ForeignModel(ts, meta, null)) {
                Gguf.write(m, p, null);
                assertEquals(Format.GGUF, Format.detect(p));
                Gguf.Header h = Gguf.readHeader(p);
                assertEquals(3, h.version());
                assertEquals(32, h.alignment());
                assertArrayEquals(new long[] {3, 5}, h.tensors().get(0).dims());
                assertEquals(Gguf.GgmlType.BF16, h.tensors().get(2).type());
                try (ForeignModel back = Gguf.read(p); Arena scratch = Arena.ofConfined()) {
                    assertEquals("test", back.metadata().get("general.architecture"));
                    assertEquals("ünïcode", back.metadata().get("general.name"));
                    assertEquals("32", back.metadata().get("general.alignment"));
                    for (ForeignTensor t : ts) {
                        ForeignTensor b = back.tensor(t.name());
                        ForeignTensor row = Payloads.toRowMajor(t, scratch);
                        assertEquals(t.dtype(), b.dtype());
                        assertArrayEquals(t.shape(), b.shape());
                        assertEquals(Layout.Kind.ROW_MAJOR, b.layout());
                        assertArrayEquals(bytes(row.data()), bytes(b.data()), t.name());
                        assertEquals(0, b.sourceOffset() % 32, t.name());
                        try (Tensor ht = b.toTensor(scratch)) {
                            assertEquals(t.name(), ht.descriptor().name().orElseThrow());
                        }
                    }
                }
            }
            try (ForeignModel q = new ForeignModel(List.of(Models.random(arena, rnd, "u", ElementType.UINT16,
                    Layout.Kind.ROW_MAJOR, 2)), Map.of(), null)) {
                assertTrue(assertThrows(ForeignFormatException.class, () -> Gguf.write(q, tmp.resolve("u.gguf"), null))
                        .getMessage().contains("no type for uint16"));
            }
        }
    }

    /** Block-quantized data comes through as raw bytes, one row of blocks per last index. */
    @Test
    void blockTypesAreCarriedAsRawBytes() throws IOException {
        byte[] blocks = new byte[2 * 2 * 34]; // Q8_0: 2 rows of 64 elements = 2 blocks of 34 bytes each
        new Random(1).nextBytes(blocks);
        Path p = tmp.resolve("q.gguf");
        Files.write(p, gguf(List.of(), "w", new long[] {64, 2}, 8, 0, blocks));
        try (ForeignModel m = Gguf.read(p)) {
            ForeignTensor t = m.tensor("w");
            assertEquals(ElementType.UINT8, t.dtype());
            assertArrayEquals(new long[] {2, 68}, t.shape());
            assertEquals("q8_0", m.metadata().get("gguf.tensor_type.w"));
            assertArrayEquals(blocks, bytes(t.data()));
        }
    }

    @Test
    void hostileHeadersAreRefusedBeforeAllocating() throws IOException {
        byte[] ok = gguf(List.of(), "w", new long[] {4}, 0, 0, new byte[16]);
        assertEquals(4, Gguf.readHeader(write("ok.gguf", ok)).tensors().get(0).dims()[0]);
        // Counts far beyond what the file holds.
        byte[] counts = ok.clone();
        ByteBuffer.wrap(counts).order(ByteOrder.LITTLE_ENDIAN).putLong(8, Long.MAX_VALUE);
        refused(counts, "more than its");
        // A string length of 2^63.
        byte[] str = gguf(List.of(kv("k", 8, le(Long.MAX_VALUE))), "w", new long[] {4}, 0, 0, new byte[16]);
        refused(str, "truncated GGUF");
        // An array of 2^40 uint8.
        refused(gguf(List.of(kv("a", 9, cat(le32(0), le(1L << 40)))), "w", new long[] {4}, 0, 0, new byte[16]),
                "remaining bytes can hold");
        // Arrays nested five deep.
        byte[] nested = cat(le32(9), le(1));
        for (int i = 0; i < 5; i++) {
            nested = cat(le32(9), le(1), nested);
        }
        refused(gguf(List.of(kv("n", 9, nested)), "w", new long[] {4}, 0, 0, new byte[16]), "nested deeper");
        // Data past the end, a misaligned offset, an unknown type, a bad alignment, version 1, big-endian.
        refused(gguf(List.of(), "w", new long[] {1 << 20}, 0, 0, new byte[16]), "past the end");
        refused(gguf(List.of(), "w", new long[] {4}, 0, 4, new byte[16]), "not a multiple of the alignment");
        refused(gguf(List.of(), "w", new long[] {4}, 99, 0, new byte[16]), "does not know");
        refused(gguf(List.of(kv("general.alignment", 4, le32(3))), "w", new long[] {4}, 0, 0, new byte[16]), "power of two");
        byte[] v1 = ok.clone();
        v1[4] = 1;
        refused(v1, "version 1");
        byte[] be = ok.clone();
        be[4] = 0;
        be[7] = 3;
        refused(be, "big-endian");
        refused(new byte[] {'G', 'G', 'U', 'F'}, "no GGUF magic");
    }

    private void refused(byte[] content, String message) throws IOException {
        Path p = write("bad.gguf", content);
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Gguf.read(p));
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
    }

    private Path write(String name, byte[] b) throws IOException {
        return Files.write(tmp.resolve(name), b);
    }

    private static byte[] le(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }

    private static byte[] le32(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array();
    }

    private static byte[] str(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return cat(le(b.length), b);
    }

    private static byte[] kv(String key, int type, byte[] value) {
        return cat(str(key), le32(type), value);
    }

    private static byte[] cat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            o.writeBytes(p);
        }
        return o.toByteArray();
    }

    /** A GGUF v3 file, built from the published layout, with the given metadata and one tensor. */
    static byte[] gguf(List<byte[]> kvs, String name, long[] dims, int type, long offset, byte[] data) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        o.writeBytes(new byte[] {'G', 'G', 'U', 'F'});
        o.writeBytes(le32(3));
        o.writeBytes(le(1));
        o.writeBytes(le(kvs.size()));
        kvs.forEach(o::writeBytes);
        o.writeBytes(str(name));
        o.writeBytes(le32(dims.length));
        for (long d : dims) {
            o.writeBytes(le(d));
        }
        o.writeBytes(le32(type));
        o.writeBytes(le(offset));
        while (o.size() % 32 != 0) {
            o.write(0);
        }
        o.writeBytes(data);
        return o.toByteArray();
    }

}
