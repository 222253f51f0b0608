package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.internal.Leaks;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cleaner safety net: readers, writers, files and tensors nobody closed have their native
 * memory freed once unreachable, and memory still reachable through a segment is never freed.
 */
class LeakCleanerTest {
    private static final int MIB = 1 << 20;

    @TempDir
    Path dir;

    private static byte[] oneMiBTensorStream() throws IOException {
        Writer w = Writer.toMemory();
        try (Tensor t = Tensor.of(new float[MIB / 4])) {
            t.buffer(0).set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 42f);
            w.write(t);
        }
        w.close();
        return w.toByteArray();
    }

    private static long rssBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("\\D+", "")) * 1024;
            }
        }
        return 0;
    }

    private static void collectUntil(long leaks) throws InterruptedException {
        // A bounded poll: only the garbage collector, then the cleaner thread, can trip this.
        for (int i = 0; i < 200 && Leaks.leaked() < leaks; i++) {
            System.gc();
            Thread.sleep(20);
        }
    }

    @Test
    void unclosedReadersAndTensorsAreFreedByTheCleaner() throws Exception {
        byte[] stream = oneMiBTensorStream();
        long before = Leaks.leaked();
        long rss0 = rssBytes();
        for (int i = 0; i < 400; i++) {
            Reader r = Reader.of(stream); // never closed
            Tensor t = r.read();           // never closed: 1 MiB of native memory each
            assertEquals(42f, t.buffer(0).get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
            if (i % 50 == 49) {
                System.gc();
            }
        }
        collectUntil(before + 800);
        assertTrue(Leaks.leaked() >= before + 800, "cleaned " + (Leaks.leaked() - before) + " of 800");
        long grown = rssBytes() - rss0;
        // 400 MiB if nothing were freed.
        assertTrue(grown < 200L * MIB, "RSS grew by " + grown / MIB + " MiB");
    }

    @Test
    void aSegmentStillReachableKeepsItsMemory() throws Exception {
        byte[] stream = oneMiBTensorStream();
        MemorySegment kept;
        Reader r = Reader.of(stream, ReaderOptions.defaults().withTensorScope(TensorScope.SHARED));
        {
            Tensor t = r.read(); // leaked, but its segment is kept below
            kept = t.buffer(0);
        }
        r.close();
        long before = Leaks.leaked();
        // Gives the collector and the cleaner thread a bounded chance to (wrongly) free it.
        for (int i = 0; i < 20; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertEquals(before, Leaks.leaked(), "nothing was freed while a segment is reachable");
        assertEquals(42f, kept.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
    }

    @Test
    void unclosedWritersAndFilesAreFreed() throws Exception {
        Path path = dir.resolve("leak.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path); Tensor t = Tensor.of(new float[] {1, 2})) {
            w.add("t", t);
            w.finish();
        }
        long before = Leaks.leaked();
        for (int i = 0; i < 20; i++) {
            Writer.toMemory();        // never closed
            HurrayFile.open(path);    // never closed
            HurrayFile.map(path);     // never closed
        }
        collectUntil(before + 60);
        assertTrue(Leaks.leaked() >= before + 60, "cleaned " + (Leaks.leaked() - before) + " of 60");
        // Closed objects are never reported.
        long now = Leaks.leaked();
        for (int i = 0; i < 20; i++) {
            Writer.toMemory().close();
            HurrayFile.open(path).close();
            try (Reader r = Reader.of(oneMiBTensorStream()); Tensor t = r.read()) {
                assertEquals(42f, t.buffer(0).get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
            }
        }
        // Gives the collector and the cleaner thread a bounded chance to (wrongly) report them.
        for (int i = 0; i < 10; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertEquals(now, Leaks.leaked(), "closed objects reported as leaks");
    }
}
