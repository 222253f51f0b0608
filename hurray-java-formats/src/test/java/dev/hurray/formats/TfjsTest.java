package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import static dev.hurray.formats.TestSupport.bytes;
import static dev.hurray.formats.TestSupport.list;
import static dev.hurray.formats.TestSupport.longs;
import static dev.hurray.formats.TestSupport.map;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * tfjs weights: the real face-api models against their manifests, walked and decoded here
 * independently, and synthetic models for what those models do not cover.
 */
class TfjsTest {
    @TempDir
    Path tmp;

    /** Tensor counts of every model in @vladmandic/face-api 1.7.15 (the issue's 19 to 151). */
    static final Map<String, Integer> FACE_API_COUNTS = Map.of(
            "tiny_face_detector_model", 19, "face_landmark_68_tiny_model", 28, "age_gender_model", 51,
            "face_expression_model", 49, "face_landmark_68_model", 49, "face_recognition_model", 117,
            "ssd_mobilenetv1_model", 151);

    // ---- the test's own decode -------------------------------------------------------------

    /** Stored width in bytes, from the manifest entry (tfjs's DTYPE_VALUE_SIZE_MAP). */
    static int storedWidth(Map<String, Object> w) {
        Object q = w.get("quantization");
        String d = q != null ? (String) map(q).get("dtype") : (String) w.get("dtype");
        return switch (d) {
            case "uint8", "bool" -> 1;
            case "uint16", "float16" -> 2;
            case "float32", "int32" -> 4;
            case "complex64" -> 8;
            default -> throw new AssertionError(d);
        };
    }

    static double num(Object o) {
        return ((Number) o).doubleValue();
    }

    /**
     * tfjs's {@code v * scale + min} for a float32 weight, done exactly in BigDecimal with a
     * rounding to double after the product and after the sum (what JavaScript's doubles do),
     * then once to float32 (the Float32Array store).
     */
    static float expectFloat(int q, double scale, double min) {
        double product = new BigDecimal(q).multiply(new BigDecimal(scale)).doubleValue();
        double sum = new BigDecimal(product).add(new BigDecimal(min)).doubleValue();
        return (float) sum;
    }

    /** tfjs's {@code Math.round(v * scale + min)} into an Int32Array (values here fit in int). */
    static int expectInt(int q, double scale, double min) {
        double product = new BigDecimal(q).multiply(new BigDecimal(scale)).doubleValue();
        double sum = new BigDecimal(product).add(new BigDecimal(min)).doubleValue();
        return (int) Math.round(sum);
    }

    /** IEEE binary16 to binary32 bits by field arithmetic; NaN payloads are kept, as in tfjs-core's table-driven converter. */
    static int halfToFloatBits(short h) {
        int sign = (h & 0x8000) << 16;
        int exp = (h >>> 10) & 0x1F;
        int mant = h & 0x3FF;
        if (exp == 0x1F) {
            return sign | 0x7F800000 | (mant << 13);
        }
        if (exp != 0) {
            return sign | ((exp - 15 + 127) << 23) | (mant << 13);
        }
        if (mant == 0) {
            return sign;
        }
        int e = -14;
        while ((mant & 0x400) == 0) {
            mant <<= 1;
            e--;
        }
        return sign | ((e + 127) << 23) | ((mant & 0x3FF) << 13);
    }

