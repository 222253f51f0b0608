package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.ForeignTensor;
import dev.hurray.formats.Npz;
import dev.hurray.formats.Safetensors;
import dev.hurray.formats.TestSupport;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code hurray} command end to end, in-process, with captured stdout/stderr and exit codes. */
class CliTest {
    @TempDir
    Path tmp;

    Path tiny;

    record Result(int code, String out, String err) {
        void assertOk() {
            assertEquals(ExitCode.OK, code, "stderr: " + err);
        }

        /** One error line (plus nothing else), exit {@code expect}, message containing {@code text}. */
        void assertError(int expect, String text) {
            assertEquals(expect, code, "stdout: " + out + " stderr: " + err);
            assertTrue(err.contains(text), "expected '" + text + "' in stderr: " + err);
            assertFalse(err.contains("\tat "), "no stack trace without --verbose: " + err);
        }
    }

    static Result run(String... args) {
        return run(false, args);
    }

    static Result run(boolean terminal, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(args, new PrintWriter(out), new PrintWriter(err), terminal);
        return new Result(code, out.toString(), err.toString());
    }

    /** Runs with {@code stdin} as standard input. */
    static Result runWithStdin(byte[] stdin, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(args, new java.io.ByteArrayInputStream(stdin), new PrintWriter(out), new PrintWriter(err), false);
        return new Result(code, out.toString(), err.toString());
    }

    @BeforeEach
    void extractBundledModel() throws IOException {
        tiny = BundledModels.extract("tiny_face_detector_model", tmp);
    }

    private String s(Path p) {
        return p.toString();
    }

    private List<Path> files() throws IOException {
        try (Stream<Path> l = Files.list(tmp)) {
            return l.sorted().toList();
        }
    }

    // ---- inspect ---------------------------------------------------------------------------

    @Test
    void inspectPrintsATable() {
        Result r = run("inspect", s(tiny));
        r.assertOk();
        List<String> lines = r.out.lines().toList();
        assertTrue(lines.get(0).contains("tfjs, 19 tensors"), lines.get(0));
        assertTrue(lines.get(1).matches("NAME +DTYPE +SHAPE +LAYOUT +QUANTIZATION +BYTES +OFFSET"), lines.get(1));
        assertEquals(2 + 19, lines.size());
        assertTrue(lines.get(2).matches("conv0/filters +uint8 +\\[3, 3, 3, 16] +row-major +affine\\(scale=0\\.009007044399485869,"
                + "bias=-1\\.2069439495311063\\)->float32 +432 +0"), lines.get(2));
        assertEquals("", r.err);
    }

    @Test
    void inspectJsonIsMachineReadable() throws IOException {
        Result r = run("inspect", "--json", s(tiny));
        r.assertOk();
        byte[] b = r.out.getBytes(StandardCharsets.UTF_8);
        Map<String, Object> doc = TestSupport.map(JsonOut.parse(b));
        assertEquals("tfjs", doc.get("format"));
        assertEquals(19, ((Number) doc.get("tensor_count")).intValue());
        assertEquals(Files.size(tmp.resolve("tiny_face_detector_model.bin")), ((Number) doc.get("total_bytes")).longValue());
        List<Object> tensors = TestSupport.list(doc.get("tensors"));
        Map<String, Object> first = TestSupport.map(tensors.get(0));
        assertEquals("conv0/filters", first.get("name"));
        assertEquals("uint8", first.get("dtype"));
        assertEquals(List.of(3, 3, 3, 16), TestSupport.list(first.get("shape")).stream().map(x -> ((Number) x).intValue()).toList());
        Map<String, Object> q = TestSupport.map(first.get("quantization"));
        assertEquals("affine", q.get("kind"));
        assertEquals(0.009007044399485869, ((Number) q.get("scale")).doubleValue());
        assertEquals(-1.2069439495311063, ((Number) q.get("bias")).doubleValue());
        assertEquals("float32", q.get("dequantized"));
        long offset = 0;
        for (Object o : tensors) {
            Map<String, Object> t = TestSupport.map(o);
            assertEquals(offset, ((Number) t.get("offset")).longValue());
            offset += ((Number) t.get("bytes")).longValue();
        }
    }

