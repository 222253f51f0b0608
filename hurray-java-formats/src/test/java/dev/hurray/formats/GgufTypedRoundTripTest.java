package dev.hurray.formats;

import static dev.hurray.formats.TestSupport.bytes;
import static dev.hurray.formats.TestSupport.list;
import static dev.hurray.formats.TestSupport.map;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
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

/**
 * GGUF → Hurray (HRRYFILE, stream) → GGUF keeps every metadata value's GGUF type and every
 * tensor's ggml type and bytes: files written by llama.cpp's gguf-py
 * (tools/gguf/make_typed_fixture.py) come back byte for byte, and type records or raw rows
 * that do not fit are refused.
 */
class GgufTypedRoundTripTest {
    @TempDir
    Path tmp;

    private static final Path DIR = TestSupport.resourceDir("gguf");

    /** Our reader sees in the gguf-py files what gguf-py's reader sees (typed.json). */
    @Test
    void readerAgreesWithGgufPy() throws IOException {
        Map<String, Object> manifest = map(TestSupport.json(DIR.resolve("typed.json")));
        for (String file : List.of("typed.gguf", "typed-align64.gguf")) {
            Map<String, Object> want = map(manifest.get(file));
            Gguf.Header h = Gguf.readHeader(DIR.resolve(file));
            assertEquals(((BigInteger) want.get("alignment")).intValue(), h.alignment(), file);
            assertEquals(((BigInteger) want.get("data_offset")).longValue(), h.dataOffset(), file);
            List<Object> meta = list(want.get("metadata"));
            assertEquals(meta.size(), h.metadata().size(), file);
            int i = 0;
            for (Map.Entry<String, Gguf.Value> e : h.metadata().entrySet()) {
                Map<String, Object> m = map(meta.get(i++));
                String k = file + " " + e.getKey();
                assertEquals(m.get("key"), e.getKey(), file);
                Gguf.Value v = e.getValue();
                assertEquals(((BigInteger) m.get("type")).intValue(), v.type().code(), k);
                if (v.type() == Gguf.ValueType.ARRAY) {
                    assertEquals(((BigInteger) m.get("element_type")).intValue(), v.elementType().code(), k);
                }
                if (!m.containsKey("value")) {
                    continue;
                }
                if (v.type() == Gguf.ValueType.ARRAY) {
                    List<?> got = (List<?>) v.value();
                    List<Object> exp = list(m.get("value"));
                    assertEquals(exp.size(), got.size(), k);
                    for (int j = 0; j < got.size(); j++) {
                        assertScalar(exp.get(j), got.get(j), k + "[" + j + "]");
                    }
                } else {
                    assertScalar(m.get("value"), v.value(), k);
                }
            }
            List<Object> tensors = list(want.get("tensors"));
            assertEquals(tensors.size(), h.tensors().size(), file);
            for (int j = 0; j < tensors.size(); j++) {
                Map<String, Object> t = map(tensors.get(j));
                Gguf.TensorInfo got = h.tensors().get(j);
                assertEquals(t.get("name"), got.name());
                assertEquals(((BigInteger) t.get("type")).intValue(), got.type().code(), got.name());
                assertArrayEquals(TestSupport.longs(t.get("dims")), got.dims(), got.name());
                assertEquals(((BigInteger) t.get("offset")).longValue(), got.offset(), got.name());
                assertEquals(((BigInteger) t.get("bytes")).longValue(), got.bytes(), got.name());
            }
        }
    }

    /** gguf-py's value as typed.json holds it (floats as Python repr strings) against ours. */
    private static void assertScalar(Object want, Object got, String what) {
        if (got instanceof Double d) {
            String w = (String) want;
            double expected = switch (w) {
                case "nan" -> Double.NaN;
                case "inf" -> Double.POSITIVE_INFINITY;
                case "-inf" -> Double.NEGATIVE_INFINITY;
                default -> Double.parseDouble(w);
            };
            assertEquals(Double.doubleToLongBits(expected), Double.doubleToLongBits(d), what);
        } else if (got instanceof Long l) {
            assertEquals(want, want instanceof BigInteger && ((BigInteger) want).signum() >= 0 && ((BigInteger) want).bitLength() == 64
                    ? new BigInteger(Long.toUnsignedString(l)) : BigInteger.valueOf(l), what);
        } else {
            assertEquals(want, got, what);
        }
    }

