package dev.hurray.cli;

import static dev.hurray.cli.CliTest.run;
import static dev.hurray.formats.TestSupport.list;
import static dev.hurray.formats.TestSupport.longs;
import static dev.hurray.formats.TestSupport.map;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.FileEntry;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.cli.CliTest.Result;
import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.ForeignTensor;
import dev.hurray.formats.Npy;
import dev.hurray.formats.Npz;
import dev.hurray.formats.Safetensors;
import dev.hurray.formats.SafetensorsTestAccess;
import dev.hurray.formats.TestSupport;
import dev.hurray.formats.TfjsReference;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command on Hurray's own formats, end to end on real files: the face-api models through an
 * HRRYFILE and back (checked against the test's own tfjs decode and against the container read
 * with the Java API directly), every NumPy fixture through an HRRYFILE, safetensors metadata,
 * HRRYFILE ↔ stream files, what foreign formats cannot hold, and bad input.
 */
class HrryFileCliTest {
    private static final Path NPY = TestSupport.resourceDir("npy");

    @TempDir
    Path tmp;

    private static String s(Path p) {
        return p.toString();
    }

    private static byte[] bytes(MemorySegment seg) {
        return seg.toArray(ValueLayout.JAVA_BYTE);
    }

    /** No file in {@code dir} but {@code expected} (no temporary file left behind). */
    private static void assertOnly(Path dir, Path... expected) throws IOException {
        try (Stream<Path> l = Files.list(dir)) {
            assertEquals(Arrays.stream(expected).map(Path::getFileName).map(Path::toString).sorted().toList(),
                    l.map(Path::getFileName).map(Path::toString).sorted().toList());
        }
    }

    // ---- face-api models through an HRRYFILE ------------------------------------------------

    /** The bundled models, or all seven when .ci/fetch-face-api.sh has put the package in the cache. */
    @TestFactory
    Stream<DynamicTest> faceApiModelsThroughAnHrryFile() {
        Path full = fullFaceApiDir();
        boolean haveFull = Files.isRegularFile(full.resolve("ssd_mobilenetv1_model-weights_manifest.json"));
        Path dir = haveFull ? full : TestSupport.faceApiDir();
        List<String> names = haveFull
                ? List.of("tiny_face_detector_model", "face_landmark_68_tiny_model", "age_gender_model", "face_expression_model",
                "face_landmark_68_model", "face_recognition_model", "ssd_mobilenetv1_model")
                : BundledModels.NAMES;
        return names.stream().map(n -> DynamicTest.dynamicTest(n, () -> faceApiModel(dir.resolve(n + "-weights_manifest.json"))));
    }

    static Path fullFaceApiDir() {
        String env = System.getenv("HURRAY_FACE_API_DIR");
        if (env != null && !env.isEmpty()) {
            return Path.of(env, "model");
        }
        return Path.of(System.getProperty("hurray.faceapi.dir", "/nonexistent"));
    }

