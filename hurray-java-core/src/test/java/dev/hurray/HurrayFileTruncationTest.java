package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.testing.ChildJvm;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file that another process truncates while {@link HurrayFile#open} reads it is an error,
 * never a crash (a memory map would raise SIGBUS there). The reading runs in a child JVM, so a
 * crash fails this test with the child's exit code instead of killing the test run.
 */
class HurrayFileTruncationTest {
    static final int TENSORS = 8;
    static final int FLOATS = 64 * 1024; // 256 KiB per tensor: the cut lands inside the payloads

    /** The child: reads the first tensor, truncates the file under the open reader, reads on. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            Path path = Path.of(args[0]);
            List<String> outcomes = new ArrayList<>();
            try (HurrayFile f = HurrayFile.open(path)) {
                Tensor first = f.read("t0");
                try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
                    ch.truncate(ch.size() / 2);
                }
                for (int i = 1; i < TENSORS; i++) {
                    try (Tensor t = f.read("t" + i)) {
                        outcomes.add("t" + i + "=" + t.toFloatArray()[0]);
                    } catch (HurrayException e) {
                        outcomes.add("t" + i + "=" + e.status());
                    }
                }
                try {
                    // Reads no payload: it checks the index, loaded at open, and the padding.
                    f.verify();
                    outcomes.add("verify=ok");
                } catch (HurrayException e) {
                    outcomes.add("verify=" + e.status());
                }
                try {
                    f.readBuffer(f.entry("t" + (TENSORS - 1)).orElseThrow(), 0, java.lang.foreign.Arena.ofAuto()
                            .allocate(FLOATS * 4L, 64));
                    outcomes.add("readBuffer=ok");
                } catch (HurrayException e) {
                    outcomes.add("readBuffer=" + e.status());
                }
                // The first tensor owns its memory: the truncation cannot reach it.
                outcomes.add("first=" + first.toFloatArray()[FLOATS - 1]);
                first.close();
            }
            System.out.println("survived " + String.join(" ", outcomes));
        }
    }

    @Test
    void aFileTruncatedWhileOpenIsReadAsAnErrorNotACrash(@TempDir Path dir) throws Exception {
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
        // Tensors in the first half still read; those past the cut are TRUNCATED; the first
        // tensor's bytes are intact.
        assertTrue(line.contains("t1=2.0"), line);
        assertTrue(line.contains("t" + (TENSORS - 1) + "=TRUNCATED"), line);
        assertTrue(line.contains("first=1.0"), line);
        assertTrue(line.contains("readBuffer=TRUNCATED"), line);
    }
}
