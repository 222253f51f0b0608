package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link TensorDecoder} and {@link TensorEncoder}: the caller-driven decoder and encoder. */
class TensorDecoderTest {

    private static byte[] stream(Tensor... ts) throws IOException {
        return TestSupport.stream(List.of(ts), WriterOptions.defaults());
    }

    @Test
    void oneByteAtATimeYieldsEachTensorOnceComplete() throws IOException {
        try (Tensor a = Tensor.of(new float[] {1, 2, 3}); Tensor b = Tensor.of(new int[] {7, 8}, 2, 1)) {
            byte[] wire = stream(a, b);
            List<Tensor> got = new ArrayList<>();
            try (TensorDecoder d = TensorDecoder.create()) {
                assertTrue(d.needsInput());
                for (byte x : wire) {
                    d.feed(ByteBuffer.wrap(new byte[] {x}));
                    for (Tensor t; (t = d.next()) != null;) {
                        got.add(t);
                    }
                }
                assertTrue(d.isEndOfStream());
                d.endOfInput();
                assertNull(d.next());
            }
            assertEquals(2, got.size());
            assertArrayEquals(new float[] {1, 2, 3}, got.get(0).toFloatArray());
            assertArrayEquals(new int[] {7, 8}, got.get(1).toIntArray());
            got.forEach(Tensor::close);
        }
    }

    @Test
    void inputEndingMidItemIsTruncated() throws IOException {
        try (Tensor a = Tensor.of(new float[100_000])) {
            byte[] wire = stream(a);
            for (int len : new int[] {0, 5, 40, 70_000, wire.length - 1}) {
                try (TensorDecoder d = TensorDecoder.create()) {
                    d.feed(ByteBuffer.wrap(wire, 0, len));
                    Tensor whole = d.next();
                    // Only the end-of-stream marker is missing from the longest prefix.
                    assertEquals(len == wire.length - 1, whole != null);
                    if (whole != null) {
                        whole.close();
                    }
                    assertNull(d.next());
                    assertFalse(d.isEndOfStream());
                    d.endOfInput();
                    HurrayException e = assertThrows(HurrayException.class, d::next, "prefix " + len);
                    assertEquals(Status.TRUNCATED, e.status());
                    assertEquals(Status.TRUNCATED, assertThrows(HurrayException.class, d::next).status(), "sticky");
                    assertThrows(IllegalStateException.class, () -> d.feed(ByteBuffer.allocate(1)));
                }
            }
        }
    }