    private void faceApiModel(Path manifest) throws IOException {
        Map<String, TfjsReference.Weight> ref = TfjsReference.read(manifest);
        String name = manifest.getFileName().toString().replace("-weights_manifest.json", "");
        Path work = Files.createDirectory(tmp.resolve(name));
        Path hrry = work.resolve("m.hrry");

        // tfjs -> HRRYFILE: stored values, shapes and quantization kept, payloads aligned.
        Result r = run("convert", s(manifest), s(hrry));
        r.assertOk();
        assertTrue(r.out().startsWith("converted " + ref.size() + " tensors"), r.out());
        long quantized = 0;
        long[] offsets = new long[ref.size()];
        try (HurrayFile f = HurrayFile.open(hrry)) {
            assertEquals(ref.size(), f.count());
            int i = 0;
            for (TfjsReference.Weight w : ref.values()) {
                FileEntry e = f.entry(w.name()).orElseThrow(() -> new AssertionError(w.name()));
                TensorDescriptor d = e.descriptor();
                assertEquals(w.storedType(), d.elementType().formatName(), w.name());
                assertArrayEquals(w.shape(), d.shape().dims(), w.name());
                assertEquals(Layout.rowMajor(), d.layout());
                assertEquals(0, e.buffers().get(0).offset() % 64, w.name() + " aligned in the file");
                offsets[i++] = e.buffers().get(0).offset();
                if (w.quantization() == null) {
                    assertTrue(d.quantization().isEmpty(), w.name());
                } else if (w.storedType().equals("float16")) {
                    assertEquals(new Quantization.Cast(ElementType.FLOAT32), d.quantization().orElseThrow(), w.name());
                    quantized++;
                } else {
                    Quantization.PerTensorAffine a = assertInstanceOf(Quantization.PerTensorAffine.class,
                            d.quantization().orElseThrow(), w.name());
                    assertEquals(Double.doubleToRawLongBits(w.scale()), Double.doubleToRawLongBits(a.scale()), w.name());
                    assertEquals(Double.doubleToRawLongBits(w.min()), Double.doubleToRawLongBits(a.bias()), w.name());
                    assertEquals(w.dtype(), a.dequantized().formatName(), w.name());
                    quantized++;
                }
                try (Tensor t = f.read(e)) {
                    assertArrayEquals(w.stored(), bytes(t.buffer(0)), w.name() + " stored bytes");
                }
            }
        }
        // Payloads in manifest order: the container keeps the add order.
        for (int i = 1; i < offsets.length; i++) {
            assertTrue(offsets[i] >= offsets[i - 1], "payloads in add order");
        }

        // inspect lists the index without payloads; --json gives the same offsets.
        r = run("inspect", s(hrry));
        r.assertOk();
        assertTrue(r.out().startsWith(hrry + ": hrry, " + ref.size() + " tensors"), r.out());
        assertEquals(ref.size() + 2, r.out().lines().count(), r.out());
        r = run("inspect", "--json", s(hrry));
        r.assertOk();
        byte[] jb = r.out().getBytes(StandardCharsets.UTF_8);
        Map<String, Object> doc = map(JsonOut.parse(jb));
        assertEquals("hrry", doc.get("format"));
        assertEquals(ref.size(), ((Number) doc.get("tensor_count")).intValue());
        for (Object o : list(doc.get("tensors"))) {
            Map<String, Object> t = map(o);
            TfjsReference.Weight w = ref.get((String) t.get("name"));
            assertEquals(w.stored().length, ((Number) t.get("bytes")).longValue());
            assertEquals(0, ((Number) t.get("offset")).longValue() % 64);
            assertEquals(w.quantization() == null, t.get("quantization") == null);
        }

        // verify: structure and every payload checksum.
        r = run("verify", s(hrry));
        r.assertOk();
        assertTrue(r.out().contains("payload checksums: " + ref.size() + " of " + ref.size()), r.out());

        // Back to safetensors: refused while quantized, then values bit-exact vs the test's decode.
        Path st = work.resolve("d.safetensors");
        if (quantized > 0) {
            run("convert", s(hrry), s(st)).assertError(ExitCode.BAD_INPUT, "pass --dequantize");
            assertFalse(Files.exists(st));
        }
        run("convert", "--dequantize", s(hrry), s(st)).assertOk();
        try (ForeignModel m = Safetensors.read(st)) {
            assertEquals(ref.size(), m.tensors().size());
            for (TfjsReference.Weight w : ref.values()) {
                ForeignTensor t = m.tensor(w.name());
                assertEquals(w.dtype(), t.dtype().formatName(), w.name());
                assertArrayEquals(w.shape(), t.shape(), w.name());
                assertArrayEquals(w.values(), bytes(t.data()), w.name() + " values vs the test's decode");
            }
        }
        // The tfjs reader's own --dequantize path gives the same file.
        Path direct = work.resolve("direct.safetensors");
        run("convert", "--dequantize", s(manifest), s(direct)).assertOk();
        assertEquals(-1, Files.mismatch(st, direct));

        // HRRYFILE -> stream file -> HRRYFILE: the same container, byte for byte.
        Path hrrys = work.resolve("m.hrrys");
        Path again = work.resolve("again.hrry");
        run("convert", s(hrry), s(hrrys)).assertOk();
        run("verify", s(hrrys)).assertOk();
        run("convert", s(hrrys), s(again)).assertOk();
        assertEquals(-1, Files.mismatch(hrry, again), "HRRYFILE -> stream -> HRRYFILE is byte-identical");
        assertOnly(work, hrry, st, direct, hrrys, again);
    }

