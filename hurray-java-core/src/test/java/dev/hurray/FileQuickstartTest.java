package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The "Files (HRRYFILE)" example of {@code hurray-java-core/README.md}, compiled and run: the
 * code between the markers below must be identical to the README's {@code java} block in that
 * section (checked here too).
 */
class FileQuickstartTest {
    @Test
    void exampleRuns() throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        Path path;
        try {
            path = example();
        } finally {
            System.setOut(out);
        }
        assertEquals("layer0/weights [2,3] at byte 64\n[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]",
                captured.toString(StandardCharsets.UTF_8).strip().replace("\r\n", "\n"));
        try (HurrayFile f = HurrayFile.open(path)) {
            assertEquals("example", f.metadataString("framework").orElseThrow());
        }
        Files.delete(path);
        Files.delete(path.getParent());
    }

    static Path example() throws IOException {
        // BEGIN files
        Path path = Files.createTempDirectory("hurray").resolve("model.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path);
             Tensor weights = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            w.add("layer0/weights", weights);
            w.metadata("framework", "example");
            w.finish();                                       // index + trailer, then an atomic rename
        }
        try (HurrayFile file = HurrayFile.map(path)) {       // or HurrayFile.open(path)
            for (FileEntry e : file) {                        // the index only: no payload is read
                System.out.println(e.name() + " " + e.descriptor().shape() + " at byte " + e.buffers().get(0).offset());
            }
            try (Tensor t = file.read("layer0/weights")) {    // zero copy: points into the mapping
                System.out.println(Arrays.toString(t.toFloatArray()));
            }
        }
        // END files
        return path;
    }

    @Test
    void readmeShowsExactlyThisCode() throws IOException {
        List<String> code = Files.readAllLines(Path.of("src/test/java/dev/hurray/FileQuickstartTest.java"));
        int begin = code.indexOf("        // BEGIN files");
        int end = code.indexOf("        // END files");
        assertTrue(begin > 0 && end > begin);
        String fromTest = String.join("\n", code.subList(begin + 1, end).stream()
                .map(l -> l.length() >= 8 ? l.substring(8) : l.strip()).toList());
        String md = Files.readString(Path.of("README.md"));
        int section = md.indexOf("## Files (HRRYFILE)");
        assertTrue(section >= 0, "README has the Files section");
        int start = md.indexOf("```java\n", section);
        assertTrue(start >= 0, "the Files section has a java block");
        String block = md.substring(start + 8, md.indexOf("```", start + 8));
        // The README block starts with its imports; compare the statements after them.
        String statements = block.substring(block.indexOf("Path path =")).stripTrailing();
        assertEquals(fromTest, statements);
        assertTrue(md.substring(section).contains("It prints `layer0/weights [2,3] at byte 64` and "
                + "`[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]`."), "the README states the output this test checks");
    }
}