    /** The typed model: text values plus type records, the key order, raw tensors under their ggml type. */
    @Test
    void typedMetadataIsTextPlusTypeRecords() throws IOException {
        try (ForeignModel m = Gguf.read(DIR.resolve("typed.gguf"))) {
            Map<String, String> md = m.metadata();
            assertEquals("3", md.get("gguf.version"));
            assertEquals("4096", md.get("llama.context_length"));
            assertEquals("uint32", md.get("gguf.type.llama.context_length"));
            assertEquals("18446744073709551615", md.get("test.u64"));
            assertEquals("uint64", md.get("gguf.type.test.u64"));
            assertEquals("1.0E-5", md.get("llama.attention.layer_norm_rms_epsilon"));
            assertEquals("float32", md.get("gguf.type.llama.attention.layer_norm_rms_epsilon"));
            assertEquals("-0.0", md.get("test.f32.neg_zero"));
            assertEquals("-Infinity", md.get("test.f64.inf"));
            assertEquals("false", md.get("test.bool.false"));
            assertEquals("bool", md.get("gguf.type.test.bool.false"));
            assertEquals("llama", md.get("general.architecture"));
            assertFalse(md.containsKey("gguf.type.general.architecture"), "strings need no type record");
            assertEquals("", md.get("test.string.empty"));
            assertEquals("[1,2]", md.get("test.string.json_like"));
            assertEquals("array[string]", md.get("gguf.type.tokenizer.ggml.tokens"));
            assertTrue(md.get("tokenizer.ggml.tokens").startsWith("[\"<unk>\",\"<s>\",\"</s>\",\"\\\"\",\"\\\\\",\"\\n\","),
                    md.get("tokenizer.ggml.tokens"));
            assertEquals("array[float32]", md.get("gguf.type.tokenizer.ggml.scores"));
            assertEquals("[0.0,-1.5,1.4E-45,-0.0,Infinity,-Infinity,NaN,3.4028235E38]", md.get("tokenizer.ggml.scores"));
            assertEquals("array[uint64]", md.get("gguf.type.test.u64s"));
            assertEquals("[0,1,18446744073709551615]", md.get("test.u64s"));
            assertEquals("[[1,2,3],[\"a\",\"b\"],[[true],[7]],[0.5]]", md.get("test.nested"));
            assertEquals("array[array[int32],array[string],array[array[bool],array[int32]],array[float32]]",
                    md.get("gguf.type.test.nested"));
            assertEquals("array[array[int32],array[int32],array[int32]]", md.get("gguf.type.test.nested.same"));
            assertEquals("q4_k", md.get("gguf.tensor_type.blk.0.attn_k.weight"));
            assertEquals("q6_k", md.get("gguf.tensor_type.blk.0.ffn_down.weight"));
            assertTrue(md.get("gguf.key_order").startsWith("[\"general.architecture\",\"general.name\",\"llama.context_length\","));
            assertArrayEquals(new long[] {2, 144}, m.tensor("blk.0.attn_k.weight").shape());
            assertArrayEquals(new long[] {1, 420}, m.tensor("blk.0.ffn_down.weight").shape());
        }
    }

    /** gguf-py's files through the library: directly, through an HRRYFILE and through a stream, byte for byte. */
    @Test
    void ggufPyFilesRoundTripByteForByte() throws IOException {
        for (String file : List.of("typed.gguf", "typed-align64.gguf", "quant.gguf")) {
            byte[] original = Files.readAllBytes(DIR.resolve(file));
            for (Path back : roundTrips(DIR.resolve(file), file)) {
                assertArrayEquals(original, Files.readAllBytes(back), file + " via " + back.getFileName());
            }
        }
    }

    /** The three routes back to GGUF: direct, HRRYFILE, stream. */
    private List<Path> roundTrips(Path src, String tag) throws IOException {
        return GgufRoutes.backToGguf(src, tmp, tag);
    }