    @Test
    void inspectNpyNpzAndSafetensors() throws IOException {
        Path npy = TestSupport.resourceDir("npy").resolve("float64_be_f.npy");
        Result r = run("inspect", s(npy));
        r.assertOk();
        assertTrue(r.out.lines().anyMatch(l -> l.matches("float64_be_f +float64 +\\[2, 3] +column-major +- +48 +-")), r.out);
        assertTrue(r.out.contains("npy, 1 tensor, 48 B"), r.out);
        Path npz = TestSupport.resourceDir("npy").resolve("deflated.npz");
        r = run("inspect", "--json", s(npz));
        r.assertOk();
        assertTrue(r.out.contains("\"name\" : \"layer/0/kernel\""), r.out);
        Path st = tmp.resolve("m.safetensors");
        run("convert", s(npz), s(st)).assertOk();
        r = run("inspect", s(st));
        r.assertOk();
        assertTrue(r.out.contains("safetensors, 7 tensors"), r.out);
    }

    // ---- convert ---------------------------------------------------------------------------

    @Test
    void convertNpzToSafetensorsAndBackIsBitExact() throws IOException {
        Path npz = TestSupport.resourceDir("npy").resolve("stored.npz");
        Path st = tmp.resolve("a.safetensors");
        Path back = tmp.resolve("b.npz");
        Result r = run("convert", s(npz), s(st));
        r.assertOk();
        assertTrue(r.out.startsWith("converted 7 tensors"), r.out);
        run("convert", s(st), s(back)).assertOk();
        try (ForeignModel a = Npz.read(npz, null); ForeignModel b = Npz.read(back, null);
             ForeignModel c = Safetensors.read(st)) {
            for (ForeignTensor t : a.tensors()) {
                ForeignTensor u = b.tensor(t.name());
                assertEquals(t.dtype(), u.dtype());
                assertArrayEquals(t.shape(), u.shape());
                // The Fortran-order array came back row-major: same values, C order.
                try (var arena = java.lang.foreign.Arena.ofConfined()) {
                    byte[] rowMajor = TestSupport.bytes(dev.hurray.formats.Payloads.toRowMajor(t, arena).data());
                    assertArrayEquals(rowMajor, TestSupport.bytes(u.data()), t.name());
                    assertArrayEquals(rowMajor, TestSupport.bytes(c.tensor(t.name()).data()), t.name());
                }
            }
        }
        assertEquals(List.of(st, back), files().stream().filter(p -> !p.toString().contains("tiny_face")).toList(),
                "no temporary files left");
    }

    @Test
    void convertPicksFormatsByExtensionOrFlags() throws IOException {
        Path one = TestSupport.resourceDir("npy").resolve("int16_c.npy");
        Path st = tmp.resolve("one.out");
        run("convert", "--to", "safetensors", s(one), s(st)).assertOk();
        Path npy = tmp.resolve("again.npy");
        run("convert", "--from", "safetensors", s(st), s(npy)).assertOk();
        assertArrayEquals(Files.readAllBytes(one), Files.readAllBytes(npy), "npy → safetensors → npy is byte-identical");
        run("convert", s(one), s(tmp.resolve("x.unknown"))).assertError(ExitCode.USAGE, "pass --to");
        Path many = TestSupport.resourceDir("npy").resolve("stored.npz");
        run("convert", s(many), s(tmp.resolve("many.npy"))).assertError(ExitCode.BAD_INPUT, "npy holds exactly one array");
        run("convert", s(many), s(tmp.resolve("x.json"))).assertError(ExitCode.USAGE, "can be read but not written");
        run("convert", s(st), s(st)).assertError(ExitCode.USAGE, "same file");
    }

    /** The entries of a safetensors file with pairing off: name → dtype and shape. */
    private static Map<String, String> safetensorsEntries(Path p) throws IOException {
        Map<String, String> m = new java.util.TreeMap<>();
        try (ForeignModel f = Safetensors.read(p, Safetensors.Options.defaults().withoutPairing())) {
            for (ForeignTensor t : f.tensors()) {
                m.put(t.name(), Safetensors.dtypeName(t.dtype()) + t.shapeString());
            }
        }
        return m;
    }

