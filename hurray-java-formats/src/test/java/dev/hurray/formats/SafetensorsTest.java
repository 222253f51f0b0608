package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import static dev.hurray.formats.TestSupport.bytes;
import static dev.hurray.formats.TestSupport.longs;
import static dev.hurray.formats.TestSupport.map;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SafetensorsTest {
    @TempDir
    Path tmp;

    /** A safetensors file built by hand: length, header (padded to 8 with spaces), data. */
    static byte[] file(String header, byte[] data) {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).array());
        out.writeBytes(h);
        out.writeBytes(data);
        return out.toByteArray();
    }

    private Path write(String name, byte[] content) throws IOException {
        Path p = tmp.resolve(name);
        Files.write(p, content);
        return p;
    }

    @Test
    void readsTheLowPrecisionDtypesOfSafetensors08() throws IOException {
        // F4: 4 elements in 2 bytes, element 0 in the low nibble (1.0 = 0x2, -6.0 = 0xF, 0.5 = 0x1, 3.0 = 0x5);
        // F6_E2M3: 4 elements in 3 bytes (1.0, -1.0, 0.125, -7.5); F8_E8M0: 2^(c-127).
        int f6 = 0x08 | 0x28 << 6 | 0x01 << 12 | 0x3F << 18;
        byte[] data = {(byte) 0xF2, 0x51, (byte) f6, (byte) (f6 >> 8), (byte) (f6 >> 16), 127, (byte) 130};
        String header = "{\"f4\":{\"dtype\":\"F4\",\"shape\":[4],\"data_offsets\":[0,2]},"
                + "\"f6\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[2,5]},"
                + "\"e8\":{\"dtype\":\"F8_E8M0\",\"shape\":[2],\"data_offsets\":[5,7]}}";
        Path p = write("lowp.safetensors", file(header, data));
        try (ForeignModel m = Safetensors.read(p)) {
            assertEquals(ElementType.FLOAT4_E2M1FN, m.tensor("f4").dtype());
            assertEquals(ElementType.FLOAT6_E2M3FN, m.tensor("f6").dtype());
            assertEquals(ElementType.FLOAT8_E8M0FNU, m.tensor("e8").dtype());
        }
        // The values, through a Hurray tensor of the same bytes (dequantized by the core).
        try (ForeignModel m = Safetensors.read(p)) {
            float[][] want = {{1f, -6f, 0.5f, 3f}, {1f, -1f, 0.125f, -7.5f}, {1f, 8f}};
            String[] names = {"f4", "f6", "e8"};
            for (int i = 0; i < names.length; i++) {
                ForeignTensor ft = m.tensor(names[i]);
                try (dev.hurray.Tensor t = dev.hurray.Tensor.copyOf(Bridge.descriptor(ft), ft.data())) {
                    assertArrayEquals(want[i], t.toFloatArray(), names[i]);
                }
            }
            assertEquals("F6_E3M2", Safetensors.dtypeName(ElementType.FLOAT6_E3M2FN));
            assertEquals("F8_E4M3FNUZ", Safetensors.dtypeName(ElementType.FLOAT8_E4M3FNUZ));
            assertEquals(ElementType.FLOAT8_E5M2FNUZ, Safetensors.fromDtypeName("F8_E5M2FNUZ"));
            assertEquals(null, Safetensors.dtypeName(ElementType.FLOAT8_E3M4));
        }
    }

    @Test
    void readsAHandBuiltFileExactly() throws IOException {
        byte[] data = new byte[16 + 24 + 1];
        new Random(1).nextBytes(data);
        String header = "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"x\"},"
                + "\"b\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[16,40]},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                + "\"flag\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[40,41]},"
                + "\"none\":{\"dtype\":\"F16\",\"shape\":[0,7],\"data_offsets\":[41,41]}}  ";
        Path p = write("h.safetensors", file(header, data));
        try (ForeignModel m = Safetensors.read(p)) {
            assertEquals(Map.of("format", "pt", "note", "x"), m.metadata());
            List<String> names = m.tensors().stream().map(ForeignTensor::name).toList();
            assertEquals(List.of("a", "b", "flag", "none"), names, "data-offset order");
            long base = 8 + header.getBytes(StandardCharsets.UTF_8).length;
            ForeignTensor a = m.tensor("a");
            assertEquals(ElementType.FLOAT32, a.dtype());
            assertArrayEquals(new long[] {2, 2}, a.shape());
            assertArrayEquals(Arrays.copyOfRange(data, 0, 16), bytes(a.data()));
            assertEquals(base, a.sourceOffset());
            ForeignTensor b = m.tensor("b");
            assertEquals(ElementType.INT64, b.dtype());
            assertArrayEquals(Arrays.copyOfRange(data, 16, 40), bytes(b.data()));
            assertEquals(base + 16, b.sourceOffset());
            assertEquals(0, m.tensor("flag").rank());
            assertEquals(0, m.tensor("none").byteSize());
        }
    }

    @Test
    void roundTripsEveryDtypeWithColumnMajorReordered() throws IOException {
        Random rnd = new Random(7);
        List<ForeignTensor> ts = new ArrayList<>();
        List<ElementType> types = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            for (ElementType t : ElementType.values()) {
                if (Safetensors.dtypeName(t) == null) {
                    continue;
                }
                types.add(t);
                // 3 x 4: every sub-byte type ends on a byte boundary, as safetensors requires.
                ts.add(Models.random(arena, rnd, "t_" + t, t, Layout.Kind.ROW_MAJOR, 3, 4));
            }
            ts.add(Models.random(arena, rnd, "scalar", ElementType.FLOAT64, Layout.Kind.ROW_MAJOR));
            ts.add(Models.random(arena, rnd, "empty", ElementType.INT16, Layout.Kind.ROW_MAJOR, 4, 0));
            ForeignTensor col = Models.random(arena, rnd, "col", ElementType.FLOAT32, Layout.Kind.COLUMN_MAJOR, 2, 3, 4);
            ts.add(col);
            Map<String, String> meta = new LinkedHashMap<>();
            meta.put("format", "pt");
            meta.put("unicode", "\u00e9\u4e2d");
            Path out = tmp.resolve("rt.safetensors");
            Safetensors.write(Models.model(ts, meta), out, null);
            assertEquals(22, types.size(), "every safetensors dtype with a Hurray type");

            // The test's own look at the file: header length, alignment, offsets.
            byte[] all = Files.readAllBytes(out);
            long hlen = ByteBuffer.wrap(all, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
            assertEquals(0, (8 + hlen) % 8, "data starts 8-aligned");
            Map<String, Object> header = map(Json.parse(all, 8, (int) hlen, "t"));
            assertEquals(meta, header.get("__metadata__"));
            for (ForeignTensor t : ts) {
                Map<String, Object> e = map(header.get(t.name()));
                long[] off = longs(e.get("data_offsets"));
                assertEquals(0, off[0] % (t.dtype().isSubByte() ? 1 : Payloads.byteWidth(t.dtype())), t.name() + " offset aligned to its width");
                byte[] stored = Arrays.copyOfRange(all, (int) (8 + hlen + off[0]), (int) (8 + hlen + off[1]));
                byte[] expect = t.layout() == Layout.Kind.COLUMN_MAJOR
                        ? Models.rowMajorOf(bytes(t.data()), t.shape(), Payloads.byteWidth(t.dtype()))
                        : bytes(t.data());
                assertArrayEquals(expect, stored, t.name());
                assertArrayEquals(t.shape(), longs(e.get("shape")));
                assertEquals(Safetensors.dtypeName(t.dtype()), e.get("dtype"));
            }
            try (ForeignModel back = Safetensors.read(out)) {
                assertEquals(meta, back.metadata());
                assertEquals(ts.size(), back.tensors().size());
                for (ForeignTensor t : ts) {
                    ForeignTensor b = back.tensor(t.name());
                    assertEquals(t.dtype(), b.dtype());
                    assertArrayEquals(t.shape(), b.shape());
                    assertEquals(Layout.Kind.ROW_MAJOR, b.layout());
                    byte[] expect = t.layout() == Layout.Kind.COLUMN_MAJOR
                            ? Models.rowMajorOf(bytes(t.data()), t.shape(), 4)
                            : bytes(t.data());
                    assertArrayEquals(expect, bytes(b.data()), t.name());
                }
            }
            assertEquals(List.of(out), Files.list(tmp).toList(), "no temporary file left behind");
        }
    }

    @Test
    void refusesWhatItCannotRecord() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor c128 = Models.random(arena, new Random(1), "c", ElementType.COMPLEX128, Layout.Kind.ROW_MAJOR, 2);
            Path out = tmp.resolve("x.safetensors");
            ForeignFormatException e = assertThrows(ForeignFormatException.class,
                    () -> Safetensors.write(Models.model(List.of(c128), Map.of()), out, null));
            assertTrue(e.getMessage().contains("complex128"), e.getMessage());
            ForeignTensor raw = Models.random(arena, new Random(1), "q", ElementType.UINT8, Layout.Kind.ROW_MAJOR, 4);
            ForeignTensor q = new ForeignTensor("q", ElementType.UINT8, new long[] {4}, Layout.Kind.ROW_MAJOR, raw.data(),
                    new Quantization.PerTensorAffine(0.5, -1, ElementType.FLOAT32), -1);
            e = assertThrows(ForeignFormatException.class,
                    () -> Safetensors.write(Models.model(List.of(q), Map.of()), out, null));
            assertTrue(e.getMessage().contains("quantiz"), e.getMessage());
            assertFalse(Files.exists(out));
            assertEquals(0, Files.list(tmp).count(), "nothing written");
        }
    }

    // ---- MX scale pairing -------------------------------------------------------------------

    /** The header entries of a safetensors file, read with pairing off (name → dtype + shape). */
    private static Map<String, String> entries(Path p) throws IOException {
        Map<String, String> m = new java.util.TreeMap<>();
        try (ForeignModel f = Safetensors.read(p, Safetensors.Options.defaults().withoutPairing())) {
            for (ForeignTensor t : f.tensors()) {
                assertTrue(t.quantization().isEmpty());
                m.put(t.name(), Safetensors.dtypeName(t.dtype()) + t.shapeString());
            }
        }
        return m;
    }

    @Test
    void mxTensorRoundTripsAsValuesPlusScales() throws IOException {
        float[] in = new float[2 * 64];
        for (int i = 0; i < in.length; i++) {
            in[i] = (i % 17 - 8) * 0.75f * (1 + i / 32);
        }
        Path out = tmp.resolve("mx.safetensors");
        for (ElementType et : List.of(ElementType.FLOAT4_E2M1FN, ElementType.FLOAT6_E3M2FN, ElementType.FLOAT8_E4M3FN,
                ElementType.INT8)) {
            try (dev.hurray.Tensor src = dev.hurray.Tensor.of(in, 2, 64);
                    dev.hurray.Tensor mx = src.quantize(et, Quantization.Mx.of(1))) {
                ForeignTensor ft = ForeignTensor.of(mx.descriptor().withName("layer.weight"), mx.buffers());
                Safetensors.write(Models.model(List.of(ft), Map.of()), out, null);
                assertEquals(Map.of("layer.weight", Safetensors.dtypeName(et) + "[2, 64]", "layer.weight_scale", "F8_E8M0[2, 2]"),
                        entries(out), et.toString());
                try (ForeignModel m = Safetensors.read(out)) {
                    assertEquals(1, m.tensors().size());
                    ForeignTensor t = m.tensor("layer.weight");
                    assertEquals(et, t.dtype());
                    assertArrayEquals(new long[] {2, 64}, t.shape());
                    assertEquals(Quantization.Mx.of(1), t.quantization().orElseThrow());
                    assertArrayEquals(bytes(mx.buffer(0)), bytes(t.data()), "values");
                    assertEquals(1, t.scaleBuffers().size());
                    assertArrayEquals(bytes(mx.buffer(1)), bytes(t.scaleBuffers().get(0)), "scales");
                    try (Arena a = Arena.ofConfined(); dev.hurray.Tensor back = t.toTensor(a)) {
                        assertArrayEquals(mx.toFloatArray(), back.toFloatArray());
                    }
                    // Through an HRRYFILE (one tensor, two buffers) and back to safetensors: the same bytes.
                    Path hrry = tmp.resolve("mx.hrry");
                    m.toHurrayFile(hrry);
                    Path again = tmp.resolve("again.safetensors");
                    try (dev.hurray.HurrayFile f = dev.hurray.HurrayFile.open(hrry); ForeignModel h = ForeignModel.of(f)) {
                        assertEquals(Quantization.Mx.of(1), h.tensor("layer.weight").quantization().orElseThrow());
                        assertEquals(et.byteSizeOf(128) + 4, h.totalBytes(), "values and scales");
                        Safetensors.write(h, again, null);
                    }
                    assertArrayEquals(Files.readAllBytes(out), Files.readAllBytes(again));
                }
            }
        }
    }

    @Test
    void handBuiltValuesAndScalesPair() throws IOException {
        // "w": F8_E4M3 [2, 32], every element 0x38 (1.0); "w_scale": F8_E8M0 [2, 1] = 2^1 and 2^-1.
        // "q": I8 [32] (MXINT8: int8 × 2^-6), 64 → 1.0; "q_scale" 2^0. "alone": F4 [32], no partner.
        byte[] data = new byte[64 + 2 + 32 + 1 + 16];
        Arrays.fill(data, 0, 64, (byte) 0x38);
        data[64] = (byte) 128;
        data[65] = (byte) 126;
        Arrays.fill(data, 66, 98, (byte) 64);
        data[98] = 127;
        String header = "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,32],\"data_offsets\":[0,64]},"
                + "\"w_scale\":{\"dtype\":\"F8_E8M0\",\"shape\":[2,1],\"data_offsets\":[64,66]},"
                + "\"q\":{\"dtype\":\"I8\",\"shape\":[32],\"data_offsets\":[66,98]},"
                + "\"q_scale\":{\"dtype\":\"F8_E8M0\",\"shape\":[1],\"data_offsets\":[98,99]},"
                + "\"alone\":{\"dtype\":\"F4\",\"shape\":[32],\"data_offsets\":[99,115]}}";
        Path p = write("pairs.safetensors", file(header, data));
        try (ForeignModel m = Safetensors.read(p); Arena a = Arena.ofConfined()) {
            assertEquals(List.of("w", "q", "alone"), m.tensors().stream().map(ForeignTensor::name).toList());
            assertEquals(Quantization.Mx.of(1), m.tensor("w").quantization().orElseThrow());
            assertEquals(Quantization.Mx.of(0), m.tensor("q").quantization().orElseThrow());
            assertTrue(m.tensor("alone").quantization().isEmpty());
            try (dev.hurray.Tensor w = m.tensor("w").toTensor(a); dev.hurray.Tensor q = m.tensor("q").toTensor(a)) {
                float[] v = w.toFloatArray();
                assertEquals(2f, v[0]);
                assertEquals(2f, v[31]);
                assertEquals(0.5f, v[32]);
                float[] qv = q.toFloatArray();
                assertEquals(1f, qv[0]);
                assertEquals(1f, qv[31]);
            }
        }
    }

    @Test
    void aPartnerThatDoesNotFitIsAnError() throws IOException {
        // F4 [2, 64] needs scales [2, 2]; [2, 3] does not fit.
        String header = "{\"w\":{\"dtype\":\"F4\",\"shape\":[2,64],\"data_offsets\":[0,64]},"
                + "\"w_scale\":{\"dtype\":\"F8_E8M0\",\"shape\":[2,3],\"data_offsets\":[64,70]}}";
        Path p = write("bad.safetensors", file(header, new byte[70]));
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Safetensors.read(p));
        assertTrue(e.getMessage().contains("'w_scale'") && e.getMessage().contains("'w'"), e.getMessage());
        assertTrue(e.getMessage().contains("[2, 2]"), e.getMessage());
        // A last dimension that is no multiple of 32 cannot be MX either.
        String h2 = "{\"v\":{\"dtype\":\"F8_E5M2\",\"shape\":[40],\"data_offsets\":[0,40]},"
                + "\"v_scale\":{\"dtype\":\"F8_E8M0\",\"shape\":[1],\"data_offsets\":[40,41]}}";
        Path p2 = write("bad2.safetensors", file(h2, new byte[41]));
        e = assertThrows(ForeignFormatException.class, () -> Safetensors.read(p2));
        assertTrue(e.getMessage().contains("'v_scale'") && e.getMessage().contains("not a multiple of 32"), e.getMessage());
        // With pairing off both stay plain.
        assertEquals(Map.of("w", "F4[2, 64]", "w_scale", "F8_E8M0[2, 3]"), entries(p));
    }

    @Test
    void theSuffixOptionChangesThePairing() throws IOException {
        String header = "{\"w\":{\"dtype\":\"F4\",\"shape\":[32],\"data_offsets\":[0,16]},"
                + "\"w.scales\":{\"dtype\":\"F8_E8M0\",\"shape\":[1],\"data_offsets\":[16,17]}}";
        Path p = write("s.safetensors", file(header, new byte[17]));
        try (ForeignModel m = Safetensors.read(p)) {
            assertEquals(2, m.tensors().size(), "the default suffix _scale does not match");
        }
        Safetensors.Options dot = Safetensors.Options.defaults().withScaleSuffix(".scales");
        try (ForeignModel m = Safetensors.read(p, dot)) {
            assertEquals(1, m.tensors().size());
            assertEquals(Quantization.Mx.of(0), m.tensor("w").quantization().orElseThrow());
            // Written back with the same option, the names are the same.
            Path out = tmp.resolve("s2.safetensors");
            Safetensors.write(m, out, dot, null);
            assertEquals(Map.of("w", "F4[32]", "w.scales", "F8_E8M0[1]"), entries(out));
        }
        assertEquals("_scale", Safetensors.Options.defaults().scaleSuffix().orElseThrow());
        assertThrows(IllegalArgumentException.class, () -> Safetensors.Options.defaults().withScaleSuffix(""));
    }

    @Test
    void withoutPairingTheTensorsStayPlainAndMxIsRefused() throws IOException {
        String header = "{\"w\":{\"dtype\":\"F4\",\"shape\":[32],\"data_offsets\":[0,16]},"
                + "\"w_scale\":{\"dtype\":\"F8_E8M0\",\"shape\":[1],\"data_offsets\":[16,17]}}";
        Path p = write("off.safetensors", file(header, new byte[17]));
        Safetensors.Options off = Safetensors.Options.defaults().withoutPairing();
        assertTrue(off.scaleSuffix().isEmpty());
        try (ForeignModel m = Safetensors.read(p, off)) {
            assertEquals(List.of("w", "w_scale"), m.tensors().stream().map(ForeignTensor::name).toList());
            assertTrue(m.tensors().stream().allMatch(t -> t.quantization().isEmpty()));
        }
        // A partner of another dtype is not a scale tensor: no pairing, no error.
        String h2 = "{\"w\":{\"dtype\":\"F4\",\"shape\":[32],\"data_offsets\":[0,16]},"
                + "\"w_scale\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[16,19]}}";
        try (ForeignModel m = Safetensors.read(write("u8.safetensors", file(h2, new byte[19])))) {
            assertEquals(2, m.tensors().size());
        }
        try (ForeignModel m = Safetensors.read(p)) {
            Path out = tmp.resolve("refused.safetensors");
            ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Safetensors.write(m, out, off, null));
            assertTrue(e.getMessage().contains("pairing is off"), e.getMessage());
            assertFalse(Files.exists(out));
        }
        // MX along another axis than the last is not what the convention records.
        try (dev.hurray.Tensor src = dev.hurray.Tensor.of(new float[64 * 2], 64, 2);
                dev.hurray.Tensor mx = src.quantize(ElementType.FLOAT4_E2M1FN, Quantization.Mx.of(0))) {
            ForeignTensor ft = ForeignTensor.of(mx.descriptor().withName("a0"), mx.buffers());
            ForeignFormatException e = assertThrows(ForeignFormatException.class,
                    () -> Safetensors.write(Models.model(List.of(ft), Map.of()), tmp.resolve("a0.safetensors"), null));
            assertTrue(e.getMessage().contains("only along the last axis"), e.getMessage());
        }
    }

    @Test
    void missingFileIsNoSuchFile() {
        assertThrows(NoSuchFileException.class, () -> Safetensors.read(tmp.resolve("absent.safetensors")));
    }

    @Test
    void hostileHeaderLengths() throws IOException {
        assertRejects(new byte[5], "shorter than the 8-byte header length");
        byte[] huge = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 1L << 60).array();
        assertRejects(huge, "exceeds the limit");
        byte[] neg = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, -1L).array();
        assertRejects(neg, "exceeds the limit");
        byte[] lies = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 1000).array();
        assertRejects(lies, "exceeds the 8 bytes after it");
        assertRejects(file("[1,2]   ", new byte[0]), "does not start with '{'");
    }

    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}               | 4 | invalid JSON",
        "{\"a\":1}                                                                 | 0 | not an object",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{}}     | 4 | invalid JSON",
        "{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,1]}}               | 1 | Q4 has no Hurray element type",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}             | 4 | out of range",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}            | 4 | not an integer",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}              | 4 | run past the 4 data bytes",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}              | 4 | needs 8 bytes",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}              | 4 | end before they begin",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551615]}} | 4 | out of range",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}} | 4 | overlap",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}               | 4 | gap of 2 bytes",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}               | 4 | trailing bytes",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4],\"x\":1}}       | 4 | unknown field 'x'",
        "{\"a\":{\"shape\":[4],\"data_offsets\":[0,4]}}                                | 4 | dtype is missing",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4]}}                                      | 4 | data_offsets is missing",
        "{\"__metadata__\":{\"k\":1}}                                                  | 0 | not a string",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,4]}} | 4 | overflows",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}} trailing      | 4 | invalid JSON",
    })
    void hostileHeaders(String header, int dataBytes, String expect) throws IOException {
        assertRejects(file(header.strip(), new byte[dataBytes]), expect);
    }

    @Test
    void truncatedFileIsRejected() throws IOException {
        byte[] good = file("{\"a\":{\"dtype\":\"F64\",\"shape\":[4],\"data_offsets\":[0,32]}}", new byte[32]);
        for (int cut : new int[] {good.length - 1, good.length - 32, 20, 9}) {
            Path p = write("cut" + cut + ".safetensors", Arrays.copyOf(good, cut));
            assertThrows(ForeignFormatException.class, () -> Safetensors.read(p), "cut at " + cut);
        }
    }

    private void assertRejects(byte[] content, String expect) throws IOException {
        Path p = write("bad.safetensors", content);
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Safetensors.read(p));
        assertTrue(e.getMessage().contains(expect), "expected '" + expect + "' in: " + e.getMessage());
        assertTrue(e.getMessage().startsWith(p.toString()), "names the file: " + e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line");
    }

    @Test
    void mappedPayloadIsUnusableAfterClose() throws IOException {
        Path p = write("c.safetensors", file("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", new byte[4]));
        ForeignModel m = Safetensors.read(p);
        ForeignTensor t = m.tensors().get(0);
        m.close();
        m.close();
        assertThrows(IllegalStateException.class, () -> bytes(t.data()));
        assertNull(m.tensor("absent"));
    }
}