    /**
     * A tensor of rank 0 (gguf-py writes a 0-d numpy array with no dimensions; write() writes a
     * scalar so) reads as a scalar and comes back byte for byte by every route, so a scalar
     * converted to GGUF can be read back. A block type has no scalar (its ne0 would be 1).
     */
    @Test
    void scalarTensorsReadAndRoundTripByteForByte() throws IOException {
        byte[] src = GgufTest.gguf(List.of(), "s", new long[0], 0, 0, cat(le32(Float.floatToIntBits(3.5f)), new byte[28]));
        Path p = Files.write(tmp.resolve("scalar.gguf"), src);
        try (ForeignModel m = Gguf.read(p)) {
            ForeignTensor s = m.tensor("s");
            assertArrayEquals(new long[0], s.shape());
            assertEquals(ElementType.FLOAT32, s.dtype());
            assertEquals(3.5f, s.data().get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
        }
        for (Path back : roundTrips(p, "scalar")) {
            assertArrayEquals(src, Files.readAllBytes(back), back.getFileName().toString());
        }
        Path q = Files.write(tmp.resolve("scalar-q8.gguf"), GgufTest.gguf(List.of(), "q", new long[0], 8, 0, new byte[34]));
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Gguf.read(q));
        assertTrue(e.getMessage().contains("Q8_0 stores blocks of 32 elements, and the tensor has no dimensions"), e.getMessage());
    }

    /**
     * What gguf-py cannot write: empty arrays (of scalars, of arrays, inside arrays), float64
     * NaN, arrays nested four deep, a non-default alignment; byte for byte too.
     */
    @Test
    void emptyAndDeepArraysRoundTripByteForByte() throws IOException {
        byte[] empty = cat(le32(0), le(0));                      // array[uint8] []
        byte[] emptyOfArrays = cat(le32(9), le(0));               // array[] (of arrays)
        byte[] innerEmpty = cat(le32(9), le(2), le32(8), le(0), le32(5), le(1), le32(-7)); // [[], [-7]]
        byte[] deep = cat(le32(9), le(1), le32(9), le(1), le32(9), le(1), le32(7), le(1), new byte[] {1});
        byte[] src = GgufTest.gguf(List.of(
                GgufTest.kv("general.alignment", 4, le32(16)),
                GgufTest.kv("e", 9, empty),
                GgufTest.kv("ea", 9, emptyOfArrays),
                GgufTest.kv("ie", 9, innerEmpty),
                GgufTest.kv("deep", 9, deep),
                GgufTest.kv("nan", 12, le(Double.doubleToRawLongBits(Double.NaN))),
                GgufTest.kv("s", 8, GgufTest.str(""))), List.of(
                new GgufTest.Info("a", new long[] {3}, 0, 0), new GgufTest.Info("b", new long[] {1}, 0, 16)),
                cat(new byte[12], new byte[4], new byte[] {1, 2, 3, 4}, new byte[12]), 16);
        Path p = Files.write(tmp.resolve("hand.gguf"), src);
        try (ForeignModel m = Gguf.read(p)) {
            assertEquals("array[uint8]", m.metadata().get("gguf.type.e"));
            assertEquals("[]", m.metadata().get("e"));
            assertEquals("array[]", m.metadata().get("gguf.type.ea"));
            assertEquals("array[array[string],array[int32]]", m.metadata().get("gguf.type.ie"));
            assertEquals("[[],[-7]]", m.metadata().get("ie"));
            assertEquals("array[array[array[array[bool]]]]", m.metadata().get("gguf.type.deep"));
            assertEquals("NaN", m.metadata().get("nan"));
        }
        for (Path back : roundTrips(p, "hand")) {
            assertArrayEquals(src, Files.readAllBytes(back), back.getFileName().toString());
        }
    }

