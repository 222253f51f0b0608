package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.internal.Prelink;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The background linking of the stream path ({@link Prelink}): the first touch of the API starts
 * it and it finishes, {@code -Dhurray.prelink=false} starts nothing, and a first write and read
 * racing it come out exact either way. Runs in child JVMs, where nothing is linked yet.
 */
class PrelinkTest {
    /** The child: the first touch of the API, a write and a read, then whether prelink ran. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            Writer w = Writer.toMemory();
            try (Tensor t = Tensor.of(new float[] {1.5f, 2.5f}, 2)) {
                w.write(t.descriptor().withName("x"), t.buffer(0));
            }
            w.close();
            try (Reader r = Reader.of(w.toByteArray()); Tensor t = r.read()) {
                System.out.println("read " + t.descriptor().name().orElseThrow() + " " + t.toFloatArray()[1]);
            }
            System.out.println("prelinked " + Prelink.awaitDone(30_000));
        }
    }

    private static String run(String prelink) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"),
                "-Dhurray.library.path=" + System.getProperty("hurray.library.path", ""),
                "-Dhurray.prelink=" + prelink, Child.class.getName());
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("read x 2.5"), out);
        return out;
    }

    @Test
    void firstTouchStartsItAndTheSwitchTurnsItOff() throws Exception {
        assertTrue(run("true").contains("prelinked true"));
        assertTrue(run("false").contains("prelinked false"));
    }
}
