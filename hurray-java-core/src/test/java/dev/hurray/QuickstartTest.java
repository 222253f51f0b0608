package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's Java quickstart, compiled and run: the code between the markers below must be
 * identical to the first {@code java} block of the repository's {@code README.md} §Java
 * quickstart (checked here too).
 */
class QuickstartTest {
    @Test
    @Timeout(30)
    void quickstartRuns() throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            quickstart();
        } finally {
            System.setOut(out);
        }
        assertEquals("float32[2,3] row-major [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]",
                captured.toString(StandardCharsets.UTF_8).strip());
    }

    static void quickstart() throws IOException {
        // BEGIN quickstart
        try (ServerSocket server = new ServerSocket(0)) {
            Thread.ofPlatform().start(() -> {                                  // the sender
                try (Socket s = new Socket("localhost", server.getLocalPort());
                     Writer writer = Writer.of(s);
                     Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
                    writer.write(t);                                           // close() ends the stream
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            try (Socket s = server.accept(); Reader reader = Reader.of(s)) {  // the receiver
                for (Tensor t : reader) {
                    try (t) {
                        System.out.println(t.descriptor() + " " + Arrays.toString(t.toFloatArray()));
                    }
                }
            }
        }
        // END quickstart
    }

    @Test
    void readmeShowsExactlyThisCode() throws IOException {
        Path test = Path.of("src/test/java/dev/hurray/QuickstartTest.java");
        Path readme = Path.of("../README.md");
        List<String> code = Files.readAllLines(test);
        int begin = code.indexOf("        // BEGIN quickstart");
        int end = code.indexOf("        // END quickstart");
        assertTrue(begin > 0 && end > begin);
        String fromTest = String.join("\n", code.subList(begin + 1, end).stream()
                .map(l -> l.length() >= 8 ? l.substring(8) : l.strip()).toList());
        String md = Files.readString(readme);
        int section = md.indexOf("## Java quickstart");
        assertTrue(section >= 0, "README has the Java quickstart section");
        int start = md.indexOf("```java\n", section);
        assertTrue(start >= 0, "README has a java block");
        String block = md.substring(start + 8, md.indexOf("```", start + 8));
        // Compare the statements (a block may start with its imports).
        String statements = block.substring(block.indexOf("try (ServerSocket")).stripTrailing();
        assertEquals(fromTest, statements);
    }
}
