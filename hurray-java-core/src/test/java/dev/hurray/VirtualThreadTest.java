package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Readers, writers and files on virtual threads: the stream path runs no upcalls, so a virtual
 * thread waiting for a socket unmounts instead of pinning its carrier (docs/spec/c-abi.md
 * §Decoders and encoders). Before the decoder/encoder boundary, 8 concurrent connections on 2
 * carriers deadlocked here.
 */
class VirtualThreadTest {
    @TempDir
    Path dir;

    /**
     * N receivers accept and read on virtual threads; N senders connect, wait until every
     * receiver is inside its read (so all N are parked at once), then write one tensor on
     * virtual threads.
     */
    @ParameterizedTest
    @ValueSource(ints = {8, 64, 1000})
    void manyConcurrentVirtualThreadConnectionsComplete(int n) {
        assertTimeoutPreemptively(Duration.ofSeconds(120), () -> {
            try (ServerSocketChannel server = ServerSocketChannel.open()) {
                server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), n);
                InetSocketAddress at = (InetSocketAddress) server.getLocalAddress();
                try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
                    CountDownLatch reading = new CountDownLatch(n);
                    List<Future<float[]>> received = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        received.add(vt.submit(() -> {
                            // Each receiver counts once before the senders write: its first read
                            // blocks until then.
                            try (SocketChannel ch = server.accept(); Reader r = Reader.of(tripping(ch, reading));
                                    Tensor t = r.read()) {
                                float[] v = t.toFloatArray();
                                assertNull(r.read());
                                return v;
                            }
                        }));
                    }
                    List<Future<?>> sent = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        float x = i;
                        sent.add(vt.submit(() -> {
                            try (SocketChannel ch = SocketChannel.open(at)) {
                                assertTrue(reading.await(60, TimeUnit.SECONDS), "every receiver is inside its read");
                                try (Writer w = Writer.of(ch); Tensor t = Tensor.of(new float[] {x, x + 1, x + 2})) {
                                    w.write(t);
                                }
                            }
                            return null;
                        }));
                    }
                    for (Future<?> f : sent) {
                        f.get();
                    }
                    double sum = 0;
                    for (Future<float[]> f : received) {
                        float[] v = f.get();
                        assertEquals(3, v.length);
                        assertEquals(v[0] + 1, v[1]);
                        sum += v[0];
                    }
                    assertEquals((double) n * (n - 1) / 2, sum);
                }
            }
        });
    }

    /**
     * JFR records no {@code jdk.VirtualThreadPinned} event while virtual threads read and write
     * through a slow peer (every read and write blocks, many times).
     */
    @Test
    void readingAndWritingOnVirtualThreadsPinsNoCarrier() throws Exception {
        Path jfr = dir.resolve("pinned.jfr");
        try (Recording rec = new Recording()) {
            rec.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            rec.start();
            try (ServerSocketChannel server = ServerSocketChannel.open()) {
                server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                InetSocketAddress at = (InetSocketAddress) server.getLocalAddress();
                float[] big = new float[1 << 20]; // 4 MiB: fills the socket buffers, so writes block
                for (int i = 0; i < big.length; i++) {
                    big[i] = i;
                }
                Thread receiver = Thread.ofVirtual().start(() -> {
                    try (SocketChannel ch = server.accept(); Reader r = Reader.of(ch)) {
                        for (int k = 0; k < 3; k++) {
                            try (Tensor t = r.read()) {
                                assertArrayEquals(big, t.toFloatArray());
                            }
                        }
                        assertNull(r.read());
                    } catch (IOException e) {
                        throw new RuntimeException(e);
                    }
                });
                Thread sender = Thread.ofVirtual().start(() -> {
                    try (SocketChannel ch = SocketChannel.open(at); Writer w = Writer.of(ch); Tensor t = Tensor.of(big)) {
                        for (int k = 0; k < 3; k++) {
                            w.write(t);
                            // A slow producer, the behaviour under test: the reader parks waiting for
                            // the next tensor. Nothing is ordered by it; the assertion is on pinning.
                            Thread.sleep(50);
                        }
                    } catch (IOException | InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                });
                assertTrue(sender.join(Duration.ofSeconds(60)));
                assertTrue(receiver.join(Duration.ofSeconds(60)));
            }
            rec.stop();
            rec.dump(jfr);
        }
        List<RecordedEvent> pinned = RecordingFile.readAllEvents(jfr).stream()
                .filter(e -> e.getEventType().getName().equals("jdk.VirtualThreadPinned"))
                .toList();
        assertEquals(List.of(), pinned, "carriers pinned while reading or writing");
    }

    /**
     * {@code ch} with a latch tripped each time a reader enters {@code read}, so a test acts on
     * a reader that is inside the read instead of one that has probably reached it by now.
     * Interrupting or closing acts on {@code ch} itself, as the test intends.
     */
    static ReadableByteChannel tripping(SocketChannel ch, CountDownLatch entered) {
        return TestSupport.readingThrough(ch, dst -> {
            entered.countDown();
            return ch.read(dst);
        });
    }

    /** Interrupting a virtual thread blocked in read() unblocks it with a clear exception. */
    @Test
    void interruptingABlockedReadUnblocksIt() throws Exception {
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            try (ServerSocketChannel server = ServerSocketChannel.open()) {
                server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                try (SocketChannel peer = SocketChannel.open(server.getLocalAddress())) {
                    AtomicReference<Throwable> thrown = new AtomicReference<>();
                    CountDownLatch reading = new CountDownLatch(1);
                    Thread t = Thread.ofVirtual().start(() -> {
                        try (SocketChannel ch = server.accept(); Reader r = Reader.of(tripping(ch, reading))) {
                            r.read();
                        } catch (Throwable e) {
                            thrown.set(e);
                        }
                    });
                    reading.await(); // the reader is inside the channel's read
                    t.interrupt();
                    assertTrue(t.join(Duration.ofSeconds(10)));
                    HurrayException e = assertInstanceOf(HurrayException.class, thrown.get());
                    assertEquals(Status.TRANSPORT, e.status());
                    assertInstanceOf(ClosedByInterruptException.class, e.getCause());
                }
            }
        });
    }

    /** Closing the channel under a blocked read fails the read with TRANSPORT, never hangs. */
    @Test
    void closingTheChannelUnblocksARead() throws Exception {
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            try (ServerSocketChannel server = ServerSocketChannel.open()) {
                server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                try (SocketChannel peer = SocketChannel.open(server.getLocalAddress()); SocketChannel ch = server.accept()) {
                    CompletableFuture<Throwable> thrown = new CompletableFuture<>();
                    CountDownLatch reading = new CountDownLatch(1);
                    Thread.ofVirtual().start(() -> {
                        try (Reader r = Reader.of(tripping(ch, reading))) {
                            r.read();
                            thrown.complete(null);
                        } catch (Throwable e) {
                            thrown.complete(e);
                        }
                    });
                    reading.await(); // the reader is inside the channel's read
                    ch.close();
                    HurrayException e = assertInstanceOf(HurrayException.class, thrown.get(10, TimeUnit.SECONDS));
                    assertEquals(Status.TRANSPORT, e.status());
                }
            }
        });
    }

    /** A peer that trickles one byte every few milliseconds still delivers exact tensors. */
    @Test
    void aStallingPeerIsReadExactly() throws Exception {
        Writer w = Writer.toMemory();
        try (Tensor a = Tensor.of(new float[] {1, 2, 3}); Tensor b = Tensor.of(new int[] {7, 8})) {
            w.write(a);
            w.write(b);
        }
        w.close();
        byte[] wire = w.toByteArray();
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            try (ServerSocketChannel server = ServerSocketChannel.open()) {
                server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                Thread sender = Thread.ofVirtual().start(() -> {
                    try (SocketChannel ch = SocketChannel.open(server.getLocalAddress())) {
                        for (int i = 0; i < wire.length; i++) {
                            ch.write(ByteBuffer.wrap(wire, i, 1));
                            if (i % 8 == 0) {
                                Thread.sleep(1); // the stalling peer under test, not a synchronisation
                            }
                        }
                    } catch (IOException | InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                });
                try (SocketChannel ch = server.accept(); Reader r = Reader.of(ch)) {
                    try (Tensor t = r.read()) {
                        assertArrayEquals(new float[] {1, 2, 3}, t.toFloatArray());
                    }
                    try (Tensor t = r.read()) {
                        assertArrayEquals(new int[] {7, 8}, t.toIntArray());
                    }
                    assertNull(r.read());
                }
                sender.join();
            }
        });
    }

    /** Many virtual threads read one HurrayFile's tensors (each through its own open file). */
    @Test
    void virtualThreadsReadHurrayFiles() throws Exception {
        Path path = dir.resolve("vt.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path)) {
            for (int i = 0; i < 16; i++) {
                try (Tensor t = Tensor.of(new float[] {i, i, i})) {
                    w.add("t" + i, t);
                }
            }
            w.finish();
        }
        assertTrue(Files.size(path) > 0);
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<Float>> sums = new ArrayList<>();
                for (int k = 0; k < 200; k++) {
                    int i = k % 16;
                    sums.add(vt.submit(() -> {
                        try (HurrayFile f = HurrayFile.open(path); Tensor t = f.read("t" + i)) {
                            float[] v = t.toFloatArray();
                            return v[0] + v[1] + v[2];
                        }
                    }));
                }
                for (int k = 0; k < 200; k++) {
                    assertEquals(3f * (k % 16), sums.get(k).get());
                }
            }
        });
    }

    /** A tensor made on one thread is written by a writer on another (no arena scopes to know). */
    @Test
    void aTensorMadeOnOneThreadIsWrittenFromAnother() throws Exception {
        Tensor t = Tensor.of(new float[] {4, 5, 6});
        Writer w = Writer.toMemory();
        Thread other = Thread.ofPlatform().start(() -> {
            try {
                w.write(t);
                w.close();
            } catch (HurrayException e) {
                throw new RuntimeException(e);
            }
        });
        other.join();
        t.close();
        try (Reader r = Reader.of(w.toByteArray()); Tensor back = r.read()) {
            assertArrayEquals(new float[] {4, 5, 6}, back.toFloatArray());
        }
        // A closed tensor is still refused, from any thread.
        Writer w2 = Writer.toMemory();
        assertThrows(IllegalStateException.class, () -> w2.write(t));
        w2.close();
    }
}