    /**
     * Metadata from other sources (plain strings, no records) is written as GGUF strings, with no
     * general.alignment added; a user may add type records and reorder or remove keys.
     */
    @Test
    void plainMetadataIsStringsAndRecordsAreHonoured() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor t = Models.random(arena, new Random(3), "w", ElementType.FLOAT32, Layout.Kind.ROW_MAJOR, 2, 3);
            Map<String, String> meta = new LinkedHashMap<>();
            meta.put("format", "pt");
            meta.put("llama.context_length", "2048");
            meta.put("gguf.type.llama.context_length", "uint32");
            meta.put("scores", " [ 1.5 , -2 ,NaN ]");
            meta.put("gguf.type.scores", "array[float32]");
            meta.put("gguf.type.gone", "int8"); // a record whose key is gone is ignored
            meta.put("gguf.key_order", "[\"scores\",\"removed\",\"format\"]");
            Path p = tmp.resolve("plain.gguf");
            Gguf.write(Models.model(List.of(t), meta), p, null);
            Gguf.Header h = Gguf.readHeader(p);
            assertEquals(List.of("scores", "format", "llama.context_length"), List.copyOf(h.metadata().keySet()));
            assertEquals(Gguf.ValueType.STRING, h.metadata().get("format").type());
            assertEquals(Gguf.ValueType.UINT32, h.metadata().get("llama.context_length").type());
            assertEquals(2048L, h.metadata().get("llama.context_length").value());
            assertEquals(Gguf.ValueType.FLOAT32, h.metadata().get("scores").elementType());
            assertEquals("[1.5,-2.0,NaN]", h.metadata().get("scores").text());
            assertEquals(32, h.alignment());
            assertNull(h.metadata().get("general.alignment"));
            assertEquals(0, (Files.size(p) - h.dataOffset()) % 32, "the data is padded to the alignment");
        }
    }

    /** A raw uint8 tensor named by a tensor type record is written as that ggml type, with ne0 from its rows. */
    @Test
    void rawRowsAreWrittenAsTheirGgmlType() throws IOException {
        byte[] k = new byte[3 * 2 * 210]; // Q6_K: 3 rows of 512 elements = 2 super-blocks of 210 bytes
        new Random(4).nextBytes(k);
        byte[] q8 = new byte[2 * 34];      // Q8_0 carried raw, as .hrry files from before Q8_0 support hold it
        new Random(5).nextBytes(q8);
        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor tk = new ForeignTensor("k", ElementType.UINT8, new long[] {3, 420}, Layout.Kind.ROW_MAJOR,
                    arena.allocateFrom(ValueLayout.JAVA_BYTE, k), null, -1);
            ForeignTensor t8 = new ForeignTensor("q", ElementType.UINT8, new long[] {1, 68}, Layout.Kind.ROW_MAJOR,
                    arena.allocateFrom(ValueLayout.JAVA_BYTE, q8), null, -1);
            Path p = tmp.resolve("raw.gguf");
            Gguf.write(Models.model(List.of(tk, t8), Map.of("gguf.tensor_type.k", "q6_k", "gguf.tensor_type.q", "Q8_0")),
                    p, null);
            Gguf.Header h = Gguf.readHeader(p);
            assertTrue(h.metadata().isEmpty(), "tensor type records are not GGUF metadata");
            assertEquals(Gguf.GgmlType.Q6_K, h.tensors().get(0).type());
            assertArrayEquals(new long[] {512, 3}, h.tensors().get(0).dims());
            assertEquals(Gguf.GgmlType.Q8_0, h.tensors().get(1).type());
            assertArrayEquals(new long[] {64, 1}, h.tensors().get(1).dims());
            try (ForeignModel back = Gguf.read(p)) {
                assertArrayEquals(k, bytes(back.tensor("k").data()));
                assertArrayEquals(q8, bytes(back.tensor("q").data()));
            }
        }
    }

    @Test
    void typeRecordsThatDisagreeWithValuesAreRefused() throws IOException {
        refusedOnWrite(Map.of("k", "256", "gguf.type.k", "uint8"), "256 is out of range for uint8");
        refusedOnWrite(Map.of("k", "-1", "gguf.type.k", "uint64"), "-1 is out of range for uint64");
        refusedOnWrite(Map.of("k", "18446744073709551616", "gguf.type.k", "uint64"), "out of range for uint64");
        refusedOnWrite(Map.of("k", "9223372036854775808", "gguf.type.k", "int64"), "out of range for int64");
        refusedOnWrite(Map.of("k", "12 ", "gguf.type.k", "uint32"), "is not one uint32");
        refusedOnWrite(Map.of("k", "abc", "gguf.type.k", "int32"), "has no int32");
        refusedOnWrite(Map.of("k", "1.5", "gguf.type.k", "int16"), "has no int16");
        refusedOnWrite(Map.of("k", "1e39", "gguf.type.k", "float32"), "out of range for float32");
        refusedOnWrite(Map.of("k", "0x10", "gguf.type.k", "float64"), "has no float64");
        refusedOnWrite(Map.of("k", "yes", "gguf.type.k", "bool"), "has no bool");
        refusedOnWrite(Map.of("k", "[1,2", "gguf.type.k", "array[int32]"), "needs ','");
        refusedOnWrite(Map.of("k", "[1,\"2\"]", "gguf.type.k", "array[int32]"), "has no int32");
        refusedOnWrite(Map.of("k", "[\"a\\q\"]", "gguf.type.k", "array[string]"), "unknown escape");
        refusedOnWrite(Map.of("k", "[\"\\ud800\"]", "gguf.type.k", "array[string]"), "not valid Unicode");
        refusedOnWrite(Map.of("k", "[[1],[2]]", "gguf.type.k", "array[array[int32]]"), "more elements than the 1 arrays");
        refusedOnWrite(Map.of("k", "[[1]]", "gguf.type.k", "array[array[int32],array[int32]]"), "has 1 elements");
        refusedOnWrite(Map.of("k", "[1]", "gguf.type.k", "array[array[int32]]"), "needs '['");
        refusedOnWrite(Map.of("k", "1", "gguf.type.k", "uint31"), "unknown type 'uint31'");
        refusedOnWrite(Map.of("k", "[1]", "gguf.type.k", "array[int32"), "needs ']'");
        refusedOnWrite(Map.of("k", "[[1]]", "gguf.type.k", "array[int32,array[int32]]"), "needs ']'");
        refusedOnWrite(Map.of("k", "[]", "gguf.type.k", "array[array[int32],bool]"), "lists only array types");
        refusedOnWrite(Map.of("k", "[[[[[1]]]]]", "gguf.type.k", "array[array[array[array[array[int32]]]]]"),
                "nested deeper than 4");
        refusedOnWrite(Map.of("k", "x", "gguf.key_order", "{\"k\":1}"), "needs '['");
        refusedOnWrite(Map.of("k", "x", "gguf.key_order", "[\"k\",\"k\"]"), "lists 'k' twice");
        refusedOnWrite(Map.of("k", "x", "gguf.key_order", "[\"gguf.type.k\"]"), "a record, not a GGUF key");
        refusedOnWrite(Map.of("general.alignment", "48"), "power of two");
        refusedOnWrite(Map.of("gguf.version", "1"), "versions 2 and 3 are written");
        refusedOnWrite(Map.of("general.alignment", "32", "gguf.type.general.alignment", "uint64"), "must be a uint32");
        // A huge array length cannot be declared: the count is what the text holds, so a
        // million-element record costs what its text costs.
        String million = "[" + "0,".repeat(999_999) + "0]";
        Path p = tmp.resolve("big.gguf");
        Gguf.write(Models.model(List.of(), Map.of("k", million, "gguf.type.k", "array[uint8]")), p, null);
        assertEquals(1_000_000, ((List<?>) Gguf.readHeader(p).metadata().get("k").value()).size());
    }

    @Test
    void rawRowsThatDoNotFitAreRefused() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor u8 = new ForeignTensor("w", ElementType.UINT8, new long[] {2, 100}, Layout.Kind.ROW_MAJOR,
                    arena.allocate(200), null, -1);
            refusedOnWrite(List.of(u8), Map.of("gguf.tensor_type.w", "q4_k"), "rows of 100 bytes are not whole Q4_K blocks of 144");
            refusedOnWrite(List.of(u8), Map.of("gguf.tensor_type.w", "f32"), "names no ggml block type");
            refusedOnWrite(List.of(u8), Map.of("gguf.tensor_type.w", "q9_k"), "names no ggml block type");
            ForeignTensor f32 = new ForeignTensor("w", ElementType.FLOAT32, new long[] {36}, Layout.Kind.ROW_MAJOR,
                    arena.allocate(144), null, -1);
            refusedOnWrite(List.of(f32), Map.of("gguf.tensor_type.w", "q4_k"), "raw ggml blocks are a plain uint8 tensor");
            ForeignTensor scalar = new ForeignTensor("w", ElementType.UINT8, new long[] {}, Layout.Kind.ROW_MAJOR,
                    arena.allocate(1), null, -1);
            refusedOnWrite(List.of(scalar), Map.of("gguf.tensor_type.w", "q4_k"), "of rank 0");
        }
    }

    /**
     * Mutated values, type records and key orders (a character replaced, inserted or deleted)
     * are written or refused with a ForeignFormatException, never anything else; what is
     * written reads back.
     */
    @Test
    void mutatedRecordsAreWrittenOrRefusedCleanly() throws IOException {
        Map<String, String> original;
        try (ForeignModel m = Gguf.read(DIR.resolve("typed.gguf"))) {
            original = new LinkedHashMap<>(m.metadata());
        }
        original.keySet().removeIf(k -> k.startsWith("gguf.tensor_type."));
        List<String> keys = List.copyOf(original.keySet());
        String alphabet = "[]{},\"\\:.-+eE0123456789aNIyfinrtu \u0000\ud800";
        Random rnd = new Random(20261201);
        Path target = tmp.resolve("mutated.gguf");
        int written = 0;
        for (int i = 0; i < 3000; i++) {
            Map<String, String> meta = new LinkedHashMap<>(original);
            String key = keys.get(rnd.nextInt(keys.size()));
            StringBuilder v = new StringBuilder(meta.get(key));
            int at = v.isEmpty() ? 0 : rnd.nextInt(v.length());
            char ch = alphabet.charAt(rnd.nextInt(alphabet.length()));
            switch (v.isEmpty() ? 1 : rnd.nextInt(3)) {
                case 0 -> v.setCharAt(at, ch);
                case 1 -> v.insert(at, ch);
                default -> v.deleteCharAt(at);
            }
            meta.put(key, v.toString());
            try {
                Gguf.write(Models.model(List.of(), meta), target, null);
                Gguf.readHeader(target);
                written++;
            } catch (ForeignFormatException refused) {
                assertFalse(refused.getMessage().contains("\n"), refused.getMessage());
            }
        }
        assertTrue(written > 100 && written < 2900, "written: " + written);
    }

    /** A GGUF key in the namespace of the records, and a hostile array length, are refused on read. */
    @Test
    void hostileFilesAreRefusedOnRead() throws IOException {
        for (String key : List.of("gguf.type.x", "gguf.tensor_type.w", "gguf.key_order", "gguf.version")) {
            Path p = Files.write(tmp.resolve("reserved.gguf"), GgufTest.gguf(List.of(GgufTest.kv(key, 8, GgufTest.str("uint32"))),
                    "w", new long[] {4}, 0, 0, new byte[16]));
            ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Gguf.read(p));
            assertTrue(e.getMessage().contains("reserves for its own records"), e.getMessage());
        }
        // An array of 2^62 strings nested in an array of arrays.
        Path p = Files.write(tmp.resolve("long.gguf"), GgufTest.gguf(List.of(GgufTest.kv("a", 9,
                cat(le32(9), le(1), le32(8), le(1L << 62)))), "w", new long[] {4}, 0, 0, new byte[16]));
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Gguf.read(p));
        assertTrue(e.getMessage().contains("remaining bytes can hold"), e.getMessage());
    }

    private void refusedOnWrite(Map<String, String> meta, String message) throws IOException {
        refusedOnWrite(List.of(), meta, message);
    }

    private void refusedOnWrite(List<ForeignTensor> ts, Map<String, String> meta, String message) throws IOException {
        Path target = tmp.resolve("refused.gguf");
        ForeignFormatException e = assertThrows(ForeignFormatException.class,
                () -> Gguf.write(Models.model(ts, meta), target, null), message);
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
        assertFalse(Files.exists(target));
        try (var files = Files.list(tmp)) {
            assertTrue(files.noneMatch(f -> f.getFileName().toString().contains("refused")), "no temporary file left");
        }
    }

    private static byte[] le(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }

    private static byte[] le32(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array();
    }

    private static byte[] cat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            o.writeBytes(p);
        }
        return o.toByteArray();
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
