package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import org.junit.jupiter.api.Test;

/** {@link WriterOptions#batchBytes()}: small tensors leave together; failures keep rule 4. */
class BatchingWriterTest {
    /** Counts write calls; fails the write calls from {@code failFrom} on, after taking {@code takeOnFail} bytes. */
    static final class CountingStream extends OutputStream {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int writes;
        int failFrom = Integer.MAX_VALUE;
        int takeOnFail;

        @Override
        public void write(int b) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            writes++;
            if (writes >= failFrom) {
                bytes.write(b, off, Math.min(len, takeOnFail));
                throw new IOException("sink failed at write " + writes);
            }
            bytes.write(b, off, len);
        }
    }

    private static Tensor tensor(int i) {
        float[] v = new float[256]; // 1 KiB
        v[0] = i;
        return Tensor.of(v);
    }

    @Test
    void smallTensorsLeaveInFewWritesAndOnlyWhenFlushedOrFull() throws IOException {
        CountingStream out = new CountingStream();
        try (Writer w = Writer.of(out, WriterOptions.defaults().withBatchBytes(WriterOptions.DEFAULT_BATCH_BYTES))) {
            for (int i = 0; i < 10; i++) {
                try (Tensor t = tensor(i)) {
                    w.write(t);
                }
            }
            assertEquals(0, out.bytes.size(), "10 KiB stay pending below a 64 KiB batch");
            w.flush();
            int afterFlush = out.bytes.size();
            assertTrue(afterFlush > 10 * 1024);
            assertEquals(1, out.writes);
            for (int i = 10; i < 200; i++) {
                try (Tensor t = tensor(i)) {
                    w.write(t);
                }
            }
            assertTrue(out.writes <= 10, out.writes + " writes for 190 more tensors"); // 190 unbatched
        }
        try (Reader r = Reader.of(out.bytes.toByteArray())) {
            for (int i = 0; i < 200; i++) {
                try (Tensor t = r.read()) {
                    assertEquals(i, t.toFloatArray()[0]);
                }
            }
            assertNull(r.read());
        }
    }

    @Test
    void withoutBatchingEveryWriteSendsItsItem() throws IOException {
        CountingStream out = new CountingStream();
        try (Writer w = Writer.of(out, WriterOptions.defaults().withBatchBytes(0))) {
            try (Tensor t = tensor(1)) {
                w.write(t);
            }
            assertTrue(out.bytes.size() > 1024);
        }
    }

    @Test
    void aFailedFlushBeforeAnyByteLeavesTheBatchPendingForARetry() throws IOException {
        CountingStream out = new CountingStream();
        Writer w = Writer.of(out, WriterOptions.defaults().withBatchBytes(1 << 20));
        try (Tensor a = tensor(1); Tensor b = tensor(2)) {
            w.write(a);
            w.write(b);
        }
        out.failFrom = 1;
        HurrayException e = assertThrows(HurrayException.class, w::flush);
        assertEquals(Status.TRANSPORT, e.status());
        assertTrue(e.getCause() instanceof IOException);
        out.failFrom = Integer.MAX_VALUE;
        w.flush();
        w.close();
        try (Reader r = Reader.of(out.bytes.toByteArray())) {
            try (Tensor t = r.read()) {
                assertEquals(1, t.toFloatArray()[0]);
            }
            try (Tensor t = r.read()) {
                assertEquals(2, t.toFloatArray()[0]);
            }
            assertNull(r.read());
        }
    }

    @Test
    void aFailedWriteBeforeAnyByteCanBeRetriedWithoutDuplicatingTheItem() throws IOException {
        CountingStream out = new CountingStream();
        Writer w = Writer.of(out, WriterOptions.defaults().withBatchBytes(0));
        out.failFrom = 1;
        try (Tensor a = tensor(7)) {
            assertEquals(Status.TRANSPORT, assertThrows(HurrayException.class, () -> w.write(a)).status());
            out.failFrom = Integer.MAX_VALUE;
            w.write(a);
        }
        w.close();
        try (Reader r = Reader.of(out.bytes.toByteArray())) {
            try (Tensor t = r.read()) {
                assertEquals(7, t.toFloatArray()[0]);
            }
            assertNull(r.read());
        }
    }

    @Test
    void aFlushFailingAfterPartOfTheBatchLeftPoisonsTheWriter() throws IOException {
        CountingStream out = new CountingStream();
        Writer w = Writer.of(out, WriterOptions.defaults().withBatchBytes(1 << 20));
        try (Tensor a = tensor(1)) {
            w.write(a);
            w.write(a);
        }
        out.failFrom = 1;
        out.takeOnFail = 10;
        // The stream takes the first 10 bytes of the chunk and then throws; the sink reports
        // nothing taken for that call, so the writer is not poisoned by it; a second flush
        // that does take bytes and then fails is.
        assertThrows(HurrayException.class, w::flush);
        out.failFrom = 2;
        out.takeOnFail = 0;
        out.writes = 0;
        HurrayException e = assertThrows(HurrayException.class, () -> {
            try (Tensor big = Tensor.of(new float[100_000])) { // > 64 KiB: sent in two writes
                w.write(big);
            }
        });
        assertEquals(Status.TRANSPORT, e.status());
        assertTrue(e.getMessage().contains("poisoned"), e.getMessage());
        try (Tensor a = tensor(1)) {
            assertEquals(Status.POISONED, assertThrows(HurrayException.class, () -> w.write(a)).status());
        }
        w.close(); // a poisoned writer closes without a new failure
    }

    @Test
    void batchSizeIsValidated() {
        assertThrows(IllegalArgumentException.class, () -> WriterOptions.defaults().withBatchBytes(-1));
        assertThrows(IllegalArgumentException.class, () -> WriterOptions.defaults().withBatchBytes(WriterOptions.MAX_BATCH_BYTES + 1));
        assertEquals(WriterOptions.DEFAULT_BATCH_BYTES, WriterOptions.defaults().batchBytes());
        assertArrayEquals(new Object[] {true, WriterOptions.DEFAULT_BATCH_BYTES},
                new Object[] {new WriterOptions(true).payloadChecksums(), new WriterOptions(true).batchBytes()});
    }

    @Test
    void midSizedPayloadsOverAGatheringChannelRoundTrip() throws Exception {
        java.nio.channels.Pipe pipe = java.nio.channels.Pipe.open();
        Thread sender = Thread.ofVirtual().start(() -> {
            try (Writer w = Writer.of(pipe.sink(), WriterOptions.defaults().withBatchBytes(WriterOptions.DEFAULT_BATCH_BYTES))) {
                for (int i = 0; i < 50; i++) {
                    float[] v = new float[(i % 3 == 0) ? 5000 : 100]; // 20 KB payloads are borrowed, small ones batched
                    v[0] = i;
                    v[v.length - 1] = -i;
                    try (Tensor t = Tensor.of(v)) {
                        w.write(t);
                    }
                }
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        try (Reader r = Reader.of(pipe.source())) {
            for (int i = 0; i < 50; i++) {
                try (Tensor t = r.read()) {
                    float[] v = t.toFloatArray();
                    assertEquals((i % 3 == 0) ? 5000 : 100, v.length);
                    assertEquals(i, v[0]);
                    assertEquals(-i, v[v.length - 1]);
                }
            }
            assertNull(r.read());
        }
        sender.join();
    }

    @Test
    void aChannelThatTakesNoBytesIsAClosedSinkNotASpin() throws Exception {
        java.nio.channels.WritableByteChannel zero = new java.nio.channels.WritableByteChannel() {
            @Override
            public int write(java.nio.ByteBuffer src) {
                return 0;
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        };
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(20), () -> {
            Writer w = Writer.of(zero, WriterOptions.defaults().withBatchBytes(0));
            try (Tensor t = tensor(1)) {
                assertEquals(Status.SINK_CLOSED, assertThrows(HurrayException.class, () -> w.write(t)).status());
            }
            // Closing still tries the end marker, which the closed sink refuses too.
            assertEquals(Status.SINK_CLOSED, assertThrows(HurrayException.class, w::close).status());
        });
    }
}