    /**
     * Checks a model read from {@code manifestFile} against the manifest and shard, walking
     * both here; with the dequantized model, checks every value against the test's decode.
     */
    static void checkAgainstManifest(Path manifestFile, ForeignModel m, ForeignModel deq) throws IOException {
        List<Object> groups = list(TestSupport.json(manifestFile));
        int i = 0;
        for (Object g : groups) {
            ByteArrayOutputStream shards = new ByteArrayOutputStream();
            for (Object p : list(map(g).get("paths"))) {
                shards.writeBytes(Files.readAllBytes(manifestFile.resolveSibling((String) p)));
            }
            byte[] bin = shards.toByteArray();
            int offset = 0;
            for (Object wo : list(map(g).get("weights"))) {
                Map<String, Object> w = map(wo);
                ForeignTensor t = m.tensors().get(i);
                ForeignTensor d = deq.tensors().get(i);
                i++;
                long[] shape = longs(w.get("shape"));
                int count = (int) ForeignTensor.elementCount(shape);
                int size = count * storedWidth(w);
                String where = manifestFile.getFileName() + ": " + w.get("name");
                assertEquals(w.get("name"), t.name(), where);
                assertArrayEquals(shape, t.shape(), where);
                assertEquals(offset, t.sourceOffset(), where);
                assertEquals(0, t.data().address() % Payloads.ALIGNMENT, where + " aligned copy");
                byte[] raw = Arrays.copyOfRange(bin, offset, offset + size);
                assertArrayEquals(raw, bytes(t.data()), where);
                Object qo = w.get("quantization");
                if (qo == null) {
                    assertEquals(w.get("dtype"), t.dtype().formatName(), where);
                    assertTrue(t.quantization().isEmpty(), where);
                    assertArrayEquals(raw, bytes(d.data()), where + " unchanged by --dequantize");
                } else {
                    Map<String, Object> q = map(qo);
                    assertEquals(q.get("dtype"), t.dtype().formatName(), where + " stored type");
                    assertEquals(w.get("dtype"), d.dtype().formatName(), where + " dequantized type");
                    assertTrue(d.quantization().isEmpty());
                    ByteBuffer out = ByteBuffer.wrap(bytes(d.data())).order(ByteOrder.LITTLE_ENDIAN);
                    ByteBuffer in = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
                    if (q.get("dtype").equals("float16")) {
                        assertEquals(new Quantization.Cast(ElementType.FLOAT32), t.quantization().orElseThrow(), where);
                        for (int k = 0; k < count; k++) {
                            assertEquals(halfToFloatBits(in.getShort(2 * k)), out.getInt(4 * k), where + "[" + k + "]");
                        }
                    } else {
                        Quantization.PerTensorAffine a = assertInstanceOf(Quantization.PerTensorAffine.class, t.quantization().orElseThrow());
                        double scale = num(q.get("scale"));
                        double min = num(q.get("min"));
                        assertEquals(Double.doubleToRawLongBits(scale), Double.doubleToRawLongBits(a.scale()), where);
                        assertEquals(Double.doubleToRawLongBits(min), Double.doubleToRawLongBits(a.bias()), where);
                        assertEquals(w.get("dtype"), a.dequantized().formatName(), where);
                        boolean u8 = q.get("dtype").equals("uint8");
                        boolean int32 = w.get("dtype").equals("int32");
                        // The decode of each possible stored value, computed once per tensor.
                        int[] expect = new int[u8 ? 256 : 65536];
                        for (int v = 0; v < expect.length; v++) {
                            expect[v] = int32 ? expectInt(v, scale, min) : Float.floatToRawIntBits(expectFloat(v, scale, min));
                        }
                        for (int k = 0; k < count; k++) {
                            int v = u8 ? Byte.toUnsignedInt(in.get(k)) : Short.toUnsignedInt(in.getShort(2 * k));
                            int got = out.getInt(4 * k);
                            if (expect[v] != got) {
                                assertEquals(expect[v], got, where + "[" + k + "] (stored " + v + ")");
                            }
                        }
                    }
                }
                offset += size;
            }
            assertEquals(bin.length, offset, "shards hold exactly the weights");
        }
        assertEquals(i, m.tensors().size());
    }

    // ---- the bundled models ----------------------------------------------------------------

    @TestFactory
    Stream<DynamicTest> bundledFaceApiModels() {
        return Stream.of("tiny_face_detector_model", "face_landmark_68_tiny_model", "age_gender_model")
                .map(name -> DynamicTest.dynamicTest(name, () -> checkFaceApiModel(TestSupport.faceApiDir(), name)));
    }

    static void checkFaceApiModel(Path dir, String name) throws IOException {
        Path manifest = dir.resolve(name + "-weights_manifest.json");
        try (ForeignModel m = Tfjs.read(manifest, false, null); ForeignModel d = Tfjs.read(manifest, true, null)) {
            assertEquals(FACE_API_COUNTS.get(name), m.tensors().size(), name);
            checkAgainstManifest(manifest, m, d);
        }
    }

    /**
     * Where .ci/fetch-face-api.sh put the package's model/ folder: {@code $HURRAY_FACE_API_DIR/model}
     * when that is set, else the {@code hurray.faceapi.dir} property the build sets.
     */
    static Path fullFaceApiDir() {
        String env = System.getenv("HURRAY_FACE_API_DIR");
        if (env != null && !env.isEmpty()) {
            return Path.of(env, "model");
        }
        return Path.of(System.getProperty("hurray.faceapi.dir", "/nonexistent"));
    }

