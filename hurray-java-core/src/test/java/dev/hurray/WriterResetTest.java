package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link Writer#reset()}: one writer, one whole stream per message, as a new writer would write it. */
class WriterResetTest {
    private static byte[] fresh(Tensor t, WriterOptions o) throws HurrayException {
        try (Writer w = Writer.toMemory(o)) {
            w.write(t);
            w.finish();
            return w.toByteArray();
        }
    }

    @Test
    void eachStreamAfterAResetIsWhatANewWriterWrites() throws HurrayException {
        for (boolean crc : new boolean[] {false, true}) {
            WriterOptions o = WriterOptions.defaults().withPayloadChecksums(crc);
            try (Writer w = Writer.toMemory(o)) {
                for (int n : new int[] {1, 3, 70_000, 0, 5}) {
                    try (Tensor t = Tensor.of(new float[n], n)) {
                        w.reset();
                        w.write(t);
                        w.finish();
                        assertArrayEquals(fresh(t, o), w.toByteArray(), n + " floats");
                    }
                }
            }
        }
    }

    @Test
    void aResetForgetsMetadataBatchedTensorsAndAFinish() throws HurrayException {
        WriterOptions o = WriterOptions.defaults().withBatchBytes(1 << 20);
        try (Writer w = Writer.toMemory(o); Tensor t = Tensor.of(new float[] {1, 2}, 2)) {
            w.metadata(Map.of("k", new byte[] {1}));
            w.write(t); // batched: still pending
            w.reset();
            assertEquals(0, w.toByteArray().length);
            w.finish();
            w.reset(); // a finished stream is forgotten too: write goes on
            w.write(t);
            w.finish();
            assertArrayEquals(fresh(t, WriterOptions.defaults()), w.toByteArray());
        }
    }

    @Test
    void aPoisonedWriterStartsANewStreamAfterAReset() throws HurrayException {
        BatchingWriterTest.CountingStream out = new BatchingWriterTest.CountingStream();
        Writer w = Writer.of(out);
        out.failFrom = 2;
        try (Tensor big = Tensor.of(new float[100_000])) { // > 64 KiB: sent in two writes
            assertThrows(HurrayException.class, () -> w.write(big));
        }
        try (Tensor t = Tensor.of(new float[] {1}, 1)) {
            assertEquals(Status.POISONED, assertThrows(HurrayException.class, () -> w.write(t)).status());
            out.failFrom = Integer.MAX_VALUE;
            out.bytes.reset();
            w.reset();
            w.write(t);
            w.finish();
            assertArrayEquals(fresh(t, WriterOptions.defaults()), out.bytes.toByteArray());
        }
        w.close();
        assertThrows(IllegalStateException.class, w::reset);
    }
}
