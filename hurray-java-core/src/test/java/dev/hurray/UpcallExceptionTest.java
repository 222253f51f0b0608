package dev.hurray;

import static dev.hurray.TestSupport.assertSameTensor;
import static dev.hurray.TestSupport.filled;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Sources and sinks that throw: every upcall catches the throwable, the JVM survives, and the
 * Java caller sees a {@link HurrayException} with {@link Status#TRANSPORT} whose cause is the
 * very throwable the source or sink threw. Retrying resumes where the stream stopped.
 */
class UpcallExceptionTest {
    /** A custom {@link Error} (not an OutOfMemoryError) thrown by a transport. */
    static final class BoomError extends Error {
        BoomError(String m) {
            super(m);
        }
    }

    /** The rotation of throwables: RuntimeException, Error, IOException. */
    static Throwable nth(int i) {
        return switch (i % 3) {
            case 0 -> new IllegalStateException("runtime " + i);
            case 1 -> new BoomError("error " + i);
            default -> new IOException("io " + i);
        };
    }

    static void sneakyThrow(Throwable t) throws IOException {
        if (t instanceof IOException io) {
            throw io;
        }
        if (t instanceof RuntimeException re) {
            throw re;
        }
        throw (Error) t;
    }

    /** An input stream that fails on every other call and otherwise moves one byte. */
    static final class FlakyInput extends InputStream {
        private final InputStream in;
        int calls;
        int failures;
        Throwable last;

        FlakyInput(byte[] bytes) {
            this.in = new ByteArrayInputStream(bytes);
        }

        @Override
        public int read() throws IOException {
            throw new UnsupportedOperationException();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (calls++ % 2 == 0) {
                last = nth(failures++);
                sneakyThrow(last);
            }
            return in.read(b, off, Math.min(len, 1));
        }
    }

    @Test
    void readerSurvivesTenThousandThrowingReadsAndResumesMidTensor() throws IOException {
        byte[] wire;
        try (Tensor t = filled(TensorDescriptor.of(ElementType.FLOAT32, 64, 64), 7)) {
            wire = TestSupport.stream(List.of(t), WriterOptions.defaults().withPayloadChecksums(true));
            FlakyInput src = new FlakyInput(wire);
            Tensor got = null;
            int thrown = 0;
            try (Reader r = Reader.of(src)) {
                while (got == null) {
                    try {
                        got = r.read();
                        assertTrue(got != null);
                    } catch (HurrayException e) {
                        thrown++;
                        assertEquals(Status.TRANSPORT, e.status());
                        assertSame(src.last, e.getCause(), "the cause is the source's own throwable");
                        assertTrue(e.nativeMessage().contains("read"), e.nativeMessage());
                    }
                }
                try (Tensor received = got) {
                    assertSameTensor(t, received);
                }
                // The end marker arrives through the same flaky source.
                while (true) {
                    try {
                        assertNull(r.read());
                        break;
                    } catch (HurrayException e) {
                        thrown++;
                        assertSame(src.last, e.getCause());
                    }
                }
            }
            assertEquals(src.failures, thrown);
            assertTrue(thrown >= 10_000, "only " + thrown + " failures");
            // every kind of throwable was reported
            assertTrue(src.failures > 3);
        }
    }

    @Test
    void channelSourceFailuresAreReportedWithTheirCause() throws IOException {
        byte[] wire;
        try (Tensor t = Tensor.of(new int[] {1, 2, 3})) {
            wire = TestSupport.stream(List.of(t), WriterOptions.defaults());
        }
        ByteBuffer src = ByteBuffer.wrap(wire);
        IOException boom = new IOException("channel broke");
        boolean[] fail = {true};
        ReadableByteChannel ch = new ReadableByteChannel() {
            @Override
            public int read(ByteBuffer dst) throws IOException {
                if (fail[0]) {
                    fail[0] = false;
                    throw boom;
                }
                fail[0] = true;
                if (!src.hasRemaining()) {
                    return -1;
                }
                int n = Math.min(dst.remaining(), Math.min(src.remaining(), 5));
                dst.put(dst.position(), src, src.position(), n);
                dst.position(dst.position() + n);
                src.position(src.position() + n);
                return n;
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        };
        try (Reader r = Reader.of(ch)) {
            Tensor got = null;
            int failures = 0;
            while (got == null) {
                try {
                    got = r.read();
                } catch (HurrayException e) {
                    assertSame(boom, e.getCause());
                    failures++;
                }
            }
            try (Tensor received = got) {
                assertArrayEquals(new int[] {1, 2, 3}, received.toIntArray());
            }
            assertTrue(failures > 5);
        }
    }

    /** A memory-backed sink that fails on every other call, before taking any byte. */
    static final class FlakyOutput extends OutputStream {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int calls;
        int failures;
        Throwable last;

        @Override
        public void write(int b) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (calls++ % 2 == 0) {
                last = nth(failures++);
                sneakyThrow(last);
            }
            bytes.write(b, off, len);
        }
    }

    @Test
    void writerRetriesTenThousandWritesThatFailedBeforeTheirFirstByte() throws IOException {
        FlakyOutput sink = new FlakyOutput();
        int tensors = 10_000;
        try (Tensor t = Tensor.of(new short[] {1, 2, 3, 4}, 2, 2)) {
            try (Writer w = Writer.of(sink, WriterOptions.defaults().withBatchBytes(0))) {
                for (int i = 0; i < tensors; i++) {
                    HurrayException e = assertThrows(HurrayException.class, () -> w.write(t));
                    assertEquals(Status.TRANSPORT, e.status());
                    assertSame(sink.last, e.getCause());
                    w.write(t); // nothing of the item went out: the retry succeeds
                }
                HurrayException e = assertThrows(HurrayException.class, w::finish);
                assertSame(sink.last, e.getCause());
                w.finish();
            }
            assertEquals(tensors + 1, sink.failures);
            try (Reader r = Reader.of(sink.bytes.toByteArray())) {
                int n = 0;
                for (Tensor got : r) {
                    try (got) {
                        assertArrayEquals(new short[] {1, 2, 3, 4}, got.toShortArray());
                        n++;
                    }
                }
                assertEquals(tensors, n);
            }
        }
    }

    @Test
    void writerFailingMidItemIsPoisoned() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        IOException boom = new IOException("link down");
        OutputStream sink = new OutputStream() {
            int calls;

            @Override
            public void write(int b) {
                throw new UnsupportedOperationException();
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                if (++calls == 3) {
                    throw boom;
                }
                out.write(b, off, len);
            }
        };
        // A payload over 64 KiB is written in place, after the staged header: several calls per item.
        try (Tensor big = filled(TensorDescriptor.of(ElementType.UINT8, 300_000), 3);
                Tensor small = Tensor.of(new byte[] {1})) {
            Writer w = Writer.of(sink, WriterOptions.defaults().withBatchBytes(0));
            w.write(small);
            HurrayException e = assertThrows(HurrayException.class, () -> w.write(big));
            assertEquals(Status.TRANSPORT, e.status());
            assertSame(boom, e.getCause());
            HurrayException poisoned = assertThrows(HurrayException.class, () -> w.write(small));
            assertEquals(Status.POISONED, poisoned.status());
            assertEquals(Status.POISONED, assertThrows(HurrayException.class, w::finish).status());
            w.close(); // a poisoned writer closes quietly: its failure was already reported
            w.close();
        }
        // What reached the wire is a stream truncated inside the second item.
        try (Reader r = Reader.of(out.toByteArray())) {
            r.read().close();
            assertEquals(Status.TRUNCATED, assertThrows(HurrayException.class, r::read).status());
        }
    }

    @Test
    void closeFailuresAreIoExceptionsNotRuntimeExceptions() throws IOException {
        IOException onClose = new IOException("close failed");
        OutputStream sink = new ByteArrayOutputStream() {
            @Override
            public void close() throws IOException {
                throw onClose;
            }
        };
        Writer w = Writer.of(sink, WriterOptions.defaults().withBatchBytes(0));
        HurrayException e = assertThrows(HurrayException.class, w::close);
        assertEquals(Status.TRANSPORT, e.status());
        assertSame(onClose, e.getCause());
        w.close(); // closed regardless; idempotent

        InputStream src = new ByteArrayInputStream(new byte[0]) {
            @Override
            public void close() throws IOException {
                throw onClose;
            }
        };
        Reader r = Reader.of(src);
        HurrayException re = assertThrows(HurrayException.class, r::close);
        assertSame(onClose, re.getCause());
        r.close();
    }

    @Test
    void sourceCallingBackIntoItsReaderIsRefused() throws IOException {
        Reader[] self = new Reader[1];
        InputStream reentrant = new InputStream() {
            @Override
            public int read() throws IOException {
                self[0].read();
                return -1;
            }
        };
        try (Reader r = Reader.of(reentrant)) {
            self[0] = r;
            HurrayException e = assertThrows(HurrayException.class, r::read);
            assertEquals(Status.TRANSPORT, e.status());
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("own transport callback"), e.getCause().getMessage());
        }
    }

    @Test
    void iteratorWrapsFailuresAndRetries() throws IOException {
        byte[] wire;
        try (Tensor t = Tensor.of(new double[] {1, 2})) {
            wire = TestSupport.stream(List.of(t, t), WriterOptions.defaults());
        }
        FlakyInput src = new FlakyInput(wire);
        int ok = 0;
        int failed = 0;
        try (Reader r = Reader.of(src)) {
            var it = r.iterator();
            while (true) {
                try {
                    if (!it.hasNext()) {
                        break;
                    }
                    try (Tensor t = it.next()) {
                        assertArrayEquals(new double[] {1, 2}, t.toDoubleArray());
                        ok++;
                    }
                } catch (java.io.UncheckedIOException e) {
                    assertInstanceOf(HurrayException.class, e.getCause());
                    assertSame(src.last, e.getCause().getCause());
                    failed++;
                }
            }
        }
        assertEquals(2, ok);
        assertEquals(src.failures, failed);
    }
}