    /** The full package, when .ci/fetch-face-api.sh has put it in the cache (CI does). */
    @TestFactory
    Stream<DynamicTest> allFaceApiModels() {
        Path dir = fullFaceApiDir();
        assumeTrue(Files.isRegularFile(dir.resolve("ssd_mobilenetv1_model-weights_manifest.json")),
                "full @vladmandic/face-api 1.7.15 not found in " + dir + " (run .ci/fetch-face-api.sh)");
        return FACE_API_COUNTS.keySet().stream().sorted()
                .map(name -> DynamicTest.dynamicTest(name, () -> checkFaceApiModel(dir, name)));
    }

    /** ssd_mobilenetv1 is the model with int32 weights, rank-0 tensors and unaligned offsets. */
    @Test
    void ssdMobilenetHasWhatTheIssueDescribes() throws IOException {
        Path dir = fullFaceApiDir();
        Path manifest = dir.resolve("ssd_mobilenetv1_model-weights_manifest.json");
        assumeTrue(Files.isRegularFile(manifest),
                "full @vladmandic/face-api 1.7.15 not found in " + dir + " (run .ci/fetch-face-api.sh)");
        try (ForeignModel m = Tfjs.read(manifest, false, null)) {
            long int32 = m.tensors().stream().filter(t -> t.quantization().map(q -> q.dequantized() == ElementType.INT32)
                    .orElse(t.dtype() == ElementType.INT32)).count();
            long rank0 = m.tensors().stream().filter(t -> t.rank() == 0).count();
            long unaligned = m.tensors().stream().filter(t -> t.sourceOffset() % 4 != 0).count();
            assertEquals(15, int32);
            assertEquals(12, rank0);
            assertEquals(142, unaligned);
            for (ForeignTensor t : m.tensors()) {
                assertEquals(0, t.data().address() % Payloads.ALIGNMENT, t.name());
            }
        }
    }

    // ---- synthetic models ------------------------------------------------------------------

    /** Builds shard bytes and manifest entries side by side. */
    static final class Builder {
        final ByteArrayOutputStream bin = new ByteArrayOutputStream();
        final List<String> weights = new ArrayList<>();

        Builder add(String json, byte[] data) {
            weights.add(json);
            bin.writeBytes(data);
            return this;
        }

        String group(String... paths) {
            return "{\"paths\":[" + String.join(",", Arrays.stream(paths).map(p -> "\"" + p + "\"").toList())
                    + "],\"weights\":[" + String.join(",", weights) + "]}";
        }
    }

    static byte[] le(int width, long... values) {
        ByteBuffer b = ByteBuffer.allocate(width * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long v : values) {
            switch (width) {
                case 1 -> b.put((byte) v);
                case 2 -> b.putShort((short) v);
                case 4 -> b.putInt((int) v);
                default -> b.putLong(v);
            }
        }
        return b.array();
    }

