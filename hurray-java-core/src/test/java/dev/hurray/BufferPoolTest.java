package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The reader's buffer pool ({@link ReaderOptions#bufferPoolBytes()}; docs/spec/stream.md
 * §Buffer pool): closed tensors' memory is reused, open tensors' memory never is, and closed
 * tensors' segments stay unusable.
 */
class BufferPoolTest {
    private static final int N = 40;

    /** {@code n} uint8 tensors of {@code size} bytes with distinct contents. */
    private static byte[] wire(int n, int size) throws IOException {
        List<Tensor> ts = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                ts.add(Tensor.of(ElementType.UINT8, TestSupport.bytes(i, size), size));
            }
            return TestSupport.stream(ts, WriterOptions.defaults());
        } finally {
            ts.forEach(Tensor::close);
        }
    }

    @Test
    void defaultsHaveA256MiBPoolAndNegativeCapsAreRefused() {
        assertEquals(256L << 20, ReaderOptions.defaults().bufferPoolBytes());
        assertEquals(ReaderOptions.DEFAULT_BUFFER_POOL_BYTES, ReaderOptions.defaults().bufferPoolBytes());
        assertEquals(0, ReaderOptions.defaults().withBufferPoolBytes(0).bufferPoolBytes());
        assertEquals(TensorScope.SHARED,
                ReaderOptions.defaults().withBufferPoolBytes(5).withTensorScope(TensorScope.SHARED).tensorScope());
        assertEquals(5, ReaderOptions.defaults().withTensorScope(TensorScope.SHARED).withBufferPoolBytes(5).bufferPoolBytes());
        assertThrows(IllegalArgumentException.class, () -> ReaderOptions.defaults().withBufferPoolBytes(-1));
        ReaderOptions five = new ReaderOptions(32, 1 << 20, 1 << 30, false, TensorScope.CONFINED);
        assertEquals(ReaderOptions.DEFAULT_BUFFER_POOL_BYTES, five.bufferPoolBytes());
    }

    @Test
    void closingEachTensorReusesItsMemoryAndTheDataIsRight() throws IOException {
        for (int size : new int[] {1024, 200 * 1024}) {
            // Small tensors are decoded up to 64 per call and freed 64 at a time, so their memory
            // comes back a batch later; a large one's comes back when it is closed.
            boolean small = size <= 64 * 1024;
            int n = small ? 10 * N : N;
            byte[] wire = wire(n, size);
            Set<Long> addresses = new HashSet<>();
            try (Reader r = Reader.of(wire)) {
                for (int i = 0; i < n; i++) {
                    try (Tensor t = r.read()) {
                        assertArrayEquals(TestSupport.bytes(i, size), t.toByteArray(), "tensor " + i);
                        assertEquals(0, t.buffer(0).address() % 64);
                        addresses.add(t.buffer(0).address());
                    }
                }
                assertEquals(null, r.read());
            }
            if (small) {
                assertTrue(addresses.size() <= 3 * 64, size + " bytes: memory is reused after a batch: " + addresses.size());
            } else {
                assertEquals(1, addresses.size(), size + " bytes: every tensor reused the first one's memory");
            }
        }
    }

    @Test
    void withoutAPoolTheDataIsRightToo() throws IOException {
        byte[] wire = wire(N, 100_000);
        try (Reader r = Reader.of(wire, ReaderOptions.defaults().withBufferPoolBytes(0))) {
            for (int i = 0; i < N; i++) {
                try (Tensor t = r.read()) {
                    assertArrayEquals(TestSupport.bytes(i, 100_000), t.toByteArray());
                }
            }
        }
    }

    @Test
    void openTensorsKeepTheirMemoryAndClosedOnesStayUnusable() throws IOException {
        int size = 100_000;
        byte[] wire = wire(4, size);
        try (Reader r = Reader.of(wire)) {
            Tensor a = r.read();
            MemorySegment aSeg = a.buffer(0);
            Tensor b = r.read();
            assertNotEquals(aSeg.address(), b.buffer(0).address(), "an open tensor's memory is not reused");
            long bAddress = b.buffer(0).address();
            MemorySegment bSeg = b.buffer(0);
            b.close();
            Tensor c = r.read();
            assertEquals(bAddress, c.buffer(0).address(), "the closed tensor's memory is reused");
            // The closed tensor's segment refuses access although its memory now holds c's bytes.
            assertThrows(IllegalStateException.class, () -> bSeg.get(ValueLayout.JAVA_BYTE, 0));
            assertThrows(IllegalStateException.class, b::toByteArray);
            assertArrayEquals(TestSupport.bytes(0, size), a.toByteArray(), "the open tensor is intact");
            assertArrayEquals(TestSupport.bytes(2, size), c.toByteArray());
            // Tensors outlive the reader and its pool.
            Tensor d = r.read();
            r.close();
            assertArrayEquals(TestSupport.bytes(3, size), d.toByteArray());
            for (Tensor t : new Tensor[] {a, c, d}) {
                t.close();
            }
            assertTrue(!a.isOpen() && !c.isOpen() && !d.isOpen());
        }
    }

    @Test
    void aLoopbackSocketReadReusesMemory() throws Exception {
        int size = 1 << 20;
        int n = 12;
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            CompletableFuture<Void> sender = CompletableFuture.runAsync(() -> {
                try (SocketChannel out = SocketChannel.open(server.getLocalAddress()); Writer w = Writer.of(out)) {
                    for (int i = 0; i < n; i++) {
                        try (Tensor t = Tensor.of(ElementType.UINT8, TestSupport.bytes(i, size), size)) {
                            w.write(t);
                        }
                    }
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            Set<Long> addresses = new HashSet<>();
            try (SocketChannel in = server.accept(); Reader r = Reader.of(in)) {
                for (int i = 0; i < n; i++) {
                    try (Tensor t = r.read()) {
                        assertArrayEquals(TestSupport.bytes(i, size), t.toByteArray(), "tensor " + i);
                        addresses.add(t.buffer(0).address());
                    }
                }
                assertEquals(null, r.read());
            }
            sender.get(30, TimeUnit.SECONDS);
            assertEquals(1, addresses.size());
        }
    }
}
