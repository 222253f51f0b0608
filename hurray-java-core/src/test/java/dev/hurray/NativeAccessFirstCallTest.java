package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A program whose first Hurray call makes a tensor (no reader, writer or file yet) in a JVM that
 * denies native access: the error names the flag to add, as the library loader's does.
 */
class NativeAccessFirstCallTest {
    /** The child: makes a tensor first, prints what it caught. */
    public static final class Child {
        public static void main(String[] args) {
            try {
                Tensor.of(new float[] {1, 2}, 2).close();
                System.out.println("child: no refusal");
            } catch (Throwable t) {
                for (Throwable c = t; c != null; c = c.getCause()) {
                    System.out.println("child caught: " + c);
                }
            }
        }
    }

    @Test
    void aTensorMadeFirstUnderDeniedNativeAccessNamesTheFlag() throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        String deny = Runtime.version().feature() >= 24 ? "--illegal-native-access=deny" : "--enable-native-access=java.base";
        ProcessBuilder pb = new ProcessBuilder(java, deny, "-cp", System.getProperty("java.class.path"),
                "-Dhurray.library.path=" + System.getProperty("hurray.library.path", ""), Child.class.getName());
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("child caught: java.lang.IllegalCallerException: Hurray calls native code"), out);
        assertTrue(out.contains("--enable-native-access=ALL-UNNAMED"), out);
    }
}
