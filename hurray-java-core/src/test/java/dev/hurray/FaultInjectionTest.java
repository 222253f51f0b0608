package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Fault injection through the public {@link Reader}/{@link Writer} API (docs/reliability.md):
 * an {@code InputStream} or {@code OutputStream} that throws at its k-th call, for every k of a
 * fault-free run over the golden streams. The reader, retried, reads output identical to the
 * fault-free run; a writer failing before the item's first byte is retried to byte-identical
 * output, and one failing after it is poisoned ({@code POISONED} from then on, not retryable).
 */
class FaultInjectionTest {
    /** A tensor copied out: its encoded descriptor and its buffers' bytes. */
    private record Copy(byte[] descriptor, List<byte[]> buffers) {
        static Copy of(Tensor t) throws HurrayException {
            List<byte[]> b = new ArrayList<>();
            for (int i = 0; i < t.buffers().size(); i++) {
                b.add(t.buffer(i).toArray(ValueLayout.JAVA_BYTE));
            }
            return new Copy(t.descriptor().encode(), b);
        }

        void assertSame(Copy o, String where) {
            assertArrayEquals(descriptor, o.descriptor, where);
            assertEquals(buffers.size(), o.buffers.size(), where);
            for (int i = 0; i < buffers.size(); i++) {
                assertArrayEquals(buffers.get(i), o.buffers.get(i), where + " buffer " + i);
            }
        }
    }

    /** Reads at most {@code chunk} bytes per call and throws at call {@code failAt} (0-based). */
    private static final class FailingInput extends InputStream {
        private final ByteArrayInputStream in;
        private final int chunk;
        private final long failAt;
        long calls;

        FailingInput(byte[] bytes, int chunk, long failAt) {
            this.in = new ByteArrayInputStream(bytes);
            this.chunk = chunk;
            this.failAt = failAt;
        }

        @Override
        public int read() {
            throw new UnsupportedOperationException();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (calls++ == failAt) {
                throw new IOException("injected failure at read call " + failAt);
            }
            return in.read(b, off, Math.min(len, chunk));
        }
    }

    /** Takes whole writes and throws at write call {@code failAt} (0-based), taking nothing. */
    private static final class FailingOutput extends OutputStream {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final long failAt;
        long calls;

        FailingOutput(long failAt) {
            this.failAt = failAt;
        }

