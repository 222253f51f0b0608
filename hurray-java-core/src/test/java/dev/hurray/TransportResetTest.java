package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A connection reset by the peer (RST, made with {@code SO_LINGER 0}) over real loopback TCP is
 * fatal, not retryable, and reads the same through a socket's stream, its channel and a plain
 * {@code InputStream}: {@code TRANSPORT} with the reset as the cause and
 * {@link HurrayException#isRetryable()} false, on the first call and on every retry (never a
 * later {@code TRUNCATED}). A timeout stays retryable and the reader resumes after it.
 */
class TransportResetTest {
    /** A stream of one 4 MiB tensor: more than loopback buffers hold, so the reader must wait. */
    private static byte[] bigStream() throws IOException {
        float[] values = new float[1 << 20];
        Arrays.fill(values, 1.5f);
        try (Writer w = Writer.toMemory(); Tensor t = Tensor.of(values, values.length)) {
            w.write(t);
            w.finish();
            return w.toByteArray();
        }
    }

    /**
     * Accepts one connection, sends {@code prefix} bytes of {@code stream}, waits until the
     * reader is inside a read that waits for more ({@code waiting}), then resets it.
     */
    private static Thread resettingPeer(ServerSocket server, byte[] stream, int prefix, CountDownLatch waiting) {
        return Thread.ofPlatform().start(() -> {
            try (Socket s = server.accept()) {
                s.getOutputStream().write(stream, 0, prefix);
                s.getOutputStream().flush();
                waiting.await(10, TimeUnit.SECONDS);
                s.setSoLinger(true, 0); // close() sends RST instead of FIN
            } catch (IOException | InterruptedException e) {
                throw new RuntimeException(e);
            }
        });
    }

    private enum Path { SOCKET_STREAM, SOCKET_CHANNEL, INPUT_STREAM }