    @Test
    void mxScalesPairWithTheirValuesInSafetensors() throws IOException {
        float[] w = new float[2 * 64];
        for (int i = 0; i < w.length; i++) {
            w[i] = (i % 13 - 6) * 0.5f;
        }
        Path in = tmp.resolve("w.safetensors");
        java.nio.ByteBuffer le = java.nio.ByteBuffer.allocate(4 * w.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        le.asFloatBuffer().put(w);
        java.lang.foreign.MemorySegment data = java.lang.foreign.MemorySegment.ofArray(le.array());
        Safetensors.write(new ForeignModel(List.of(new ForeignTensor("w", dev.hurray.ElementType.FLOAT32, new long[] {2, 64},
                dev.hurray.Layout.Kind.ROW_MAJOR, data, null, -1)), Map.of(), null), in, null);
        Path hrry = tmp.resolve("w.hrry");
        run("convert", "--quantize", "mxfp4", s(in), s(hrry)).assertOk();
        // Default: values "w" plus scales "w_scale", paired back into one MX tensor.
        Path st = tmp.resolve("mx.safetensors");
        run("convert", s(hrry), s(st)).assertOk();
        assertEquals(Map.of("w", "F4[2, 64]", "w_scale", "F8_E8M0[2, 2]"), safetensorsEntries(st));
        Path back = tmp.resolve("back.hrry");
        run("convert", s(st), s(back)).assertOk();
        Result r = run("inspect", s(back));
        r.assertOk();
        assertTrue(r.out.lines().anyMatch(l -> l.startsWith("w ") && l.contains("mx")), r.out);
        assertFalse(r.out.contains("w_scale"), r.out);
        try (dev.hurray.HurrayFile a = dev.hurray.HurrayFile.open(hrry); dev.hurray.HurrayFile b = dev.hurray.HurrayFile.open(back);
                dev.hurray.Tensor ta = a.read("w"); dev.hurray.Tensor tb = b.read("w")) {
            assertEquals(ta.descriptor().quantization(), tb.descriptor().quantization());
            for (int i = 0; i < 2; i++) {
                assertArrayEquals(ta.buffer(i).toArray(ValueLayout.JAVA_BYTE), tb.buffer(i).toArray(ValueLayout.JAVA_BYTE));
            }
        }
        // Another suffix on both sides.
        Path dot = tmp.resolve("dot.safetensors");
        run("convert", "--safetensors-scale-suffix", ".scales", s(hrry), s(dot)).assertOk();
        assertEquals(Map.of("w", "F4[2, 64]", "w.scales", "F8_E8M0[2, 2]"), safetensorsEntries(dot));
        Path plain = tmp.resolve("plain.hrry");
        run("convert", s(dot), s(plain)).assertOk();
        assertTrue(run("inspect", s(plain)).out.contains("w.scales"), "the default suffix does not pair '.scales'");
        Path paired = tmp.resolve("paired.hrry");
        run("convert", "--safetensors-scale-suffix", ".scales", s(dot), s(paired)).assertOk();
        assertFalse(run("inspect", s(paired)).out.contains("w.scales"));
        // none: no pairing on read, and MX cannot be written.
        Path none = tmp.resolve("none.hrry");
        run("convert", "--safetensors-scale-suffix", "none", s(st), s(none)).assertOk();
        assertTrue(run("inspect", s(none)).out.contains("w_scale"));
        run("convert", "--safetensors-scale-suffix", "none", s(hrry), s(tmp.resolve("no.safetensors")))
                .assertError(ExitCode.BAD_INPUT, "quantized");
        run("convert", "--safetensors-scale-suffix", "", s(hrry), s(tmp.resolve("e.safetensors")))
                .assertError(ExitCode.USAGE, "--safetensors-scale-suffix");
    }

    @Test
    void quantizeAndDequantizeTogetherAreAUsageError() {
        run("convert", "--quantize", "nf4", "--dequantize", s(tiny), s(tmp.resolve("out.npz")))
                .assertError(ExitCode.USAGE, "--quantize and --dequantize contradict each other");
    }

    @Test
    void quantizedTfjsNeedsDequantizeForForeignTargets() throws IOException {
        Path st = tmp.resolve("t.safetensors");
        run("convert", s(tiny), s(st)).assertError(ExitCode.BAD_INPUT, "pass --dequantize");
        assertFalse(Files.exists(st));
        Result r = run("convert", "--dequantize", s(tiny), s(st));
        r.assertOk();
        try (ForeignModel m = Safetensors.read(st)) {
            assertEquals(19, m.tensors().size());
            assertTrue(m.tensors().stream().allMatch(t -> t.dtype() == dev.hurray.ElementType.FLOAT32));
            ForeignTensor f = m.tensor("conv0/filters");
            byte q0 = Files.readAllBytes(tmp.resolve("tiny_face_detector_model.bin"))[0];
            float expect = (float) (Byte.toUnsignedInt(q0) * 0.009007044399485869 + -1.2069439495311063);
            assertEquals(expect, f.data().get(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0));
        }
    }

    // ---- bad input -------------------------------------------------------------------------

    @Test
    void missingFile() {
        for (String name : List.of("absent.safetensors", "absent.hrry", "absent.hrrys")) {
            String absent = s(tmp.resolve(name));
            for (String[] args : List.of(new String[] {"inspect", absent}, new String[] {"convert", absent, s(tmp.resolve("o.npz"))},
                    new String[] {"verify", absent}, new String[] {"send", "localhost:1", absent})) {
                run(args).assertError(ExitCode.BAD_INPUT, absent + ": no such file or directory");
            }
        }
    }

    @Test
    void wrongFormat() throws IOException {
        Path junk = tmp.resolve("junk.safetensors");
        Files.write(junk, "this is not a tensor file at all".getBytes(StandardCharsets.US_ASCII));
        Result r = run("inspect", s(junk));
        r.assertError(ExitCode.BAD_INPUT, "not a safetensors file");
        assertEquals(1, r.err.lines().count(), "one line: " + r.err);
        Path mystery = tmp.resolve("mystery");
        Files.write(mystery, new byte[] {1, 2, 3, 4});
        run("inspect", s(mystery)).assertError(ExitCode.BAD_INPUT, "unrecognised format");
        run("convert", s(mystery), s(tmp.resolve("o.npz"))).assertError(ExitCode.BAD_INPUT, "unrecognised format");
        run("inspect", "--from", "npz", s(junk)).assertError(ExitCode.BAD_INPUT, "not an npz (zip) file");
        run("inspect", s(tmp)).assertError(ExitCode.BAD_INPUT, "is a directory");
        run("inspect", "/dev/zero").assertError(ExitCode.BAD_INPUT, "not a regular file");
    }

    @Test
    void truncatedFiles() throws IOException {
        Path npy = TestSupport.resourceDir("npy").resolve("float32_c.npy");
        byte[] b = Files.readAllBytes(npy);
        Path cut = tmp.resolve("cut.npy");
        Files.write(cut, Arrays.copyOf(b, b.length - 5));
        run("inspect", s(cut)).assertError(ExitCode.BAD_INPUT, "(truncated)");
        run("convert", s(cut), s(tmp.resolve("o.safetensors"))).assertError(ExitCode.BAD_INPUT, "(truncated)");
        run("verify", s(cut)).assertError(ExitCode.VERIFY_FAILED, "verification failed");
        Path bin = tmp.resolve("tiny_face_detector_model.bin");
        byte[] shard = Files.readAllBytes(bin);
        Files.write(bin, Arrays.copyOf(shard, shard.length - 1));
        run("inspect", s(tiny)).assertError(ExitCode.BAD_INPUT, "truncated shard");
        assertFalse(Files.exists(tmp.resolve("o.safetensors")));
    }

    @Test
    void unwritableOutput() throws IOException {
        Path npz = TestSupport.resourceDir("npy").resolve("stored.npz");
        Path blocker = tmp.resolve("a-file");
        Files.writeString(blocker, "x");
        Path out = blocker.resolve("out.safetensors");
        run("convert", s(npz), s(out)).assertError(ExitCode.IO_ERROR, "cannot write " + out);
        Path noDir = tmp.resolve("no/such/dir/out.npz");
        run("convert", s(npz), s(noDir)).assertError(ExitCode.IO_ERROR, "cannot write " + noDir);
        Path dirAsOutput = Files.createDirectory(tmp.resolve("d.npz"));
        run("convert", s(npz), s(dirAsOutput)).assertError(ExitCode.IO_ERROR, "is a directory");
        assertEquals("x", Files.readString(blocker));
        Path dirAsHrry = Files.createDirectory(tmp.resolve("d.hrry"));
        run("convert", s(npz), s(dirAsHrry)).assertError(ExitCode.IO_ERROR, "is a directory");
    }

    @Test
    void aSpecialFileIsNeverReplacedByTheOutput() throws IOException {
        // Like `hurray convert in /dev/null`: the atomic rename would turn the device (here a
        // UNIX-domain socket file) into a regular file. Every writer refuses it instead.
        Path npz = TestSupport.resourceDir("npy").resolve("stored.npz");
        for (String name : List.of("s.npz", "s.safetensors", "s.hrrys", "s.hrry")) {
            Path socket = tmp.resolve(name);
            try (java.nio.channels.ServerSocketChannel server =
                    java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
                server.bind(java.net.UnixDomainSocketAddress.of(socket));
                run("convert", s(npz), s(socket)).assertError(ExitCode.IO_ERROR, "not a regular file");
                assertTrue(Files.exists(socket) && !Files.isRegularFile(socket), name + " is still a socket");
            }
            Files.delete(socket);
        }
    }

    @Test
    void usageErrors() {
        Result r = run();
        assertEquals(ExitCode.USAGE, r.code);
        assertTrue(r.err.contains("Usage: hurray"), r.err);
        run("inspect").assertError(ExitCode.USAGE, "Missing required parameter");
        run("inspect", "--bogus", "x").assertError(ExitCode.USAGE, "Unknown option");
        run("convert", "--to", "onnx", "a", "b").assertError(ExitCode.USAGE, "unknown format 'onnx'");
        run("send", "nohostport", "f").assertError(ExitCode.USAGE, "expected HOST:PORT");
        run("send", "h:70000", "f").assertError(ExitCode.USAGE, "port in 1-65535");
        run("recv", "--out", "x").assertError(ExitCode.USAGE, "--listen");
        run("frobnicate").assertError(ExitCode.USAGE, "Unmatched argument");
        run("demo", "--model", "nope").assertError(ExitCode.USAGE, "no bundled model 'nope'");
        Result help = run("--help");
        help.assertOk();
        assertTrue(help.out.contains("Exit codes:"), help.out);
        Result version = run("--version");
        version.assertOk();
        assertTrue(version.out.startsWith("hurray "), version.out);
    }

    // ---- verify, verbose, quiet, progress --------------------------------------------------

    @Test
    void verifyAcceptsGoodFiles() {
        for (Path p : List.of(tiny, TestSupport.resourceDir("npy").resolve("deflated.npz"),
                TestSupport.resourceDir("npy").resolve("complex128_be_c.npy"))) {
            Result r = run("verify", s(p));
            r.assertOk();
            assertTrue(r.out.contains(": ok ("), r.out);
        }
    }

    @Test
    void verboseAddsAStackTrace() throws IOException {
        Path junk = tmp.resolve("junk.safetensors");
        Files.write(junk, new byte[4]);
        Result r = run("inspect", "--verbose", s(junk));
        assertEquals(ExitCode.BAD_INPUT, r.code);
        assertTrue(r.err.startsWith("hurray: error: "), r.err);
        assertTrue(r.err.contains("\tat "), r.err);
    }

    @Test
    void quietPrintsNothingOnSuccess() {
        Path npz = TestSupport.resourceDir("npy").resolve("stored.npz");
        Result r = run(true, "convert", "--quiet", s(npz), s(tmp.resolve("q.safetensors")));
        r.assertOk();
        assertEquals("", r.out);
        assertEquals("", r.err, "no progress bar with --quiet, even on a terminal");
    }

    @Test
    void progressBarOnlyOnATerminal() {
        Path npz = TestSupport.resourceDir("npy").resolve("stored.npz");
        Result tty = run(true, "convert", s(npz), s(tmp.resolve("p.safetensors")));
        tty.assertOk();
        assertTrue(tty.err.contains("\rwriting ["), tty.err);
        assertTrue(tty.err.contains("100%"), tty.err);
        assertTrue(tty.err.endsWith("\r\033[K"), "bar erased at the end");
        Result pipe = run(false, "convert", s(npz), s(tmp.resolve("p2.safetensors")));
        pipe.assertOk();
        assertEquals("", pipe.err);
    }

    @Test
    void metadataLossIsWarnedAbout() throws IOException {
        Path st = tmp.resolve("m.safetensors");
        Files.write(st, dev.hurray.formats.SafetensorsTestAccess.file(
                "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                new byte[] {1, 2}));
        Result r = run("convert", s(st), s(tmp.resolve("m.npz")));
        r.assertOk();
        assertTrue(r.err.contains("warning: npz cannot hold file metadata; 1 entries dropped"), r.err);
        assertEquals("", run("convert", "-q", s(st), s(tmp.resolve("m2.npz"))).err);
    }
}
