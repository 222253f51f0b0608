package dev.hurray;

import static dev.hurray.TestSupport.assertSameTensor;
import static dev.hurray.TestSupport.everyTypeAndRank;
import static dev.hurray.TestSupport.filled;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Real loopback TCP: the channel path (ServerSocketChannel) and the plain-socket stream path. */
class SocketTest {
    private ExecutorService pool;

    @BeforeEach
    void start() {
        pool = Executors.newFixedThreadPool(2);
    }

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    @Test
    @Timeout(60)
    void everyTypeAndRankOverLoopbackChannels() throws Exception {
        List<TensorDescriptor> descriptors = everyTypeAndRank();
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Future<?> producer = pool.submit(() -> {
                try (SocketChannel ch = SocketChannel.open(server.getLocalAddress()); Writer w = Writer.of(ch)) {
                    long seed = 1;
                    for (TensorDescriptor d : descriptors) {
                        try (Tensor t = filled(d, seed++)) {
                            w.write(t);
                        }
                    }
                }
                return null;
            });
            try (SocketChannel accepted = server.accept(); Reader r = Reader.of(accepted.socket())) {
                long seed = 1;
                for (TensorDescriptor d : descriptors) {
                    try (Tensor expected = filled(d, seed++); Tensor t = r.read()) {
                        assertSameTensor(expected, t);
                    }
                }
                assertNull(r.read());
            }
            producer.get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * One tensor of 256 MiB over loopback TCP, written from and read into native memory: the
     * heap holds no copy (checked by the heap pools' peak usage); verified by CRC32C computed
     * in 16 MiB chunks on both sides.
     */
    @Test
    @Timeout(60)
    void twoHundredFiftySixMebibyteTensorOverLoopback() throws Exception {
        long size = 256L << 20;
        TensorDescriptor d = TensorDescriptor.builder(ElementType.UINT8, size).name("big").build();
        long heapPeakBefore = heapUsedAfterGc();
        ManagementFactory.getMemoryPoolMXBeans().forEach(MemoryPoolMXBean::resetPeakUsage);
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Future<Long> producer = pool.submit(() -> {
                try (Arena arena = Arena.ofConfined();
                        SocketChannel ch = SocketChannel.open(server.getLocalAddress());
                        Writer w = Writer.of(ch)) {
                    MemorySegment payload = arena.allocate(size, 64);
                    for (long i = 0; i < size / 8; i++) {
                        payload.setAtIndex(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
                    }
                    long crc = crc32c(payload);
                    w.write(d, payload);
                    return crc;
                }
            });
            long receivedCrc;
            try (SocketChannel accepted = server.accept(); Reader r = Reader.of(accepted)) {
                try (Tensor t = r.read()) {
                    assertEquals(d, t.descriptor());
                    assertEquals(size, t.buffer(0).byteSize());
                    assertTrue(t.buffer(0).isNative());
                    receivedCrc = crc32c(t.buffer(0));
                }
                assertNull(r.read());
            }
            assertEquals(producer.get(60, TimeUnit.SECONDS), receivedCrc);
        }
        long heapPeak = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP && p.getPeakUsage() != null) {
                heapPeak += p.getPeakUsage().getUsed();
            }
        }
        assertTrue(heapPeak - heapPeakBefore < size / 2,
                "heap peak grew by " + ((heapPeak - heapPeakBefore) >> 20) + " MiB for a " + (size >> 20) + " MiB tensor");
    }

    private static long heapUsedAfterGc() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static long crc32c(MemorySegment s) {
        CRC32C crc = new CRC32C();
        long chunk = 16L << 20;
        for (long off = 0; off < s.byteSize(); off += chunk) {
            crc.update(s.asSlice(off, Math.min(chunk, s.byteSize() - off)).asByteBuffer());
        }
        return crc.getValue();
    }

    /**
     * Plain sockets (no channel: the stream path) in a request/response exchange on one
     * connection: closing a socket writer only shuts the output down, so the same socket then
     * carries the reply.
     */
    @Test
    @Timeout(60)
    void plainSocketRequestAndReply() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Future<?> echo = pool.submit(() -> {
                try (Socket s = server.accept()) {
                    java.util.List<Tensor> got = new java.util.ArrayList<>();
                    try (Reader r = Reader.of(s)) {
                        r.forEach(got::add);
                    }
                    try (Writer w = Writer.of(s)) {
                        for (Tensor t : got) {
                            try (t) {
                                w.write(t);
                            }
                        }
                    }
                }
                return null;
            });
            float[] values = {1, 2, 3, 4, 5, 6};
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort())) {
                try (Writer w = Writer.of(s); Tensor t = Tensor.of(values, 2, 3)) {
                    w.write(t);
                    w.write(t);
                }
                try (Reader r = Reader.of(s)) {
                    int n = 0;
                    for (Tensor t : r) {
                        try (t) {
                            assertEquals("float32[2,3] row-major", t.descriptor().toString());
                            org.junit.jupiter.api.Assertions.assertArrayEquals(values, t.toFloatArray());
                            n++;
                        }
                    }
                    assertEquals(2, n);
                }
            }
            echo.get(30, TimeUnit.SECONDS);
        }
    }
}
