package dev.hurray.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With a libhurray that lacks the reader functions (a stub exporting only
 * {@code hurray_c_abi_version}), every construction of the deserializer (Kafka makes one per
 * consumer, by class name) fails with the bindings' UnsatisfiedLinkError naming the function,
 * not with NoClassDefFoundError from the second on. Runs in a child JVM; needs a C compiler.
 */
class OlderLibraryDeserializerTest {
    /** The child: constructs the deserializer twice. */
    public static final class Child {
        public static void main(String[] args) {
            for (int i = 0; i < 2; i++) {
                try {
                    new HurrayTensorDeserializer().close();
                    System.out.println("construct: no error");
                } catch (Throwable t) {
                    System.out.println("construct: " + t.getClass().getName() + ": " + t.getMessage());
                }
            }
        }
    }

    @Test
    void everyConstructionFailsWithTheMissingFunction(@TempDir Path dir) throws Exception {
        Path src = Files.writeString(dir.resolve("stub.c"), "int hurray_c_abi_version(void) { return 4; }\n");
        Path lib = dir.resolve("libstub.so");
        Process cc;
        try {
            cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-o", lib.toString(), src.toString())
                    .redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.abort("no C compiler: " + e.getMessage());
            return;
        }
        String ccOut = new String(cc.getInputStream().readAllBytes());
        assertTrue(cc.waitFor(60, TimeUnit.SECONDS));
        Assumptions.assumeTrue(cc.exitValue() == 0, ccOut);

        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), "-Dhurray.library.path=" + lib, Child.class.getName());
        pb.environment().remove("HURRAY_LIBRARY_PATH");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        List<String> results = out.lines().filter(l -> l.startsWith("construct: ")).toList();
        assertEquals(2, results.size(), out);
        for (String l : results) {
            assertTrue(l.startsWith("construct: java.lang.UnsatisfiedLinkError: libhurray has no hurray_reader_options_init"),
                    out);
        }
    }
}
