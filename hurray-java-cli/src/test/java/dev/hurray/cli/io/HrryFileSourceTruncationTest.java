package dev.hurray.cli.io;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.testing.ChildJvm;
import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Tensor;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLI's container input (what {@code inspect}, {@code convert}, {@code cat} and {@code
 * send} read) survives another process truncating the file while a command reads it: the read
 * fails with the container's status instead of the JVM dying of SIGBUS. It runs in a child JVM,
 * so a crash fails the test rather than the test run.
 */
class HrryFileSourceTruncationTest {
    static final int TENSORS = 6;
    static final int FLOATS = 64 * 1024;

    /** The child: reads the source in file order and truncates the file after the first tensor. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            Path path = Path.of(args[0]);
            StringBuilder seen = new StringBuilder();
            try (HrryFileSource src = HrryFileSource.open(path)) {
                src.forEach(item -> {
                    seen.append(item.name()).append('=').append(item.payloads().get(0).get(ValueLayout.JAVA_FLOAT, 0))
                            .append(' ');
                    if (item.name().equals("t0")) {
                        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
                            ch.truncate(ch.size() / 2);
                        }
                    }
                });
                seen.append("end");
            } catch (HurrayException e) {
                seen.append("failed=").append(e.status());
            }
            System.out.println("survived " + seen);
        }
    }

    @Test
    void aContainerTruncatedWhileACommandReadsItFailsWithItsStatus(@TempDir Path dir) throws Exception {
        Path path = dir.resolve("shrinking.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path)) {
            for (int i = 0; i < TENSORS; i++) {
                float[] v = new float[FLOATS];
                java.util.Arrays.fill(v, i + 1);
                try (Tensor t = Tensor.of(v)) {
                    w.add("t" + i, t);
                }
            }
            w.finish();
        }
        String out = ChildJvm.runWithoutCrash(dir, Child.class.getName(), path.toString());
        String line = out.lines().filter(l -> l.startsWith("survived ")).findFirst().orElseThrow(() -> new AssertionError(out));
        assertTrue(line.startsWith("survived t0=1.0 t1=2.0 "), line);
        assertTrue(line.endsWith("failed=TRUNCATED"), line);
    }
}