    @Test
    void damagedBytesAndBytesAfterTheEndFailClearly() throws IOException {
        try (Tensor a = Tensor.of(new float[] {1, 2})) {
            byte[] wire = TestSupport.stream(List.of(a), WriterOptions.defaults().withPayloadChecksums(true));
            for (int i = 0; i < wire.length; i++) {
                byte[] bad = wire.clone();
                bad[i] ^= 0x40;
                try (TensorDecoder d = TensorDecoder.create()) {
                    HurrayException e = assertThrows(HurrayException.class, () -> {
                        d.feed(ByteBuffer.wrap(bad));
                        d.endOfInput();
                        for (Tensor t; (t = d.next()) != null;) {
                            t.close();
                        }
                    }, "byte " + i);
                    assertTrue(Arrays.asList(Status.CORRUPT, Status.INVALID_MAGIC, Status.VERSION_MISMATCH,
                            Status.TRUNCATED, Status.LIMIT_EXCEEDED).contains(e.status()), "byte " + i + ": " + e.status());
                }
            }
            try (TensorDecoder d = TensorDecoder.create()) {
                d.feed(ByteBuffer.wrap(wire));
                d.next().close();
                assertNull(d.next());
                assertTrue(d.isEndOfStream());
                HurrayException e = assertThrows(HurrayException.class, () -> d.feed(ByteBuffer.wrap(new byte[3])));
                assertEquals(Status.CORRUPT, e.status());
                assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, d::next).status(), "sticky");
                assertFalse(d.isEndOfStream());
            }
        }
    }

    /**
     * {@code inputRegion()} after the end-of-stream marker and after a sticky failure reports what
     * {@code feed} of more bytes reports (a {@link HurrayException} of the same status), never an
     * {@link IllegalStateException}; after the marker it takes no byte, so the end stands.
     */
    @Test
    void inputRegionAfterTheEndOrAFailureReportsAsFeedDoes() throws Exception {
        try (Tensor a = Tensor.of(new float[] {1, 2})) {
            byte[] wire = stream(a);
            for (boolean items : new boolean[] {false, true}) {
                // After the end marker, through the zero-copy way in.
                try (TensorDecoder d = items ? TensorDecoder.createForItems(ReaderOptions.defaults()) : TensorDecoder.create()) {
                    MemorySegment r = d.inputRegion();
                    MemorySegment.copy(MemorySegment.ofArray(wire), 0, r, 0, wire.length);
                    d.filled(wire.length);
                    ((AutoCloseable) (items ? d.nextItem() : d.next())).close();
                    assertNull(items ? d.nextItem() : d.next());
                    assertTrue(d.isEndOfStream());
                    for (int i = 0; i < 2; i++) {
                        HurrayException e = assertThrows(HurrayException.class, d::inputRegion);
                        assertEquals(Status.CORRUPT, e.status());
                        assertTrue(e.getMessage().contains("after the end-of-stream marker"), e.getMessage());
                    }
                    assertTrue(d.isEndOfStream(), "no byte was taken: the end stands");
                    assertNull(items ? d.nextItem() : d.next());
                    // Bytes fed after it: CORRUPT and sticky, and inputRegion says the same.
                    HurrayException fed = assertThrows(HurrayException.class, () -> d.feed(ByteBuffer.wrap(new byte[3])));
                    HurrayException region = assertThrows(HurrayException.class, d::inputRegion);
                    assertEquals(fed.status(), region.status());
                    assertEquals(fed.getMessage(), region.getMessage());
                    assertFalse(d.isEndOfStream());
                    d.endOfInput();
                    assertThrows(IllegalStateException.class, d::inputRegion, "after endOfInput, as feed");
                    assertThrows(IllegalStateException.class, () -> d.feed(ByteBuffer.wrap(new byte[1])));
                }
                // Bytes after the marker in the same call as it.
                try (TensorDecoder d = items ? TensorDecoder.createForItems(ReaderOptions.defaults()) : TensorDecoder.create()) {
                    d.feed(ByteBuffer.wrap(Arrays.copyOf(wire, wire.length + 5)));
                    ((AutoCloseable) (items ? d.nextItem() : d.next())).close();
                    HurrayException e = assertThrows(HurrayException.class, items ? d::nextItem : d::next);
                    assertEquals(Status.CORRUPT, e.status());
                    assertEquals(e.getMessage(), assertThrows(HurrayException.class, d::inputRegion).getMessage());
                    assertEquals(Status.CORRUPT, assertThrows(HurrayException.class,
                            () -> d.feed(ByteBuffer.wrap(new byte[1]))).status());
                    assertFalse(d.isEndOfStream());
                }
                // A sticky failure of damaged bytes: inputRegion throws it again, as feed does.
                byte[] bad = wire.clone();
                bad[0] ^= 0x40;
                try (TensorDecoder d = items ? TensorDecoder.createForItems(ReaderOptions.defaults()) : TensorDecoder.create()) {
                    HurrayException first = assertThrows(HurrayException.class, () -> {
                        d.feed(ByteBuffer.wrap(bad));
                        if (items) {
                            d.nextItem();
                        } else {
                            d.next();
                        }
                    });
                    HurrayException region = assertThrows(HurrayException.class, d::inputRegion);
                    HurrayException fed = assertThrows(HurrayException.class, () -> d.feed(ByteBuffer.wrap(new byte[1])));
                    assertEquals(first.status(), region.status());
                    assertEquals(first.status(), fed.status());
                    assertFalse(d.isEndOfStream());
                }
            }
        }
    }

    /** Bytes after the end marker fed with it (same call) fail as those fed later do, in both views; reset clears it. */
    @Test
    void bytesAfterTheEndInTheSameCallAreCorrupt() throws Exception {
        try (Tensor a = Tensor.of(new float[] {1, 2}); Tensor big = Tensor.of(new float[40_000])) {
            for (byte[] wire : List.of(stream(a), stream(a, big))) {
                byte[] junk = Arrays.copyOf(wire, wire.length + 5);
                for (boolean items : new boolean[] {false, true}) {
                    for (int chunk : new int[] {junk.length, 1, 4096}) {
                        try (TensorDecoder d = items ? TensorDecoder.createForItems(ReaderOptions.defaults())
                                : TensorDecoder.create()) {
                            int taken = 0;
                            HurrayException e = null;
                            try {
                                for (int at = 0; at < junk.length; at += chunk) {
                                    d.feed(ByteBuffer.wrap(junk, at, Math.min(chunk, junk.length - at)));
                                    for (AutoCloseable t; (t = items ? d.nextItem() : d.next()) != null; taken++) {
                                        t.close();
                                    }
                                }
                                d.endOfInput();
                                for (AutoCloseable t; (t = items ? d.nextItem() : d.next()) != null; taken++) {
                                    t.close();
                                }
                            } catch (HurrayException x) {
                                e = x;
                            } catch (Exception x) {
                                throw new AssertionError(x);
                            }
                            String what = "items " + items + ", chunk " + chunk + ", " + wire.length + " bytes";
                            assertNotNull(e, what);
                            assertEquals(Status.CORRUPT, e.status(), what);
                            assertTrue(e.getMessage().contains("after the end-of-stream marker"), e.getMessage());
                            assertEquals(wire.length > 100_000 ? 2 : 1, taken, "tensors before it: " + what);
                            assertFalse(d.isEndOfStream());
                            HurrayException again = assertThrows(HurrayException.class, items ? d::nextItem : d::next);
                            assertEquals(Status.CORRUPT, again.status(), "sticky");
                            d.reset();
                            d.feed(ByteBuffer.wrap(wire));
                            d.endOfInput();
                            int n = 0;
                            for (AutoCloseable t; (t = items ? d.nextItem() : d.next()) != null; n++) {
                                t.close();
                            }
                            assertTrue(d.isEndOfStream(), "a reset decoder reads the clean stream");
                            assertEquals(wire.length > 100_000 ? 2 : 1, n);
                        }
                    }
                }
            }
        }
    }

    @Test
    void maxTensorBytesIsEnforced() throws IOException {
        try (Tensor a = Tensor.of(new float[1024])) {
            byte[] wire = stream(a);
            try (TensorDecoder d = TensorDecoder.create(ReaderOptions.defaults().withMaxTensorBytes(1000))) {
                HurrayException e = assertThrows(HurrayException.class, () -> {
                    d.feed(ByteBuffer.wrap(wire));
                    d.next();
                });
                assertEquals(Status.LIMIT_EXCEEDED, e.status());
            }
        }
    }

    @Test
    void metadataAndItemsAndUntakenItemsClosed() throws IOException {
        try (Tensor w = Tensor.of(new float[] {1, 2}); Tensor s = Tensor.of(new float[] {3})) {
            TensorEncoder e = TensorEncoder.create();
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            e.metadata(Map.of("model", "m1".getBytes()));
            e.encode(Composite.builder("layer").add("w", w).add("s", s));
            e.encode(w);
            e.finish();
            TensorCodecPropertyTest.drain(e, out, new java.util.Random(1));
            e.close();
            byte[] wire = out.toByteArray();
            try (TensorDecoder d = TensorDecoder.createForItems(ReaderOptions.defaults())) {
                assertNull(d.metadata());
                assertThrows(IllegalStateException.class, d::next);
                d.feed(MemorySegment.ofArray(wire));
                assertArrayEquals("m1".getBytes(), d.metadata().get("model"));
                try (Item first = d.nextItem()) {
                    assertTrue(first.isComposite());
                    assertArrayEquals(new float[] {3}, first.composite().orElseThrow().tensor("s").toFloatArray());
                }
                try (Item second = d.nextItem()) {
                    assertFalse(second.isComposite());
                }
            }
            try (TensorDecoder d = TensorDecoder.create()) {
                d.feed(ByteBuffer.wrap(wire));
                d.endOfInput();
                // Nothing taken: close() closes the decoded tensors.
            }
        }
    }

    @Test
    void staleRegionThrowsInsteadOfTouchingFreedMemory() throws IOException {
        try (Tensor a = Tensor.of(new float[] {1})) {
            byte[] wire = stream(a);
            try (TensorDecoder d = TensorDecoder.create()) {
                MemorySegment r = d.inputRegion();
                MemorySegment.copy(MemorySegment.ofArray(wire), 0, r, 0, wire.length);
                d.filled(wire.length);
                assertThrows(IllegalArgumentException.class, () -> d.filled(r.byteSize()));
                d.next().close();
                assertThrows(IllegalStateException.class, () -> r.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
            }
        }
    }

    @Test
    void borrowedPayloadPinsTheTensorUntilConsumed() throws IOException {
        Tensor big = Tensor.of(new float[50_000]);
        try (TensorEncoder e = TensorEncoder.create(); Tensor small = Tensor.of(new float[] {1})) {
            e.encode(big);
            assertTrue(e.borrowsPayloads());
            List<TensorEncoder.Piece> pieces = e.output();
            assertTrue(pieces.stream().anyMatch(TensorEncoder.Piece::borrowed));
            assertEquals(200_000, pieces.stream().filter(TensorEncoder.Piece::borrowed).mapToLong(p -> p.bytes().remaining()).sum());
            assertThrows(IllegalStateException.class, big::close);
            assertThrows(IllegalStateException.class, () -> e.encode(small));
            ByteBuffer staged = pieces.stream().filter(p -> !p.borrowed()).findFirst().orElseThrow().bytes();
            e.consumed(e.pendingBytes());
            assertFalse(e.borrowsPayloads());
            assertThrows(IllegalStateException.class, () -> staged.get(0), "a staging piece ends at the next call");
            big.close();
            e.encode(small);
        }
    }

    /**
     * A selector loop over non-blocking sockets on both sides: the sender gathers the
     * encoder's pieces when the socket is writable, the receiver reads into the decoder's region.
     */
    @Test
    void selectorLoopOverNonBlockingSockets() throws Exception {
        int count = 200;
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            CompletableFuture<List<float[]>> received = CompletableFuture.supplyAsync(() -> {
                try (SocketChannel ch = server.accept(); Selector sel = Selector.open();
                        TensorDecoder d = TensorDecoder.create()) {
                    ch.configureBlocking(false);
                    ch.register(sel, SelectionKey.OP_READ);
                    List<float[]> out = new ArrayList<>();
                    while (!d.isEndOfStream()) {
                        sel.select(1000);
                        sel.selectedKeys().clear();
                        int n;
                        while ((n = ch.read(d.inputRegion().asByteBuffer())) > 0) {
                            d.filled(n);
                        }
                        if (n < 0) {
                            d.endOfInput();
                        }
                        for (Tensor t; (t = d.next()) != null;) {
                            out.add(t.toFloatArray());
                            t.close();
                        }
                    }
                    return out;
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            try (SocketChannel ch = SocketChannel.open(server.getLocalAddress()); Selector sel = Selector.open();
                    TensorEncoder e = TensorEncoder.create()) {
                ch.configureBlocking(false);
                SelectionKey key = ch.register(sel, SelectionKey.OP_WRITE);
                for (int i = 0; i <= count; i++) {
                    if (i < count) {
                        try (Tensor t = Tensor.of(new float[i % 7 == 0 ? 30_000 : 10 + i])) {
                            t.buffer(0).set(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, 0, i);
                            e.encode(t);
                            send(e, ch, sel, key);
                        }
                    } else {
                        e.finish();
                        send(e, ch, sel, key);
                    }
                }
            }
            List<float[]> got = received.get(30, TimeUnit.SECONDS);
            assertEquals(count, got.size());
            for (int i = 0; i < count; i++) {
                assertEquals(i % 7 == 0 ? 30_000 : 10 + i, got.get(i).length);
                assertEquals(i, got.get(i)[0]);
            }
        }
    }

    /** Writes all pending output, waiting for OP_WRITE when the socket is full. */
    private static void send(TensorEncoder e, SocketChannel ch, Selector sel, SelectionKey key) throws IOException {
        while (e.pendingBytes() > 0) {
            ByteBuffer[] bufs = e.output().stream().map(TensorEncoder.Piece::bytes).toArray(ByteBuffer[]::new);
            long n = ch.write(bufs);
            e.consumed(n);
            if (n == 0) {
                sel.select(1000);
                sel.selectedKeys().clear();
            }
        }
        key.interestOps(SelectionKey.OP_WRITE);
    }

    /**
     * A region from {@code inputRegion()} ends with the next {@code feed}: writing through it
     * then throws instead of changing bytes already fed, and {@code filled} refuses to report
     * into it, so the tensor decodes as fed.
     */
    @Test
    void aFeedEndsTheOutstandingInputRegion() throws Exception {
        byte[] wire;
        try (Writer w = Writer.toMemory()) {
            w.write(Tensor.of(new float[] {1, 2, 3, 4}, 4));
            w.finish();
            wire = w.toByteArray();
        }
        try (TensorDecoder dec = TensorDecoder.create()) {
            MemorySegment stale = dec.inputRegion();
            int cut = wire.length - 30;
            dec.feed(ByteBuffer.wrap(wire, 0, cut));
            assertThrows(IllegalStateException.class, () -> stale.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x41));
            assertThrows(IllegalStateException.class, () -> dec.filled(1));
            dec.feed(ByteBuffer.wrap(wire, cut, wire.length - cut));
            dec.endOfInput();
            try (Tensor t = dec.next()) {
                assertArrayEquals(new float[] {1, 2, 3, 4}, t.toFloatArray());
            }
            // A region asked for after a feed works as before.
        }
        try (TensorDecoder dec = TensorDecoder.create()) {
            dec.feed(ByteBuffer.wrap(wire, 0, 10));
            MemorySegment r = dec.inputRegion();
            MemorySegment.copy(MemorySegment.ofArray(wire), 10, r, 0, wire.length - 10);
            dec.filled(wire.length - 10);
            try (Tensor t = dec.next()) {
                assertArrayEquals(new float[] {1, 2, 3, 4}, t.toFloatArray());
            }
        }
    }
}
