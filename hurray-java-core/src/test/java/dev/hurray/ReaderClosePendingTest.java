package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * A reader decodes every tensor its read-ahead completes in one native call; closing it after
 * the first of them destroys the rest (each owns native memory). Observed through the
 * process's resident memory: 10,000 readers, each closed after the first of 48 tensors of
 * 1 KiB, would leave about 450 MiB behind if the tensors decoded ahead outlived their reader.
 */
class ReaderClosePendingTest {
    private static long residentBytes() throws IOException {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) {
                return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IllegalStateException("no VmRSS");
    }

    @Test
    void tensorsDecodedAheadDoNotOutliveTheirReader() throws IOException {
        Writer w = Writer.toMemory(WriterOptions.defaults().withBatchBytes(WriterOptions.DEFAULT_BATCH_BYTES));
        float[] row = new float[256];
        for (int i = 0; i < 48; i++) {
            row[0] = i;
            try (Tensor t = Tensor.of("t" + i, row, 256)) {
                w.write(t);
            }
        }
        w.close();
        byte[] stream = w.toByteArray();
        long before = 0;
        for (int i = 0; i < 10_000; i++) {
            if (i == 500) {
                before = residentBytes(); // after the pools and the JIT have settled
            }
            try (Reader r = Reader.of(stream); Tensor first = r.read()) {
                assertArrayEquals(new float[] {0}, new float[] {first.buffer(0).get(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0)});
            }
        }
        long grown = residentBytes() - before;
        assertTrue(grown < 128L << 20, "resident memory grew by " + (grown >> 20) + " MiB over 9,500 readers");
        // And a reader read to the end still returns every tensor.
        int n = 0;
        try (Reader r = Reader.of(stream)) {
            for (Tensor t : r) {
                try (t) {
                    n++;
                }
            }
        }
        assertTrue(n == 48, n + " tensors");
    }
}
