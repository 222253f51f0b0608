package dev.hurray.cli;

import static dev.hurray.cli.CliTest.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.FileEntry;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Tensor;
import dev.hurray.cli.CliTest.Result;
import dev.hurray.cli.io.HrryFileSource;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code hurray demo}: the bundled models through HRRYFILE, loopback TCP and back, and its comparison. */
class DemoCommandTest {
    @TempDir
    Path tmp;

    @Test
    void demoProvesTheBundledModelsBitExact() {
        Result r = run("demo");
        r.assertOk();
        List<String> lines = r.out().lines().toList();
        assertTrue(lines.get(0).startsWith("hurray demo: tfjs weights -> HRRYFILE -> TCP 127.0.0.1"), r.out());
        assertTrue(lines.get(1).matches("MODEL +TENSORS +QUANTIZED +PAYLOAD +HRRYFILE +CONVERT +TCP +THROUGHPUT +BIT-EXACT"), lines.get(1));
        for (String[] m : new String[][] {{"tiny_face_detector_model", "19", "19"}, {"face_landmark_68_tiny_model", "28", "28"},
                {"age_gender_model", "51", "32"}}) {
            assertTrue(lines.stream().anyMatch(l -> l.matches(m[0] + " +" + m[1] + " +" + m[2] + " .* yes \\(same file bytes\\)")),
                    m[0] + " in " + r.out());
        }
        assertTrue(lines.get(5).matches("total +98 +79 .* yes"), lines.get(5));
        assertTrue(lines.get(6).startsWith("bit-exact: "), r.out());
        assertEquals("", r.err());
    }

    @Test
    void demoKeepsItsFilesOnRequest() throws IOException {
        Path dir = tmp.resolve("kept");
        run("demo", "-q", "--model", "age_gender_model", "--keep", dir.toString()).assertOk();
        Path a = dir.resolve("age_gender_model.hrry");
        Path b = dir.resolve("age_gender_model.received.hrry");
        assertEquals(-1, Files.mismatch(a, b));
        try (HurrayFile f = HurrayFile.open(b)) {
            assertEquals(51, f.count());
            assertTrue(f.metadataString("source").orElseThrow().contains("@vladmandic/face-api 1.7.15"));
        }
        Result r = run("demo", "--dir", dir.resolve("tfjs").toString());
        r.assertOk();
        assertTrue(r.out().contains("age_gender_model "), r.out());
    }

    /** Copies {@code src} to {@code dst}, changing what {@code edit} says (tensor name -> payload edit). */
    private static void copy(Path src, Path dst, Map<String, String> metadata, Function<String, Integer> flipByte)
            throws IOException {
        try (HurrayFile f = HurrayFile.open(src); HurrayFileWriter w = HurrayFile.create(dst)) {
            for (Map.Entry<String, String> e : metadata.entrySet()) {
                w.metadata(e.getKey(), e.getValue());
            }
            for (FileEntry e : f) {
                try (Tensor t = f.read(e); Tensor c = Tensor.copyOf(t.descriptor(), t.buffer(0))) {
                    Integer at = flipByte.apply(e.name());
                    if (at != null) {
                        MemorySegment seg = c.buffer(0);
                        seg.set(ValueLayout.JAVA_BYTE, at, (byte) (seg.get(ValueLayout.JAVA_BYTE, at) ^ 1));
                    }
                    w.add(c);
                }
            }
            w.finish();
        }
    }

    @Test
    void comparisonFindsADifferentByteOrMetadata() throws IOException {
        Path tfjs = BundledModels.extract("face_landmark_68_tiny_model", tmp);
        Path a = tmp.resolve("a.hrry");
        run("convert", tfjs.toString(), a.toString()).assertOk();
        Path same = tmp.resolve("same.hrry");
        Path flipped = tmp.resolve("flipped.hrry");
        Path meta = tmp.resolve("meta.hrry");
        copy(a, same, Map.of(), n -> null);
        copy(a, flipped, Map.of(), n -> n.equals("dense0/conv0/bias") ? 5 : null);
        copy(a, meta, Map.of("k", "v"), n -> null);
        try (HrryFileSource x = HrryFileSource.open(a); HrryFileSource y = HrryFileSource.open(same);
             HrryFileSource z = HrryFileSource.open(flipped); HrryFileSource m = HrryFileSource.open(meta)) {
            assertNull(DemoCommand.compare(x, y));
            assertEquals("tensor 'dense0/conv0/bias' buffer 0 differs at byte 5", DemoCommand.compare(x, z));
            assertTrue(DemoCommand.compare(x, m).startsWith("file metadata keys"), DemoCommand.compare(x, m));
        }
    }

    @Test
    void demoBadInput() throws IOException {
        run("demo", "--model", "nope").assertError(ExitCode.USAGE, "no bundled model 'nope'");
        run("demo", "--dir", tmp.resolve("absent").toString()).assertError(ExitCode.BAD_INPUT, "not a directory");
        run("demo", "--dir", tmp.toString()).assertError(ExitCode.BAD_INPUT, "no *weights_manifest.json files");
        Path blocker = Files.writeString(tmp.resolve("a-file"), "x");
        run("demo", "--keep", blocker.resolve("sub").toString()).assertError(ExitCode.IO_ERROR, "cannot write");
        Path broken = Files.createDirectories(tmp.resolve("broken"));
        Path manifest = BundledModels.extract("age_gender_model", broken);
        Files.write(broken.resolve("age_gender_model.bin"), new byte[10]);
        run("demo", "--dir", broken.toString()).assertError(ExitCode.BAD_INPUT, "truncated shard");
        assertTrue(Files.exists(manifest));
        Result list = run("demo", "--list");
        list.assertOk();
        assertEquals(BundledModels.NAMES, list.out().lines().toList());
    }
}