    // ---- npy/npz <-> HRRYFILE ----------------------------------------------------------------

    private static List<Map<String, Object>> fixtures(String kind) throws IOException {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Object o : list(map(TestSupport.json(NPY.resolve("manifest.json"))).get("entries"))) {
            if (map(o).get("kind").equals(kind)) {
                out.add(map(o));
            }
        }
        return out;
    }

    /**
     * Every NumPy fixture (each mapped dtype, C and Fortran order, big-endian, 0-d, zero-size)
     * through an HRRYFILE and back, against what NumPy reported when it wrote them.
     */
    @TestFactory
    Stream<DynamicTest> npyFixturesThroughAnHrryFile() throws IOException {
        return fixtures("array").stream().map(e -> DynamicTest.dynamicTest((String) e.get("file"), () -> npyFixture(e)));
    }

    private void npyFixture(Map<String, Object> e) throws IOException {
        Path in = NPY.resolve((String) e.get("file"));
        String stem = ((String) e.get("file")).replace(".npy", "");
        Path hrry = tmp.resolve(stem + ".hrry");
        run("convert", s(in), s(hrry)).assertOk();
        try (HurrayFile f = HurrayFile.open(hrry)) {
            assertEquals(1, f.count());
            FileEntry entry = f.entry(0);
            TensorDescriptor d = entry.descriptor();
            assertEquals(stem, entry.name());
            assertEquals(e.get("dtype"), d.elementType().formatName());
            assertArrayEquals(longs(e.get("shape")), d.shape().dims());
            assertEquals(e.get("layout"), d.layout().toString());
            try (Tensor t = f.read(entry)) {
                assertEquals(e.get("storage_hex"), HexFormat.of().formatHex(bytes(t.buffer(0))),
                        "bytes as NumPy sees them (big-endian swapped by element width)");
            }
        }
        Path npy = tmp.resolve(stem + ".back.npy");
        run("convert", s(hrry), s(npy)).assertOk();
        String descr = (String) e.get("source_descr");
        byte[] original = Files.readAllBytes(in);
        if (descr.charAt(0) != '>' && original[6] == 1) {
            assertEquals(-1, Files.mismatch(in, npy), "npy -> HRRYFILE -> npy is byte-identical");
        }
        try (ForeignModel m = Npy.read(npy, "x")) {
            ForeignTensor t = m.tensors().get(0);
            assertEquals(e.get("layout"), t.layout().formatName());
            assertEquals(e.get("storage_hex"), TestSupport.hex(t.data()));
        }
        Path st = tmp.resolve(stem + ".safetensors");
        Result r = run("convert", s(hrry), s(st));
        if (e.get("dtype").equals("complex128")) {
            r.assertError(ExitCode.BAD_INPUT, "complex128");
            return;
        }
        r.assertOk();
        try (ForeignModel m = Safetensors.read(st)) {
            assertEquals(e.get("c_order_hex"), TestSupport.hex(m.tensors().get(0).data()), "reordered to row-major");
        }
    }

    @TestFactory
    Stream<DynamicTest> rejectedNpyDtypesAreNamed() throws IOException {
        return fixtures("reject").stream().map(e -> DynamicTest.dynamicTest((String) e.get("file"), () -> {
            Path out = tmp.resolve("r.hrry");
            run("convert", s(NPY.resolve((String) e.get("file"))), s(out)).assertError(ExitCode.BAD_INPUT,
                    (String) e.get("expect"));
            assertFalse(Files.exists(out));
        }));
    }

    @Test
    void npzThroughAnHrryFile() throws IOException {
        for (String name : List.of("stored.npz", "deflated.npz")) {
            Path hrry = tmp.resolve(name + ".hrry");
            Path back = tmp.resolve(name + ".back.npz");
            run("convert", s(NPY.resolve(name)), s(hrry)).assertOk();
            run("convert", "--compress", s(hrry), s(back)).assertOk();
            try (ForeignModel a = Npz.read(NPY.resolve(name), null); ForeignModel b = Npz.read(back, null)) {
                assertEquals(a.tensors().stream().map(ForeignTensor::name).sorted().toList(),
                        b.tensors().stream().map(ForeignTensor::name).sorted().toList());
                for (ForeignTensor t : a.tensors()) {
                    ForeignTensor u = b.tensor(t.name());
                    assertEquals(t.dtype(), u.dtype(), t.name());
                    assertEquals(t.layout(), u.layout(), t.name());
                    assertArrayEquals(t.shape(), u.shape(), t.name());
                    assertEquals(TestSupport.hex(t.data()), TestSupport.hex(u.data()), t.name());
                }
            }
        }
    }

    // ---- safetensors and file metadata -------------------------------------------------------

    @Test
    void safetensorsMetadataBecomesFileMetadataAndSurvivesAStream() throws IOException {
        Path st = tmp.resolve("m.safetensors");
        byte[] data = new byte[4 * 3 + 2 * 2 + 8 + 1];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 37 + 11);
        }
        data[24] = 1;
        Files.write(st, SafetensorsTestAccess.file("{\"__metadata__\":{\"format\":\"pt\",\"note\":\"h\u00e9llo\"},"
                + "\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
                + "\"h\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[12,16]},"
                + "\"n\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[16,24]},"
                + "\"b\":{\"dtype\":\"BOOL\",\"shape\":[1,1],\"data_offsets\":[24,25]}}", data));
        Path hrry = tmp.resolve("m.hrry");
        run("convert", s(st), s(hrry)).assertOk();
        try (HurrayFile f = HurrayFile.open(hrry)) {
            assertEquals(List.of("format", "note"), List.copyOf(f.metadata().keySet()));
            assertEquals("pt", f.metadataString("format").orElseThrow());
            assertEquals("h\u00e9llo", f.metadataString("note").orElseThrow());
            assertEquals(ElementType.BFLOAT16, f.entry("h").orElseThrow().descriptor().elementType());
        }
        // Through a stream file (metadata travels as the leading item) and back.
        Path hrrys = tmp.resolve("m.hrrys");
        run("convert", s(hrry), s(hrrys)).assertOk();
        Result r = run("inspect", s(hrrys));
        r.assertOk();
        assertTrue(r.out().contains("  format = pt"), r.out());
        assertTrue(r.out().contains("stream, 4 tensors"), r.out());
        assertFalse(r.out().contains("__metadata__"), "the metadata item is not listed as a tensor: " + r.out());
        Path st2 = tmp.resolve("back.safetensors");
        run("convert", s(hrrys), s(st2)).assertOk();
        try (ForeignModel a = Safetensors.read(st); ForeignModel b = Safetensors.read(st2)) {
            assertEquals(a.metadata(), b.metadata());
            for (ForeignTensor t : a.tensors()) {
                assertEquals(TestSupport.hex(t.data()), TestSupport.hex(b.tensor(t.name()).data()), t.name());
                assertEquals(t.dtype(), b.tensor(t.name()).dtype());
                assertArrayEquals(t.shape(), b.tensor(t.name()).shape());
            }
        }
        // NumPy has no bfloat16: npz refuses the file, naming the type, and writes nothing.
        run("convert", s(hrry), s(tmp.resolve("m.npz"))).assertError(ExitCode.BAD_INPUT, "bfloat16");
        assertFalse(Files.exists(tmp.resolve("m.npz")));
    }

    // ---- what only Hurray can hold -----------------------------------------------------------

    /** A container with a strided tensor, a per-channel quantized one, tensor metadata and binary file metadata. */
    private Path hurrayOnly() throws IOException {
        Path p = tmp.resolve("special.hrry");
        try (HurrayFileWriter w = HurrayFile.create(p); Arena arena = Arena.ofConfined()) {
            TensorDescriptor strided = TensorDescriptor.builder(ElementType.INT16, 2, 3).layout(Layout.strided(1, 2))
                    .name("strided").buffer(BufferSpec.cpu(12)).build();
            w.add(strided, filled(arena, 12));
            TensorDescriptor perChannel = TensorDescriptor.builder(ElementType.INT8, 2, 4)
                    .quantization(new Quantization.PerChannelAffine(0, ElementType.FLOAT32)).name("per-channel")
                    .buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(8)).build();
            w.add(perChannel, filled(arena, 8), filled(arena, 8), filled(arena, 8));
            TensorDescriptor tagged = TensorDescriptor.builder(ElementType.UINT8, 4).name("tagged")
                    .metadata("unit", "counts").build();
            w.add(tagged, filled(arena, 4));
            w.metadata("blob", new byte[] {(byte) 0xFF, 0, (byte) 0xC3});
            w.metadata("text", "plain");
            w.finish();
        }
        return p;
    }

    private static MemorySegment filled(Arena arena, int n) {
        MemorySegment s = arena.allocate(n, 64);
        for (int i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i + 1));
        }
        return s;
    }

    @Test
    void foreignTargetsRefuseWhatTheyCannotHold() throws IOException {
        Path src = hurrayOnly();
        Path st = tmp.resolve("x.safetensors");
        run("convert", s(src), s(st)).assertError(ExitCode.BAD_INPUT, "strided layout has no counterpart");
        assertFalse(Files.exists(st));
        Result r = run("inspect", s(src));
        r.assertOk();
        assertTrue(r.out().lines().anyMatch(l -> l.matches("strided +int16 +\\[2, 3] +strided\\(1,2\\) +- +12 +\\d+")), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.matches("per-channel +int8 +\\[2, 4] +row-major +per-channel\\(axis=0\\)->float32 +24 +\\d+")), r.out());
        assertTrue(r.out().contains("  blob = hex:ff00c3"), r.out());
        // The same content through a stream and back: nothing lost.
        Path hrrys = tmp.resolve("special.hrrys");
        Path back = tmp.resolve("back.hrry");
        run("convert", s(src), s(hrrys)).assertOk();
        run("convert", s(hrrys), s(back)).assertOk();
        assertEquals(-1, Files.mismatch(src, back));
        // Per-channel dequantization is computed by the native core (float32).
        Path only = tmp.resolve("only.hrry");
        try (HurrayFileWriter w = HurrayFile.create(only); HurrayFile f = HurrayFile.open(src);
             Tensor t = f.read("per-channel"); Tensor u = f.read("tagged")) {
            w.add(t);
            w.add(u);
            w.metadata("blob", new byte[] {(byte) 0xFF});
            w.finish();
        }
        run("convert", "--dequantize", s(only), s(st)).assertOk();
        Files.delete(st);
        // Tensor metadata and binary file metadata are dropped with warnings.
        Path tagged = tmp.resolve("tagged.hrry");
        try (HurrayFileWriter w = HurrayFile.create(tagged); HurrayFile f = HurrayFile.open(src); Tensor u = f.read("tagged")) {
            w.add(u);
            w.metadata("blob", new byte[] {(byte) 0xFF});
            w.metadata("text", "plain");
            w.finish();
        }
        r = run("convert", s(tagged), s(st));
        r.assertOk();
        assertTrue(r.err().contains("1 file metadata entries that are not UTF-8 dropped"), r.err());
        assertTrue(r.err().contains("per-tensor metadata; dropped from 1 tensors"), r.err());
        try (ForeignModel m = Safetensors.read(st)) {
            assertEquals(Map.of("text", "plain"), m.metadata());
        }
    }

    // ---- bad input ---------------------------------------------------------------------------

    private Path tinyHrry() throws IOException {
        Path tiny = BundledModels.extract("tiny_face_detector_model", Files.createDirectories(tmp.resolve("src")));
        Path hrry = tmp.resolve("tiny.hrry");
        run("convert", s(tiny), s(hrry)).assertOk();
        return hrry;
    }

    @Test
    void wrongFormatNamedHrry() throws IOException {
        Path junk = tmp.resolve("junk.hrry");
        Files.write(junk, ("HRRYFILE" + "x".repeat(200)).getBytes(StandardCharsets.US_ASCII));
        run("inspect", s(junk)).assertError(ExitCode.BAD_INPUT, junk + ": ");
        run("convert", s(junk), s(tmp.resolve("o.npz"))).assertError(ExitCode.BAD_INPUT, "CORRUPT");
        run("verify", s(junk)).assertError(ExitCode.VERIFY_FAILED, "verification failed");
        run("send", "127.0.0.1:1", s(junk)).assertError(ExitCode.BAD_INPUT, "CORRUPT");
        Path notStream = tmp.resolve("n.hrrys");
        Files.write(notStream, new byte[64]);
        run("inspect", s(notStream)).assertError(ExitCode.BAD_INPUT, "INVALID_MAGIC");
        run("verify", s(notStream)).assertError(ExitCode.VERIFY_FAILED, "INVALID_MAGIC");
        run("convert", "--from", "stream", s(junk), s(tmp.resolve("o.hrry"))).assertError(ExitCode.BAD_INPUT, "INVALID_MAGIC");
        assertFalse(Files.exists(tmp.resolve("o.npz")));
        assertFalse(Files.exists(tmp.resolve("o.hrry")));
    }

    @Test
    void truncatedHurrayFiles() throws IOException {
        Path hrry = tinyHrry();
        byte[] b = Files.readAllBytes(hrry);
        Path cut = tmp.resolve("cut.hrry");
        Files.write(cut, Arrays.copyOf(b, b.length - 10));
        run("inspect", s(cut)).assertError(ExitCode.BAD_INPUT, "INVALID_MAGIC");
        run("verify", s(cut)).assertError(ExitCode.VERIFY_FAILED, "verification failed");
        Path out = tmp.resolve("o.safetensors");
        run("convert", "--dequantize", s(cut), s(out)).assertError(ExitCode.BAD_INPUT, "cut.hrry");
        Files.write(cut, Arrays.copyOf(b, 40));
        run("inspect", s(cut)).assertError(ExitCode.BAD_INPUT, "TRUNCATED");

        Path hrrys = tmp.resolve("s.hrrys");
        run("convert", s(hrry), s(hrrys)).assertOk();
        byte[] sb = Files.readAllBytes(hrrys);
        Path cutStream = tmp.resolve("cut.hrrys");
        Files.write(cutStream, Arrays.copyOf(sb, sb.length / 2));
        run("verify", s(cutStream)).assertError(ExitCode.VERIFY_FAILED, "TRUNCATED");
        run("inspect", s(cutStream)).assertError(ExitCode.BAD_INPUT, "TRUNCATED");
        Path half = tmp.resolve("half.hrry");
        run("convert", s(cutStream), s(half)).assertError(ExitCode.BAD_INPUT, "TRUNCATED");
        assertFalse(Files.exists(half), "no output from a truncated stream");
        assertFalse(Files.exists(out));
        assertOnly(tmp, tmp.resolve("src"), hrry, cut, hrrys, cutStream);
    }

    @Test
    void corruptPayloadIsFoundByVerifyAndConvert() throws IOException {
        Path hrry = tinyHrry();
        byte[] b = Files.readAllBytes(hrry);
        b[64] ^= 0x40; // inside the first payload
        Path bad = tmp.resolve("bad.hrry");
        Files.write(bad, b);
        run("inspect", s(bad)).assertOk(); // the index is intact: inspect reads no payload
        run("verify", s(bad)).assertError(ExitCode.VERIFY_FAILED, "CORRUPT");
        run("convert", s(bad), s(tmp.resolve("o.hrrys"))).assertError(ExitCode.BAD_INPUT, "CORRUPT");
        assertFalse(Files.exists(tmp.resolve("o.hrrys")));
    }

    @Test
    void unwritableHurrayOutputs() throws IOException {
        Path npz = NPY.resolve("stored.npz");
        for (String ext : List.of("hrry", "hrrys")) {
            Path noDir = tmp.resolve("no/such/dir/out." + ext);
            run("convert", s(npz), s(noDir)).assertError(ExitCode.IO_ERROR, "cannot write " + noDir);
            Path blocker = tmp.resolve("a-file");
            Files.writeString(blocker, "x");
            Path under = blocker.resolve("out." + ext);
            run("convert", s(npz), s(under)).assertError(ExitCode.IO_ERROR, "cannot write " + under);
            Path dir = Files.createDirectories(tmp.resolve("d." + ext));
            run("convert", s(npz), s(dir)).assertError(ExitCode.IO_ERROR, "cannot write " + dir);
        }
    }

    @Test
    void verboseShowsTheStackTraceOfANativeError() throws IOException {
        Path junk = tmp.resolve("junk.hrry");
        Files.write(junk, new byte[100]);
        Result r = run("inspect", "-v", s(junk));
        assertEquals(ExitCode.BAD_INPUT, r.code());
        assertTrue(r.err().startsWith("hurray: error: "), r.err());
        assertTrue(r.err().contains("HurrayException"), r.err());
        assertTrue(r.err().contains("\tat "), r.err());
    }
}
