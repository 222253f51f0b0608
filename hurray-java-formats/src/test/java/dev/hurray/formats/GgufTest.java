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

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayFile;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Shape;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
            // Through a model into an HRRYFILE and back to GGUF: every metadata value survives as
            // text with its type record, and the GGUF written is the original, byte for byte.
            Path hrry = tmp.resolve(f.getKey() + ".hrry");
            Path gguf = tmp.resolve(f.getKey());
            try (ForeignModel m = Gguf.read(file)) {
                m.toHurrayFile(hrry);
                try (HurrayFile hf = HurrayFile.open(hrry); ForeignModel back = ForeignModel.of(hf)) {
                    assertEquals(m.metadata(), back.metadata(), w);
                    Gguf.write(back, gguf, null);
                }
            }
            assertArrayEquals(Files.readAllBytes(file), Files.readAllBytes(gguf), w + " GGUF -> HRRYFILE -> GGUF");
            Files.delete(gguf);
            Files.delete(hrry);
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
                    assertFalse(back.metadata().containsKey("general.alignment"), "only written when the model has it");
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

    /** Block types other than Q8_0 and Q4_0 come through as raw bytes, one row of blocks per last index. */
    @Test
    void otherBlockTypesAreCarriedAsRawBytes() throws IOException {
        byte[] blocks = new byte[2 * 2 * 20]; // Q4_1: 2 rows of 64 elements = 2 blocks of 20 bytes each
        new Random(1).nextBytes(blocks);
        Path p = tmp.resolve("q.gguf");
        Files.write(p, gguf(List.of(), "w", new long[] {64, 2}, 3, 0, blocks));
        try (ForeignModel m = Gguf.read(p)) {
            ForeignTensor t = m.tensor("w");
            assertEquals(ElementType.UINT8, t.dtype());
            assertTrue(t.quantization().isEmpty());
            assertArrayEquals(new long[] {2, 40}, t.shape());
            assertEquals("q4_1", m.metadata().get("gguf.tensor_type.w"));
            assertArrayEquals(blocks, bytes(t.data()));
        }
        byte[] k = new byte[3 * 144]; // Q4_K: 3 rows of one 256-element super-block each
        new Random(2).nextBytes(k);
        Files.write(p, gguf(List.of(), "k", new long[] {256, 3}, 12, 0, k));
        try (ForeignModel m = Gguf.read(p)) {
            assertEquals(ElementType.UINT8, m.tensor("k").dtype());
            assertArrayEquals(new long[] {3, 144}, m.tensor("k").shape());
            assertEquals("q4_k", m.metadata().get("gguf.tensor_type.k"));
            assertTrue(Gguf.GgmlType.Q4_K.isRaw());
            assertFalse(Gguf.GgmlType.Q8_0.isRaw());
        }
    }

    /**
     * Q8_0: the Hurray tensor is int8 of the logical shape with GGUF Q8_0 blocks along the last
     * axis, its one buffer the file's bytes, and it dequantizes to d × q.
     */
    @Test
    void q8_0IsAGgufBlockTensorThatDequantizes() throws IOException {
        byte[] blocks = q8_0Blocks(new Random(11), 6);
        // Block 0 by hand: d = 0.5 (float16 0x3800); q = 1, -2, 127, -128, 0, …
        blocks[0] = 0x00;
        blocks[1] = 0x38;
        blocks[2] = 1;
        blocks[3] = -2;
        blocks[4] = 127;
        blocks[5] = -128;
        blocks[6] = 0;
        Path p = Files.write(tmp.resolve("q8.gguf"), gguf(List.of(), "w", new long[] {64, 3}, 8, 0, blocks));
        try (ForeignModel m = Gguf.read(p); Arena scratch = Arena.ofConfined()) {
            ForeignTensor t = m.tensor("w");
            assertEquals(ElementType.INT8, t.dtype());
            assertArrayEquals(new long[] {3, 64}, t.shape());
            assertEquals(new Quantization.Block(Quantization.GgufFormat.Q8_0, 1, ElementType.FLOAT32),
                    t.quantization().orElseThrow());
            assertTrue(t.scaleBuffers().isEmpty());
            assertArrayEquals(blocks, bytes(t.data()));
            assertFalse(m.metadata().containsKey("gguf.tensor_type.w"));
            try (Tensor h = t.toTensor(scratch); Tensor f = h.dequantize()) {
                assertEquals(t.quantization(), h.descriptor().quantization());
                assertArrayEquals(new long[] {3, 64}, f.descriptor().shape().dims());
                float[] got = floats(f);
                assertEquals(0.5f, got[0]);
                assertEquals(-1f, got[1]);
                assertEquals(63.5f, got[2]);
                assertEquals(-64f, got[3]);
                assertEquals(0f, got[4]);
                assertArrayEquals(dequantizeQ8_0(blocks), got);
            }
        }
    }

    /**
     * Q4_0: uint4 with GGUF Q4_0 blocks; byte j of a block holds element j (low nibble) and
     * element j + 16 (high nibble), each worth d × (nibble − 8).
     */
    @Test
    void q4_0IsAGgufBlockTensorThatDequantizes() throws IOException {
        byte[] blocks = q4_0Blocks(new Random(12), 8);
        // Block 0 by hand: d = 2 (float16 0x4000); byte 0 = 0x1F, byte 1 = 0x80.
        blocks[0] = 0x00;
        blocks[1] = 0x40;
        blocks[2] = 0x1F;
        blocks[3] = (byte) 0x80;
        Path p = Files.write(tmp.resolve("q4.gguf"), gguf(List.of(), "w", new long[] {64, 2, 2}, 2, 0, blocks));
        try (ForeignModel m = Gguf.read(p); Arena scratch = Arena.ofConfined()) {
            ForeignTensor t = m.tensor("w");
            assertEquals(ElementType.UINT4, t.dtype());
            assertArrayEquals(new long[] {2, 2, 64}, t.shape());
            assertEquals(new Quantization.Block(Quantization.GgufFormat.Q4_0, 2, ElementType.FLOAT32),
                    t.quantization().orElseThrow());
            assertArrayEquals(blocks, bytes(t.data()));
            try (Tensor h = t.toTensor(scratch); Tensor f = h.dequantize()) {
                float[] got = floats(f);
                assertEquals(14f, got[0]);   // (15 − 8) × 2
                assertEquals(-16f, got[1]);  // (0 − 8) × 2
                assertEquals(-14f, got[16]); // (1 − 8) × 2
                assertEquals(0f, got[17]);   // (8 − 8) × 2
                assertArrayEquals(dequantizeQ4_0(blocks), got);
            }
        }
    }

    /**
     * A file written and quantized by llama.cpp's own gguf-py (tools/gguf/make_quant_fixture.py):
     * Q8_0 and Q4_0 dequantize bit for bit to what gguf-py's dequantizer gives, Q4_1 stays raw
     * bytes, and the Q8_0/Q4_0/F32 tensors come back from an HRRYFILE as the same GGUF bytes.
     */
    @Test
    void ggufPyQuantizedFileDequantizesAsGgufPyDoes() throws IOException {
        Path dir = TestSupport.resourceDir("gguf");
        Path hrry = tmp.resolve("q.hrry");
        Path back = tmp.resolve("back.gguf");
        try (ForeignModel m = Gguf.read(dir.resolve("quant.gguf"));
             ForeignModel want = Npz.read(dir.resolve("quant-dequantized.npz"), null);
             Arena scratch = Arena.ofConfined()) {
            assertEquals("hurray q8_0/q4_0 fixture", m.metadata().get("general.name"));
            ForeignTensor q8 = m.tensor("blk.0.attn_q.weight");
            ForeignTensor q4 = m.tensor("blk.0.ffn_up.weight");
            assertEquals(ElementType.INT8, q8.dtype());
            assertArrayEquals(new long[] {3, 4, 64}, q8.shape());
            assertEquals(ElementType.UINT4, q4.dtype());
            assertArrayEquals(new long[] {5, 96}, q4.shape());
            for (ForeignTensor t : List.of(q8, q4)) {
                try (Tensor h = t.toTensor(scratch); Tensor f = h.dequantize()) {
                    ForeignTensor ref = want.tensor(t.name());
                    assertArrayEquals(ref.shape(), f.descriptor().shape().dims(), t.name());
                    assertArrayEquals(bytes(ref.data()), bytes(f.buffer(0)), t.name());
                }
            }
            ForeignTensor raw = m.tensor("blk.0.ffn_down.weight");
            assertEquals(ElementType.UINT8, raw.dtype());
            assertArrayEquals(new long[] {2, 40}, raw.shape());
            assertEquals("q4_1", m.metadata().get("gguf.tensor_type.blk.0.ffn_down.weight"));

            List<ForeignTensor> writable = m.tensors().stream().filter(t -> t != raw).toList();
            new ForeignModel(writable, Map.of(), null).toHurrayFile(hrry);
            try (HurrayFile hf = HurrayFile.open(hrry); ForeignModel fromFile = ForeignModel.of(hf)) {
                Gguf.write(fromFile, back, null);
            }
            try (ForeignModel b = Gguf.read(back)) {
                for (ForeignTensor t : writable) {
                    ForeignTensor bt = b.tensor(t.name());
                    assertEquals(t.dtype(), bt.dtype(), t.name());
                    assertEquals(t.quantization(), bt.quantization(), t.name());
                    assertArrayEquals(t.shape(), bt.shape(), t.name());
                    assertArrayEquals(bytes(t.data()), bytes(bt.data()), t.name());
                }
            }
        }
    }

    /** GGUF → HRRYFILE → GGUF and GGUF → stream → GGUF keep each tensor's type, shape and bytes. */
    @Test
    void q8_0AndQ4_0RoundTripBitExact() throws IOException {
        Random rnd = new Random(13);
        byte[] q8 = q8_0Blocks(rnd, 3 * 2);
        byte[] q4 = q4_0Blocks(rnd, 2 * 2);
        byte[] f32 = new byte[20];
        rnd.nextBytes(f32);
        byte[] data = cat(q8, new byte[256 - q8.length], q4, new byte[96 - q4.length], f32);
        Path src = Files.write(tmp.resolve("src.gguf"), gguf(List.of(kv("general.name", 8, str("mixed"))), List.of(
                new Info("a", new long[] {64, 3}, 8, 0), new Info("b", new long[] {32, 2, 2}, 2, 256),
                new Info("c", new long[] {5}, 0, 352)), data));
        List<Path> routes = GgufRoutes.backToGguf(src, tmp, "m");
        Path direct = routes.get(0);
        Path viaFile = routes.get(1);
        Path viaStream = routes.get(2);
        try (HurrayFile hf = HurrayFile.open(tmp.resolve("m.hrry"))) {
            assertEquals(Quantization.GgufFormat.Q4_0,
                    ((Quantization.Block) hf.entry("b").orElseThrow().descriptor().quantization().orElseThrow()).format());
        }
        assertArrayEquals(Files.readAllBytes(direct), Files.readAllBytes(viaFile));
        assertArrayEquals(Files.readAllBytes(direct), Files.readAllBytes(viaStream));
        Gguf.Header h = Gguf.readHeader(viaFile);
        assertEquals(List.of(Gguf.GgmlType.Q8_0, Gguf.GgmlType.Q4_0, Gguf.GgmlType.F32),
                h.tensors().stream().map(Gguf.TensorInfo::type).toList());
        assertArrayEquals(new long[] {64, 3}, h.tensors().get(0).dims());
        assertArrayEquals(new long[] {32, 2, 2}, h.tensors().get(1).dims());
        try (ForeignModel back = Gguf.read(viaFile)) {
            assertEquals("mixed", back.metadata().get("general.name"));
            assertArrayEquals(q8, bytes(back.tensor("a").data()));
            assertArrayEquals(q4, bytes(back.tensor("b").data()));
            assertArrayEquals(f32, bytes(back.tensor("c").data()));
        }
    }

    /** Block tensors whose shape or size does not fit are one clear exception, on read and on write. */
    @Test
    void misfitBlockTensorsAreRefused() throws IOException {
        // ne0 = 40 is not a whole number of 32-element blocks.
        refused(gguf(List.of(), "w", new long[] {40, 2}, 8, 0, new byte[3 * 34]), "not a multiple of 32");
        refused(gguf(List.of(), "w", new long[] {48}, 2, 0, new byte[2 * 18]), "not a multiple of 32");
        // One byte short of 8 Q4_0 blocks.
        refused(gguf(List.of(), "w", new long[] {64, 4}, 2, 0, new byte[8 * 18 - 1]), "runs past the end");
        // Dimensions that need more bytes than lie before the next tensor.
        refused(gguf(List.of(), List.of(new Info("a", new long[] {64, 2}, 8, 0), new Info("b", new long[] {4}, 0, 64)),
                new byte[160]), "overlaps tensor 'b'");

        try (Arena arena = Arena.ofConfined()) {
            Quantization.Block q8 = Quantization.Block.of(Quantization.GgufFormat.Q8_0, 2);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ForeignTensor("w",
                    ElementType.INT8, new long[] {2, 40}, Layout.Kind.ROW_MAJOR, arena.allocate(80), q8, -1));
            assertTrue(e.getMessage().contains("not a multiple of 32"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> new ForeignTensor("w",
                    ElementType.INT8, new long[] {2, 64}, Layout.Kind.ROW_MAJOR, arena.allocate(128), q8, -1));
            assertTrue(e.getMessage().contains("needs 136"), e.getMessage());
            // A Hurray buffer larger than its blocks (the format allows it) has no GGUF form.
            TensorDescriptor d = TensorDescriptor.builder(ElementType.INT8, Shape.of(2, 64)).quantization(q8)
                    .name("w").buffer(BufferSpec.cpu(200)).build();
            ForeignFormatException fe = assertThrows(ForeignFormatException.class,
                    () -> ForeignTensor.of(d, arena.allocate(200)));
            assertTrue(fe.getMessage().contains("200 bytes for 136"), fe.getMessage());

            MemorySegment blocks = arena.allocate(136);
            refusedOnWrite(new ForeignTensor("w", ElementType.INT8, new long[] {2, 64}, Layout.Kind.ROW_MAJOR, blocks,
                    new Quantization.Block(Quantization.GgufFormat.Q8_0, 1, ElementType.FLOAT16), -1), "float32 values");
            refusedOnWrite(new ForeignTensor("w", ElementType.UINT8, new long[] {2, 64}, Layout.Kind.ROW_MAJOR, blocks,
                    q8, -1), "Q8_0 blocks store int8, not uint8");
            refusedOnWrite(new ForeignTensor("w", ElementType.INT8, new long[] {2, 64}, Layout.Kind.COLUMN_MAJOR, blocks,
                    q8, -1), "cannot reorder a column-major q8_0 tensor");
        }
    }

    /**
     * A tensor with no dimensions (GGUF rank 0, one element, as ggml reads it) is a Hurray scalar
     * both ways; a block type cannot be one.
     */
    @Test
    void rankZeroIsAScalar() throws IOException {
        byte[] one = new byte[4];
        ByteBuffer.wrap(one).order(ByteOrder.LITTLE_ENDIAN).putFloat(0, 2.5f);
        Path p = Files.write(tmp.resolve("scalar.gguf"), gguf(List.of(), "s", new long[0], 0, 0, one));
        Path again = tmp.resolve("again.gguf");
        try (ForeignModel m = Gguf.read(p)) {
            ForeignTensor t = m.tensor("s");
            assertArrayEquals(new long[0], t.shape());
            assertArrayEquals(one, bytes(t.data()));
            Gguf.write(m, again, null);
        }
        try (ForeignModel m = Gguf.read(again)) {
            assertArrayEquals(new long[0], m.tensor("s").shape());
            assertArrayEquals(one, bytes(m.tensor("s").data()));
        }
        refused(gguf(List.of(), "q", new long[0], 8, 0, new byte[34]), "has no dimensions");
    }

    /** A model with a null metadata key or value is refused when made, not when written. */
    @Test
    void nullMetadataIsRefusedWhenTheModelIsMade() {
        Map<String, String> nullValue = new java.util.HashMap<>();
        nullValue.put("general.name", null);
        NullPointerException e = assertThrows(NullPointerException.class, () -> new ForeignModel(List.of(), nullValue, null));
        assertTrue(e.getMessage().contains("null value for 'general.name'"), e.getMessage());
        Map<String, String> nullKey = new java.util.HashMap<>();
        nullKey.put(null, "x");
        e = assertThrows(NullPointerException.class, () -> new ForeignModel(List.of(), nullKey, null));
        assertTrue(e.getMessage().contains("null key"), e.getMessage());
    }

    /** A tensor name over 63 bytes of UTF-8 (what llama.cpp loads) is refused on write; 63 is written. */
    @Test
    void longTensorNamesAreRefusedOnWrite() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(4);
            String ok = "n".repeat(61) + "é"; // 63 bytes
            Path p = tmp.resolve("ok.gguf");
            Gguf.write(Models.model(List.of(new ForeignTensor(ok, ElementType.FLOAT32, new long[] {1},
                    Layout.Kind.ROW_MAJOR, v, null, -1)), Map.of()), p, null);
            try (ForeignModel m = Gguf.read(p)) {
                assertEquals(ok, m.tensors().get(0).name());
            }
            refusedOnWrite(new ForeignTensor(ok + "x", ElementType.FLOAT32, new long[] {1}, Layout.Kind.ROW_MAJOR, v,
                    null, -1), "a 64-byte name; GGUF tensor names hold at most 63 bytes");
        }
    }

    private void refusedOnWrite(ForeignTensor t, String message) {
        ForeignFormatException e = assertThrows(ForeignFormatException.class,
                () -> Gguf.write(Models.model(List.of(t), Map.of()), tmp.resolve("refused.gguf"), null));
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertFalse(Files.exists(tmp.resolve("refused.gguf")));
    }

    /** {@code n} llama.cpp block_q8_0: a float16 d (a finite value of either sign), 32 random int8. */
    private static byte[] q8_0Blocks(Random rnd, int n) {
        byte[] b = new byte[n * 34];
        rnd.nextBytes(b);
        for (int i = 0; i < n; i++) {
            putHalf(b, i * 34, (rnd.nextFloat() - 0.5f) * 4);
        }
        return b;
    }

    /** {@code n} llama.cpp block_q4_0: a float16 d, 16 random bytes of nibbles. */
    private static byte[] q4_0Blocks(Random rnd, int n) {
        byte[] b = new byte[n * 18];
        rnd.nextBytes(b);
        for (int i = 0; i < n; i++) {
            putHalf(b, i * 18, (rnd.nextFloat() - 0.5f) * 4);
        }
        return b;
    }

    private static void putHalf(byte[] b, int at, float v) {
        short h = Float.floatToFloat16(v);
        b[at] = (byte) h;
        b[at + 1] = (byte) (h >> 8);
    }

    private static float half(byte[] b, int at) {
        return Float.float16ToFloat((short) ((b[at] & 0xFF) | b[at + 1] << 8));
    }

    /** The test's own Q8_0 decode: element i of block k is d × q[i], in float32. */
    private static float[] dequantizeQ8_0(byte[] b) {
        float[] out = new float[b.length / 34 * 32];
        for (int k = 0; k < b.length / 34; k++) {
            float d = half(b, k * 34);
            for (int i = 0; i < 32; i++) {
                out[k * 32 + i] = b[k * 34 + 2 + i] * d;
            }
        }
        return out;
    }

    /** The test's own Q4_0 decode: byte j holds element j (low nibble) and j + 16 (high), each d × (q − 8). */
    private static float[] dequantizeQ4_0(byte[] b) {
        float[] out = new float[b.length / 18 * 32];
        for (int k = 0; k < b.length / 18; k++) {
            float d = half(b, k * 18);
            for (int j = 0; j < 16; j++) {
                int q = b[k * 18 + 2 + j] & 0xFF;
                out[k * 32 + j] = ((q & 0x0F) - 8) * d;
                out[k * 32 + j + 16] = ((q >> 4) - 8) * d;
            }
        }
        return out;
    }

    private static float[] floats(Tensor f) {
        MemorySegment s = f.buffer(0);
        float[] out = new float[(int) (s.byteSize() / 4)];
        for (int i = 0; i < out.length; i++) {
            out[i] = s.getAtIndex(Payloads.LE_FLOAT, i);
        }
        return out;
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
        // 2^20 + 1 empty arrays inside one array (12 bytes each in the file, far more as objects).
        int inner = (1 << 20) + 1;
        java.nio.ByteBuffer many = java.nio.ByteBuffer.allocate(12 + 12 * inner).order(ByteOrder.LITTLE_ENDIAN);
        many.putInt(9).putLong(inner);
        for (int i = 0; i < inner; i++) {
            many.putInt(0).putLong(0); // array[uint8], empty
        }
        refused(gguf(List.of(kv("many", 9, many.array())), "w", new long[] {4}, 0, 0, new byte[16]),
                "more than 1048576 arrays inside arrays");
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

    /**
     * Metadata arrays of numbers and booleans keep their values and text, and cost about the
     * bytes the file spends on them: a 4 MiB uint8 array must not become a list of boxed Longs
     * (some 20 bytes per element, which exhausts the heap on a GGUF file of a few hundred MiB).
     */
    @Test
    void numericMetadataArraysCostTheirBytes() throws IOException {
        List<byte[]> all = List.of(
                kv("u8", 9, cat(le32(0), le(2), new byte[] {(byte) 200, 7})),
                kv("i8", 9, cat(le32(1), le(2), new byte[] {-1, 5})),
                kv("u16", 9, cat(le32(2), le(1), new byte[] {-1, -1})),
                kv("i16", 9, cat(le32(3), le(1), new byte[] {-2, -1})),
                kv("u32", 9, cat(le32(4), le(1), le32(-1))),
                kv("i32", 9, cat(le32(5), le(1), le32(-3))),
                kv("f32", 9, cat(le32(6), le(1), le32(Float.floatToIntBits(1.5f)))),
                kv("b", 9, cat(le32(7), le(2), new byte[] {1, 0})),
                kv("u64", 9, cat(le32(10), le(1), le(-1))),
                kv("i64", 9, cat(le32(11), le(1), le(-4))),
                kv("f64", 9, cat(le32(12), le(1), le(Double.doubleToLongBits(-0.25)))),
                kv("nested", 9, cat(le32(9), le(2), le32(5), le(1), le32(7), le32(4), le(0))));
        Path p = write("arrays.gguf", gguf(all, "w", new long[] {4}, 0, 0, new byte[16]));
        Map<String, Gguf.Value> m = Gguf.readHeader(p).metadata();
        assertEquals(List.of(200L, 7L), m.get("u8").value());
        assertEquals(List.of(-1L, 5L), m.get("i8").value());
        assertEquals(List.of(65535L), m.get("u16").value());
        assertEquals(List.of(-2L), m.get("i16").value());
        assertEquals(List.of(4294967295L), m.get("u32").value());
        assertEquals(List.of(-3L), m.get("i32").value());
        assertEquals(List.of(1.5), m.get("f32").value());
        assertEquals(List.of(true, false), m.get("b").value());
        assertEquals(List.of(-1L), m.get("u64").value());
        assertEquals(List.of(-4L), m.get("i64").value());
        assertEquals(List.of(-0.25), m.get("f64").value());
        Map<String, String> texts = new LinkedHashMap<>();
        m.forEach((k, v) -> texts.put(k, v.text()));
        assertEquals(Map.ofEntries(Map.entry("u8", "[200,7]"), Map.entry("i8", "[-1,5]"), Map.entry("u16", "[65535]"),
                Map.entry("i16", "[-2]"), Map.entry("u32", "[4294967295]"), Map.entry("i32", "[-3]"),
                Map.entry("f32", "[1.5]"), Map.entry("b", "[true,false]"), Map.entry("u64", "[18446744073709551615]"),
                Map.entry("i64", "[-4]"), Map.entry("f64", "[-0.25]"), Map.entry("nested", "[[7],[]]")), texts);
        assertEquals("[18446744073709551615]", m.get("u64").text());
        assertEquals("[true,false]", m.get("b").text());
        assertEquals("[[7],[]]", m.get("nested").text());
        try (ForeignModel model = Gguf.read(p)) {
            assertEquals("[200,7]", model.metadata().get("u8"));
            assertEquals("[-0.25]", model.metadata().get("f64"));
        }
        refused(gguf(List.of(kv("b", 9, cat(le32(7), le(2), new byte[] {1, 2}))), "w", new long[] {4}, 0, 0,
                new byte[16]), "bool value 2");

        int n = 4 << 20;
        byte[] big = new byte[n];
        java.util.Arrays.fill(big, (byte) 200);
        Path large = write("large.gguf", gguf(List.of(kv("big", 9, cat(le32(0), le(n), big))), "w", new long[] {4}, 0, 0,
                new byte[16]));
        long before = allocatedBytes();
        Gguf.Header h = Gguf.readHeader(large);
        long allocated = allocatedBytes() - before;
        List<?> values = (List<?>) h.metadata().get("big").value();
        assertEquals(n, values.size());
        assertEquals(200L, values.get(n - 1));
        assertTrue(allocated < 2L * n, "reading a " + n + "-byte array allocated " + allocated + " bytes");
        // As model metadata, its text: "200," per element, in a growing StringBuilder, and no
        // boxed value or String per element (which took some 60 bytes each).
        before = allocatedBytes();
        try (ForeignModel model = Gguf.read(large)) {
            allocated = allocatedBytes() - before;
            assertEquals(4L * n + 1, model.metadata().get("big").length());
        }
        assertTrue(allocated < 20L * n, "reading a model with a " + n + "-byte array allocated " + allocated + " bytes");
    }

    /**
     * The bytes this thread has allocated so far (com.sun.management.ThreadMXBean, reached by
     * reflection: the module does not read java.management when the tests compile).
     */
    private static long allocatedBytes() {
        try {
            Object bean = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
            return (Long) Class.forName("com.sun.management.ThreadMXBean").getMethod("getCurrentThreadAllocatedBytes")
                    .invoke(bean);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
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

    static byte[] str(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return cat(le(b.length), b);
    }

    static byte[] kv(String key, int type, byte[] value) {
        return cat(str(key), le32(type), value);
    }

    private static byte[] cat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            o.writeBytes(p);
        }
        return o.toByteArray();
    }

    /** A tensor info: name, GGUF dimensions (ne0 first), ggml type code, data offset. */
    record Info(String name, long[] dims, int type, long offset) {
    }

    /** A GGUF v3 file, built from the published layout, with the given metadata and one tensor. */
    static byte[] gguf(List<byte[]> kvs, String name, long[] dims, int type, long offset, byte[] data) {
        return gguf(kvs, List.of(new Info(name, dims, type, offset)), data);
    }

    /** A GGUF v3 file with the given metadata, tensor infos and data section (alignment 32). */
    static byte[] gguf(List<byte[]> kvs, List<Info> tensors, byte[] data) {
        return gguf(kvs, tensors, data, 32);
    }

    /** A GGUF v3 file whose header is padded to {@code alignment} (give general.alignment in kvs if not 32). */
    static byte[] gguf(List<byte[]> kvs, List<Info> tensors, byte[] data, int alignment) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        o.writeBytes(new byte[] {'G', 'G', 'U', 'F'});
        o.writeBytes(le32(3));
        o.writeBytes(le(tensors.size()));
        o.writeBytes(le(kvs.size()));
        kvs.forEach(o::writeBytes);
        for (Info t : tensors) {
            o.writeBytes(str(t.name()));
            o.writeBytes(le32(t.dims().length));
            for (long d : t.dims()) {
                o.writeBytes(le(d));
            }
            o.writeBytes(le32(t.type()));
            o.writeBytes(le(t.offset()));
        }
        while (o.size() % alignment != 0) {
            o.write(0);
        }
        o.writeBytes(data);
        return o.toByteArray();
    }


    /** A header past the reader's first 1 MiB prefix (40,000 tensor infos) is read whole: the prefix grows. */
    @Test
    void aHeaderLargerThanTheFirstPrefixIsRead() throws IOException {
        Path p = tmp.resolve("many.gguf");
        List<ForeignTensor> ts = new java.util.ArrayList<>();
        Arena arena = Arena.ofShared();
        MemorySegment four = arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_FLOAT, 1, 2, 3, 4);
        for (int i = 0; i < 40_000; i++) {
            ts.add(new ForeignTensor(String.format("blk.%05d.attn_weight", i), ElementType.FLOAT32, new long[] {i == 39_999 ? 4 : 0},
                    Layout.Kind.ROW_MAJOR, i == 39_999 ? four : four.asSlice(0, 0), null, -1));
        }
        try (ForeignModel m = new ForeignModel(ts, java.util.Map.of(), arena)) {
            Gguf.write(m, p, null);
        }
        Gguf.Header h = Gguf.readHeader(p);
        assertTrue(h.dataOffset() > 1 << 20, "header of " + h.dataOffset() + " bytes");
        assertEquals(40_000, h.tensors().size());
        try (ForeignModel back = Gguf.read(p)) {
            ForeignTensor last = back.tensors().get(39_999);
            assertArrayEquals(new float[] {1, 2, 3, 4}, last.data().toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED));
        }
    }
}