    /**
     * {@code in}, tripping {@code waiting} when a read starts after {@code prefix} bytes came:
     * the reader then waits for bytes the peer never sends, so the reset meets a blocked read.
     */
    private static InputStream tripping(InputStream in, int prefix, CountDownLatch waiting) {
        return new FilterInputStream(in) {
            private long seen;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (seen >= prefix) {
                    waiting.countDown();
                }
                int n = super.read(b, off, len);
                seen += Math.max(0, n);
                return n;
            }
        };
    }

    /** {@code ch} with the latch of {@link #tripping(InputStream, int, CountDownLatch)}. */
    private static ReadableByteChannel tripping(SocketChannel ch, int prefix, CountDownLatch waiting) {
        long[] seen = new long[1];
        return TestSupport.readingThrough(ch, dst -> {
            if (seen[0] >= prefix) {
                waiting.countDown();
            }
            int n = ch.read(dst);
            seen[0] += Math.max(0, n);
            return n;
        });
    }

    /**
     * The socket of one path; for {@link Path#SOCKET_STREAM} its input stream trips
     * {@code waiting} as {@link #tripping} says.
     */
    private static Socket connect(Path path, InetSocketAddress at, int prefix, CountDownLatch waiting) throws IOException {
        return switch (path) {
            case SOCKET_STREAM -> new Socket(at.getAddress(), at.getPort()) {
                private InputStream in;

                @Override
                public synchronized InputStream getInputStream() throws IOException {
                    if (in == null) {
                        in = tripping(super.getInputStream(), prefix, waiting);
                    }
                    return in;
                }
            };
            case SOCKET_CHANNEL -> SocketChannel.open(at).socket();
            case INPUT_STREAM -> new Socket(at.getAddress(), at.getPort());
        };
    }

    /**
     * The reader of one path: the socket's stream (through {@link Reader#of(Socket)}), its
     * channel or a plain input stream, each tripping {@code waiting}. The failures come from the
     * socket's own stream or channel.
     */
    private static Reader reader(Path path, Socket socket, int prefix, CountDownLatch waiting) throws IOException {
        return switch (path) {
            case SOCKET_STREAM -> Reader.of(socket);
            case SOCKET_CHANNEL -> Reader.of(tripping(socket.getChannel(), prefix, waiting));
            case INPUT_STREAM -> Reader.of(tripping(socket.getInputStream(), prefix, waiting));
        };
    }

    private static void assertFatalReset(HurrayException e, String where) {
        assertEquals(Status.TRANSPORT, e.status(), where + ": " + e);
        assertFalse(e.isRetryable(), where + ": a reset is not retryable: " + e);
        assertNotNull(e.getCause(), where);
        assertFalse(HurrayException.isRetryableCause(e.getCause()), where + ": " + e.getCause());
    }

    @Test
    @Timeout(60)
    void aResetReadsAsTheSameFatalFailureOnEveryPathAndEveryRetry() throws Exception {
        byte[] stream = bigStream();
        for (Path path : Path.values()) {
            for (int prefix : new int[] {0, 10, 100_000}) {
                String where = path + " after " + prefix + " bytes";
                try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                    CountDownLatch waiting = new CountDownLatch(1);
                    Thread peer = resettingPeer(server, stream, prefix, waiting);
                    InetSocketAddress at = new InetSocketAddress(server.getInetAddress(), server.getLocalPort());
                    Socket socket = connect(path, at, prefix, waiting);
                    try (socket; Reader r = reader(path, socket, prefix, waiting)) {
                        HurrayException first = assertThrows(HurrayException.class, r::read, where);
                        assertFatalReset(first, where);
                        for (int retry = 0; retry < 3; retry++) {
                            HurrayException again = assertThrows(HurrayException.class, r::read, where + " retry " + retry);
                            assertFatalReset(again, where + " retry " + retry);
                            assertSame(first.getCause(), again.getCause(), where + ": the same reset, again");
                        }
                    }
                    peer.join();
                }
            }
        }
    }

    @Test
    @Timeout(60)
    void aWriterToAResetPeerFailsFatallyAndStaysFailed() throws Exception {
        for (boolean channel : new boolean[] {false, true}) {
            try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                Thread peer = Thread.ofPlatform().start(() -> {
                    try (Socket s = server.accept()) {
                        s.setSoLinger(true, 0);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
                InetSocketAddress at = new InetSocketAddress(server.getInetAddress(), server.getLocalPort());
                Socket socket = channel ? SocketChannel.open(at).socket() : new Socket(at.getAddress(), at.getPort());
                peer.join();
                float[] values = new float[1 << 18];
                HurrayException first = null;
                try (socket; Writer w = Writer.of(socket); Tensor t = Tensor.of(values, values.length)) {
                    for (int i = 0; i < 200 && first == null; i++) {
                        try {
                            w.write(t);
                        } catch (HurrayException e) {
                            first = e;
                        }
                    }
                    assertNotNull(first, "writing to a reset peer must fail");
                    assertFalse(first.isRetryable(), "channel " + channel + ": " + first);
                    for (int retry = 0; retry < 3; retry++) {
                        HurrayException again = assertThrows(HurrayException.class, () -> w.write(t));
                        assertFalse(again.isRetryable(), "channel " + channel + " retry " + retry + ": " + again);
                    }
                } catch (HurrayException closing) {
                    // close() may report the dead sink too; that is fine
                    assertFalse(closing.isRetryable(), closing.toString());
                }
            }
        }
    }

    @Test
    @Timeout(60)
    void aTimeoutIsRetryableAndTheReaderResumes() throws Exception {
        byte[] stream = bigStream();
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CountDownLatch timedOut = new CountDownLatch(1);
            Thread peer = Thread.ofPlatform().start(() -> {
                try (Socket s = server.accept(); OutputStream out = s.getOutputStream()) {
                    out.write(stream, 0, 1000);
                    out.flush();
                    timedOut.await(10, TimeUnit.SECONDS);
                    out.write(stream, 1000, stream.length - 1000);
                } catch (IOException | InterruptedException e) {
                    throw new RuntimeException(e);
                }
            });
            try (Socket s = new Socket(server.getInetAddress(), server.getLocalPort()); Reader r = Reader.of(s)) {
                s.setSoTimeout(200);
                HurrayException e = assertThrows(HurrayException.class, r::read);
                assertEquals(Status.TRANSPORT, e.status());
                assertInstanceOf(SocketTimeoutException.class, e.getCause());
                assertTrue(e.isRetryable(), e.toString());
                timedOut.countDown();
                s.setSoTimeout(10_000);
                try (Tensor t = r.read()) {
                    assertEquals(1 << 22, t.buffer(0).byteSize());
                }
                assertEquals(null, r.read());
            }
            peer.join();
        }
    }

    @Test
    void causesAreClassified() {
        assertFalse(HurrayException.isRetryableCause(new SocketException("Connection reset")));
        assertFalse(HurrayException.isRetryableCause(new ClosedChannelException()));
        assertFalse(HurrayException.isRetryableCause(new EOFException()));
        assertFalse(HurrayException.isRetryableCause(new IOException("Broken pipe")));
        // Anything else a source threw moved nothing: the handle resumes once it works again.
        assertTrue(HurrayException.isRetryableCause(new IllegalStateException("bug")));
        assertTrue(HurrayException.isRetryableCause(new OutOfMemoryError()));
        assertTrue(HurrayException.isRetryableCause(new SocketTimeoutException("Read timed out")));
        assertTrue(HurrayException.isRetryableCause(new IOException("try again")));
        assertTrue(new HurrayException(Status.TRANSPORT, "", new IOException("x")).isRetryable());
        assertTrue(new HurrayException(Status.TRANSPORT, "", null).isRetryable());
        assertFalse(new HurrayException(Status.TRUNCATED, "", null).isRetryable());
        assertFalse(new HurrayException(Status.TRANSPORT,
                "transport failed after 10 bytes of the item; the writer is poisoned", new IOException("x")).isRetryable());
    }
}