        @Override
        public void write(int b) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (calls++ == failAt) {
                throw new IOException("injected failure at write call " + failAt);
            }
            out.write(b, off, len);
        }
    }

    /** A channel taking at most 100 bytes per write, throwing at write call {@code failAt}. */
    private static final class FailingChannel implements java.nio.channels.WritableByteChannel {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final long failAt;
        long calls;

        FailingChannel(long failAt) {
            this.failAt = failAt;
        }

        @Override
        public int write(java.nio.ByteBuffer src) throws IOException {
            if (calls++ == failAt) {
                throw new IOException("injected failure at write call " + failAt);
            }
            int n = Math.min(src.remaining(), 100);
            byte[] b = new byte[n];
            src.get(b);
            out.write(b);
            return n;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }

    private static Path goldenDir() {
        Path p = Paths.get("").toAbsolutePath();
        while (p != null && !Files.exists(p.resolve("hurray.h"))) {
            p = p.getParent();
        }
        assertNotNull(p, "no ancestor holds hurray.h");
        return p.resolve("src").resolve("golden");
    }

    /** Reads every tensor, retrying each retryable failure; returns them and the failures seen. */
    private static List<Copy> readAll(InputStream in, int[] failures) throws IOException {
        List<Copy> out = new ArrayList<>();
        try (Reader r = Reader.of(in)) {
            while (true) {
                Tensor t;
                try {
                    t = r.read();
                } catch (HurrayException e) {
                    assertEquals(Status.TRANSPORT, e.status(), e.toString());
                    assertTrue(e.isRetryable(), "an injected IOException is retryable: " + e);
                    failures[0]++;
                    assertTrue(failures[0] < 3);
                    continue;
                }
                if (t == null) {
                    return out;
                }
                try (t) {
                    out.add(Copy.of(t));
                }
            }
        }
    }

    @Test
    void readsFailingAtEveryCallResumeToIdenticalOutput() throws IOException {
        int runs = 0;
        for (String file : new String[] {"stream_v1_checksums.hrry", "stream_v1_plain.hrry", "stream_v1_empty.hrry"}) {
            byte[] bytes = Files.readAllBytes(goldenDir().resolve(file));
            for (int chunk : new int[] {4096, 61, 7}) {
                FailingInput clean = new FailingInput(bytes, chunk, -1);
                List<Copy> want = readAll(clean, new int[1]);
                for (long k = 0; k < clean.calls; k++) {
                    int[] failures = new int[1];
                    List<Copy> got = readAll(new FailingInput(bytes, chunk, k), failures);
                    String where = file + " chunk " + chunk + " call " + k;
                    assertEquals(1, failures[0], where);
                    assertEquals(want.size(), got.size(), where);
                    for (int i = 0; i < want.size(); i++) {
                        want.get(i).assertSame(got.get(i), where + " tensor " + i);
                    }
                    runs++;
                }
            }
        }
        assertTrue(runs > 500, "runs " + runs);
    }

    @Test
    void writesFailingAtEveryCallRetryOrPoison() throws IOException {
        byte[] golden = Files.readAllBytes(goldenDir().resolve("stream_v1_checksums.hrry"));
        List<Tensor> tensors = new ArrayList<>();
        try (Reader r = Reader.of(golden)) {
            for (Tensor t : r) {
                tensors.add(t);
            }
        }
        try {
          for (boolean channel : new boolean[] {false, true}) {
            FailingOutput cleanStream = new FailingOutput(-1);
            FailingChannel cleanChannel = new FailingChannel(-1);
            try (Writer w = channel ? Writer.of(cleanChannel, WriterOptions.defaults().withBatchBytes(0)) : Writer.of(cleanStream, WriterOptions.defaults().withBatchBytes(0))) {
                for (Tensor t : tensors) {
                    w.write(t);
                }
                w.finish();
            }
            byte[] clean = (channel ? cleanChannel.out : cleanStream.out).toByteArray();
            long calls = channel ? cleanChannel.calls : cleanStream.calls;
            int retried = 0;
            int poisoned = 0;
            for (long k = 0; k < calls; k++) {
                FailingOutput stream = new FailingOutput(k);
                FailingChannel ch = new FailingChannel(k);
                ByteArrayOutputStream sinkOut = channel ? ch.out : stream.out;
                boolean dead = false;
                int done = 0;
                Writer w = channel ? Writer.of(ch, WriterOptions.defaults().withBatchBytes(0)) : Writer.of(stream, WriterOptions.defaults().withBatchBytes(0));
                try {
                    for (Tensor t : tensors) {
                        int before = sinkOut.size();
                        try {
                            w.write(t);
                        } catch (HurrayException e) {
                            assertEquals(Status.TRANSPORT, e.status(), e.toString());
                            if (sinkOut.size() == before) {
                                assertTrue(e.isRetryable(), "nothing of the item went out: " + e);
                                w.write(t); // the same call again
                            } else {
                                assertFalse(e.isRetryable(), "the writer is poisoned: " + e);
                                HurrayException again = assertThrows(HurrayException.class, () -> w.write(t));
                                assertEquals(Status.POISONED, again.status());
                                assertFalse(again.isRetryable());
                                dead = true;
                                break;
                            }
                        }
                        done++;
                    }
                    if (!dead) {
                        try {
                            w.finish();
                        } catch (HurrayException e) {
                            assertTrue(e.isRetryable(), e.toString()); // the end marker is one write
                            w.finish();
                        }
                    }
                } finally {
                    try {
                        w.close();
                    } catch (HurrayException ignored) {
                        // a poisoned writer may report it again on close
                    }
                }
                if (dead) {
                    poisoned++;
                    List<Copy> back = new ArrayList<>();
                    HurrayException end;
                    try (Reader r = Reader.of(sinkOut.toByteArray())) {
                        end = assertThrows(HurrayException.class, () -> {
                            while (true) {
                                Tensor t = r.read();
                                if (t == null) {
                                    return;
                                }
                                try (t) {
                                    back.add(Copy.of(t));
                                }
                            }
                        }, "call " + k + ": a poisoned stream must not end cleanly");
                    }
                    assertFalse(end.isRetryable());
                    assertEquals(done, back.size(), "call " + k);
                } else {
                    retried++;
                    assertArrayEquals(clean, sinkOut.toByteArray(), "call " + k + ": a retried write changes nothing");
                }
            }
            // An OutputStream takes each (small) item in one call, so every failure is before the
            // item's first byte; a channel taking 100 bytes at a time fails mostly mid-item.
            assertTrue(retried > 0, "retried " + retried);
            assertTrue(!channel || poisoned > 0, "poisoned " + poisoned);
          }
        } finally {
            for (Tensor t : tensors) {
                t.close();
            }
        }
    }
}
