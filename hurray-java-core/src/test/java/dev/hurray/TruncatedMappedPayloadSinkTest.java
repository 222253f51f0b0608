package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.testing.ChildJvm;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A payload that maps a file another process truncates while it is written: an output-stream
 * sink and a channel sink both fail the write with {@link Status#TRANSPORT} whose cause is an
 * {@link IOException} naming the fault, the writer is poisoned and closes, and the JVM lives.
 * The writing runs in a child JVM, so a crash fails this test with the child's exit code.
 */
class TruncatedMappedPayloadSinkTest {
    static final long PAYLOAD = 8L << 20; // borrowed in place by either sink
    static final int WARM_UP = 20_000;

    /** The child: maps args[0], truncates it to 1 MiB, writes the mapping to a sink of kind args[1]. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            Path path = Path.of(args[0]);
            Path out = Path.of(args[2]);
            try (Arena arena = Arena.ofShared(); FileChannel ch = FileChannel.open(path, StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                MemorySegment mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, PAYLOAD, arena);
                // Warm the sink's copy up first, so the fault also meets its compiled form.
                try (Writer warm = Writer.of(OutputStream.nullOutputStream())) {
                    TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, 1 << 15);
                    for (int i = 0; i < WARM_UP; i++) {
                        warm.write(d, mapped.asSlice(0, 1 << 17));
                    }
                }
                ch.truncate(1 << 20);
                Writer w = args[1].equals("stream")
                        ? Writer.of(Files.newOutputStream(out))
                        : Writer.of(FileChannel.open(out, StandardOpenOption.CREATE, StandardOpenOption.WRITE));
                String outcome;
                try {
                    w.write(TensorDescriptor.of(ElementType.FLOAT32, PAYLOAD / 4), mapped);
                    outcome = "written";
                } catch (HurrayException e) {
                    outcome = "write=" + e.status() + " cause=" + e.getCause();
                } catch (Throwable t) {
                    outcome = "write=" + t;
                }
                String flush;
                try {
                    w.flush();
                    flush = "ok";
                } catch (HurrayException e) {
                    flush = e.status().toString();
                }
                w.close();
                System.out.println("survived " + outcome + " flush=" + flush + " closed");
            }
        }
    }

    private static String run(Path dir, String sink) throws Exception {
        Path path = dir.resolve(sink + ".bin");
        try (OutputStream o = Files.newOutputStream(path)) {
            o.write(new byte[(int) PAYLOAD]);
        }
        String out = ChildJvm.runWithoutCrash(dir, Child.class.getName(), path.toString(), sink,
                dir.resolve(sink + ".hrrys").toString());
        return out.lines().filter(l -> l.startsWith("survived ")).findFirst().orElseThrow(() -> new AssertionError(out));
    }

    @Test
    void anOutputStreamSinkReportsTheFaultAsAnIoException(@TempDir Path dir) throws Exception {
        String line = run(dir, "stream");
        assertTrue(line.contains("write=TRANSPORT cause=java.io.IOException: reading the payload's memory faulted"), line);
        assertTrue(line.contains("flush=POISONED closed"), line);
    }

    @Test
    void aChannelSinkReportsTheFaultAsAnIoException(@TempDir Path dir) throws Exception {
        String line = run(dir, "channel");
        assertTrue(line.contains("write=TRANSPORT cause=java.io.IOException"), line);
        assertTrue(line.contains("flush=POISONED closed"), line);
    }
}
