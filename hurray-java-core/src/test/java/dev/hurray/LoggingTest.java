package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What the library logs through SLF4J (slf4j-simple is the tests' provider): one INFO line when
 * the native library loads, with its origin and C ABI version, and with
 * {@code -Dhurray.trace.downcalls=true} one INFO line per native call on
 * {@code dev.hurray.ffm.downcalls}. Runs in a child JVM, where the library is not loaded yet.
 */
class LoggingTest {
    /** The child: makes one tensor (a few downcalls) and exits. */
    public static final class Child {
        public static void main(String[] args) {
            try (Tensor t = Tensor.of(new float[] {1, 2}, 2)) {
                System.out.println("child: " + t.descriptor());
            }
        }
    }

    private static String run(boolean trace) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"),
                "-Dhurray.library.path=" + System.getProperty("hurray.library.path", ""),
                "-Dhurray.trace.downcalls=" + trace,
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
                Child.class.getName());
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    void loadingLogsOnceAndTheTraceSwitchLogsEachDowncall() throws Exception {
        String quiet = run(false);
        assertEquals(1, quiet.lines().filter(l -> l.contains("INFO dev.hurray.ffm.NativeLibrary - libhurray loaded from ")
                && l.contains("(C ABI version 4)")).count(), quiet);
        assertTrue(quiet.lines().noneMatch(l -> l.contains("dev.hurray.ffm.downcalls")), quiet);
        assertTrue(quiet.contains("child: float32[2]"), quiet);

        String traced = run(true);
        assertTrue(traced.lines().anyMatch(l -> l.contains("INFO dev.hurray.ffm.downcalls - hurray_")), traced);
    }
}
