package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What the library logs through SLF4J (slf4j-simple is the tests' provider): nothing for a
 * successful load, a first tensor and a container written and read, without even starting SLF4J; with
 * {@code -Dhurray.trace.downcalls=true}, one INFO line when the native library loads (its origin
 * and C ABI version) and one per native call on {@code dev.hurray.ffm.downcalls}. Runs in a
 * child JVM, where the library is not loaded yet.
 */
class LoggingTest {
    /** The child: makes one tensor (a few downcalls) and exits. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            try (Tensor t = Tensor.of(new float[] {1, 2}, 2)) {
                System.out.println("child: " + t.descriptor());
            }
            // A container written, then opened both ways: no log line either.
            java.nio.file.Path path = java.nio.file.Files.createTempDirectory("hurray-log").resolve("m.hrry");
            try (HurrayFileWriter w = HurrayFile.create(path); Tensor t = Tensor.of(new float[] {3}, 1)) {
                w.add("x", t);
                w.finish();
            }
            try (HurrayFile f = HurrayFile.open(path); Tensor t = f.read("x")) {
                System.out.println("child file: " + t.toFloatArray()[0]);
            }
            try (HurrayFile f = HurrayFile.map(path); Tensor t = f.read("x")) {
                System.out.println("child map: " + t.toFloatArray()[0]);
            }
            System.out.println("child source: " + dev.hurray.ffm.NativeLibrary.source());
        }
    }

    private static String run(boolean trace) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"),
                "-Dhurray.library.path=" + System.getProperty("hurray.library.path", ""),
                "-Dhurray.trace.downcalls=" + trace,
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
                "-Xlog:class+load=info:stdout",
                Child.class.getName());
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    void aQuietLoadStartsNoLoggingAndTheTraceSwitchLogsTheLoadAndEachDowncall() throws Exception {
        String quiet = run(false);
        assertTrue(quiet.contains("child: float32[2]"), quiet);
        assertTrue(quiet.contains("child file: 3.0") && quiet.contains("child map: 3.0"), quiet);
        assertTrue(quiet.lines().anyMatch(l -> l.startsWith("child source: ") && !l.contains("not loaded")), quiet);
        assertTrue(quiet.lines().noneMatch(l -> l.contains("libhurray loaded from")), quiet);
        assertTrue(quiet.lines().noneMatch(l -> l.contains("dev.hurray.ffm.downcalls")), quiet);
        // Not one SLF4J class loaded: the application's provider is not started by the library.
        assertTrue(quiet.lines().noneMatch(l -> l.contains(" org.slf4j.")), quiet);

        String traced = run(true);
        assertEquals(1, traced.lines().filter(l -> l.contains("INFO dev.hurray.ffm.NativeLibrary - libhurray loaded from ")
                && l.contains("(C ABI version 4)")).count(), traced);
        assertTrue(traced.lines().anyMatch(l -> l.contains("INFO dev.hurray.ffm.downcalls - hurray_")), traced);
    }
}