    @Test
    void syntheticModelCoversEveryStoredKind() throws IOException {
        Builder b = new Builder()
                // 3 bytes: every later weight starts at an odd or unaligned offset.
                .add("{\"name\":\"odd\",\"shape\":[3],\"dtype\":\"float32\",\"quantization\":{\"dtype\":\"uint8\",\"scale\":0.1,\"min\":-1.2}}",
                        le(1, 0, 128, 255))
                // Halves round towards +infinity (JavaScript Math.round): -2.5 → -2, 0.5 → 1, 1.5 → 2.
                .add("{\"name\":\"ints\",\"shape\":[2,2],\"dtype\":\"int32\",\"quantization\":{\"dtype\":\"uint8\",\"scale\":0.5,\"min\":-3}}",
                        le(1, 1, 7, 9, 255))
                .add("{\"name\":\"wide\",\"shape\":[2],\"dtype\":\"float32\",\"quantization\":{\"dtype\":\"uint16\",\"scale\":1e-4,\"min\":-3.25,\"original_dtype\":\"float32\"}}",
                        le(2, 0, 65535))
                // float16: -0, a subnormal, NaN with payload, infinity.
                .add("{\"name\":\"half\",\"shape\":[4],\"dtype\":\"float32\",\"quantization\":{\"dtype\":\"float16\"}}",
                        le(2, 0x8000, 0x0001, 0x7E01, 0x7C00))
                .add("{\"name\":\"scalar\",\"shape\":[],\"dtype\":\"int32\"}", le(4, -7))
                .add("{\"name\":\"empty\",\"shape\":[0,5],\"dtype\":\"float32\"}", new byte[0])
                .add("{\"name\":\"mask\",\"shape\":[3],\"dtype\":\"bool\"}", le(1, 1, 0, 1))
                .add("{\"name\":\"z\",\"shape\":[1],\"dtype\":\"complex64\"}", le(4, Float.floatToRawIntBits(1.5f),
                        Float.floatToRawIntBits(-2f)))
                .add("{\"name\":\"plain\",\"shape\":[2],\"dtype\":\"float32\"}", le(4, Float.floatToRawIntBits(Float.NaN) | 5,
                        Float.floatToRawIntBits(-0f)));
        byte[] all = b.bin.toByteArray();
        // Two shards, split inside the "wide" weight, so a weight spans a shard boundary.
        Files.write(tmp.resolve("s1.bin"), Arrays.copyOfRange(all, 0, 8));
        Files.write(tmp.resolve("s2.bin"), Arrays.copyOfRange(all, 8, all.length));
        Builder second = new Builder().add("{\"name\":\"g2\",\"shape\":[2],\"dtype\":\"int32\"}", le(4, 1, 2));
        Files.createDirectories(tmp.resolve("sub"));
        Files.write(tmp.resolve("sub/g2.bin"), second.bin.toByteArray());
        String manifest = "[" + b.group("s1.bin", "s2.bin") + "," + second.group("sub/g2.bin") + "]";
        Path mf = tmp.resolve("weights_manifest.json");
        Files.writeString(mf, manifest);
        Path modelJson = tmp.resolve("model.json");
        Files.writeString(modelJson, "{\"format\":\"graph-model\",\"generatedBy\":\"2.x\",\"convertedBy\":\"test\","
                + "\"modelTopology\":{\"node\":[]},\"weightsManifest\":" + manifest + "}");

        try (ForeignModel m = Tfjs.read(mf, false, null); ForeignModel d = Tfjs.read(mf, true, null);
             ForeignModel j = Tfjs.read(modelJson, false, null)) {
            checkAgainstManifest(mf, m, d);
            assertEquals(Map.of(), m.metadata());
            assertEquals(Map.of("tfjs.format", "graph-model", "tfjs.generatedBy", "2.x", "tfjs.convertedBy", "test"),
                    j.metadata());
            assertEquals(m.tensors().size(), j.tensors().size());
            for (int i = 0; i < m.tensors().size(); i++) {
                assertArrayEquals(bytes(m.tensors().get(i).data()), bytes(j.tensors().get(i).data()));
            }
            assertEquals(List.of(0L, 3L, 7L, 11L, 19L, 23L, 23L, 26L, 34L, 0L),
                    m.tensors().stream().map(ForeignTensor::sourceOffset).toList());

            ForeignTensor ints = d.tensor("ints");
            ByteBuffer iv = ByteBuffer.wrap(bytes(ints.data())).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(List.of(-2, 1, 2, 125), List.of(iv.getInt(0), iv.getInt(4), iv.getInt(8), iv.getInt(12)));

            ForeignTensor half = m.tensor("half");
            assertEquals(ElementType.FLOAT16, half.dtype());
            assertEquals(new Quantization.Cast(ElementType.FLOAT32), half.quantization().orElseThrow());
            ByteBuffer hv = ByteBuffer.wrap(bytes(d.tensor("half").data())).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(0x80000000, hv.getInt(0), "-0");
            assertEquals(Float.floatToRawIntBits(0x1p-24f), hv.getInt(4), "smallest subnormal");
            assertTrue(Float.isNaN(hv.getFloat(8)));
            assertEquals(0x7FC02000, hv.getInt(8), "NaN payload widened");
            assertEquals(Float.POSITIVE_INFINITY, hv.getFloat(12));

            assertEquals(ElementType.UINT16, m.tensor("wide").dtype());
            assertEquals(0, m.tensor("scalar").rank());
            assertEquals(ElementType.BOOL, m.tensor("mask").dtype());
            assertEquals(ElementType.COMPLEX64, m.tensor("z").dtype());
            assertNull(m.tensor("plain").quantization().orElse(null));
        }
    }

    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '#', quoteCharacter = '`', value = {
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"s\",\"shape\":[1],\"dtype\":\"string\"}]}] # string tensors are not supported",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[4],\"dtype\":\"float32\",\"quantization\":{\"dtype\":\"int4\"}}]}] # unknown quantization dtype 'int4'",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[4],\"dtype\":\"float32\",\"quantization\":{\"dtype\":\"uint8\",\"min\":0}}]}] # needs numeric scale and min",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[2],\"dtype\":\"int32\",\"quantization\":{\"dtype\":\"float16\"}}]}] # float16 quantization of a int32",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[4],\"dtype\":\"bool\",\"quantization\":{\"dtype\":\"uint8\",\"scale\":1,\"min\":0}}]}] # not supported",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[4],\"dtype\":\"float64\"}]}] # unsupported tfjs dtype 'float64'",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[5],\"dtype\":\"uint8\"}]}] # unsupported tfjs dtype 'uint8'",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[2],\"dtype\":\"float32\"}]}] # need 8 bytes but its shards hold 16 (trailing bytes)",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[8],\"dtype\":\"float32\"}]}] # need 32 bytes but its shards hold 16 (truncated shard?)",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[2],\"dtype\":\"float32\"},{\"name\":\"a\",\"shape\":[2],\"dtype\":\"float32\"}]}] # 'a' appears twice",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[-4],\"dtype\":\"float32\"}]}] # not a non-negative integer",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[4611686018427387904,4],\"dtype\":\"float32\"}]}] # overflows",
        "[{\"paths\":[\"missing.bin\"],\"weights\":[]}] # shard 'missing.bin' listed in the manifest is missing",
        "[{\"paths\":[\"../w.bin\"],\"weights\":[]}] # leaves the manifest's directory",
        "[{\"paths\":[\"dir\"],\"weights\":[]}] # shard 'dir' is not a regular file",
        "[{\"paths\":[\"/etc/hostname\"],\"weights\":[]}] # is absolute",
        "[{\"paths\":\"w.bin\",\"weights\":[]}] # paths is missing or not an array",
        "[{\"paths\":[\"w.bin\"]}] # weights is missing or not an array",
        "[{\"paths\":[\"w.bin\"],\"weights\":[{\"shape\":[4],\"dtype\":\"float32\"}]}] # name is missing",
        "[3] # not an object",
        "{\"modelTopology\":{}} # without a weightsManifest array",
        "42 # neither a manifest array nor a model.json object",
        "[{\"paths\":[\"w.bin\"], # invalid JSON",
        "`` # empty JSON",
    })
    void hostileManifests(String manifest, String expect) throws IOException {
        Files.write(tmp.resolve("w.bin"), new byte[16]);
        Files.createDirectories(tmp.resolve("dir"));
        Path mf = tmp.resolve("sub-weights_manifest.json");
        Files.writeString(mf, manifest);
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Tfjs.read(mf, false, null));
        assertTrue(e.getMessage().contains(expect), "expected '" + expect + "' in: " + e.getMessage());
        assertTrue(e.getMessage().startsWith(mf.toString()), "names the file: " + e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
    }

    /** One-element weights whose dequantized values are JavaScript's edge cases, read with {@code dequantize}. */
    @Test
    void dequantizationFollowsJavaScript() throws IOException {
        String q = "{\"name\":\"%s\",\"shape\":[1],\"dtype\":\"%s\",\"quantization\":{\"dtype\":\"%s\",\"scale\":%s,\"min\":%s}}";
        Builder b = new Builder()
                .add(q.formatted("half", "int32", "uint8", "0.5", "-3"), le(1, 1)) // Math.round(-2.5) is -2
                .add(q.formatted("below", "int32", "uint8", "1", "0.49999999999999994"), le(1, 0)) // no floor(x + 0.5) error
                .add(q.formatted("third", "int32", "uint8", "0.00392156862745098", "0"), le(1, 255)) // 255 × (1/255) rounds to 1
                .add(q.formatted("wrap", "int32", "uint8", "2147483648.0", "0"), le(1, 1)) // ToInt32 wraps modulo 2^32
                .add(q.formatted("huge", "int32", "uint16", "1e300", "1e300"), le(2, 65535)) // 2^32 multiples wrap to 0
                .add(q.formatted("f", "float32", "uint8", "0.009007044399485869", "-1.2069439495311063"), le(1, 200));
        Files.write(tmp.resolve("w.bin"), b.bin.toByteArray());
        Path mf = tmp.resolve("weights_manifest.json");
        Files.writeString(mf, "[" + b.group("w.bin") + "]");
        try (ForeignModel d = Tfjs.read(mf, true, null)) {
            java.util.function.Function<String, Integer> bits = n -> {
                try {
                    return d.tensor(n).data().get(ValueLayout.JAVA_INT_UNALIGNED, 0);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            };
            assertEquals(-2, bits.apply("half"));
            assertEquals(0, bits.apply("below"));
            assertEquals(1, bits.apply("third"));
            assertEquals(-2147483648, bits.apply("wrap"));
            assertEquals(0, bits.apply("huge"));
            assertEquals(Float.floatToRawIntBits(expectFloat(200, 0.009007044399485869, -1.2069439495311063)), bits.apply("f"));
            assertEquals(ElementType.INT32, d.tensor("wrap").dtype());
            assertTrue(d.tensor("wrap").quantization().isEmpty());
        }
    }
}
