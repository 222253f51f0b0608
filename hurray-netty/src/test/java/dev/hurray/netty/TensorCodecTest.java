package dev.hurray.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.Composite;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Reader;
import dev.hurray.ReaderOptions;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelFuture;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The inbound and outbound handlers on an {@link EmbeddedChannel}: copies, ownership, failures. */
class TensorCodecTest {
    static {
        LeakCheck.install();
    }

    /** Collects what the inbound handler fires, releasing each message after copying its values. */
    static final class Collector extends ChannelInboundHandlerAdapter {
        final List<String> names = new ArrayList<>();
        final List<float[]> values = new ArrayList<>();
        final List<Object> events = new ArrayList<>();
        Throwable failure;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            TensorMessage m = (TensorMessage) msg;
            try {
                names.add(m.tensor().descriptor().name().orElse(""));
                values.add(m.tensor().toFloatArray());
            } finally {
                m.release();
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            events.add(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            failure = cause;
        }
    }

    static Tensor named(String name, int n, float base) throws HurrayException {
        Tensor t = Tensor.allocate(TensorDescriptor.builder(ElementType.FLOAT32, n).name(name).build());
        for (int i = 0; i < n; i++) {
            t.buffer(0).setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, i, base + i);
        }
        return t;
    }

    static byte[] stream(List<Tensor> ts) throws IOException {
        try (Writer w = Writer.toMemory()) {
            for (Tensor t : ts) {
                w.write(t);
            }
            w.finish();
            return w.toByteArray();
        }
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        LeakCheck.assertNoLeaks();
    }

    @Test
    void oneByteAtATimeAndCompositeBuffers() throws IOException {
        List<Tensor> ts = List.of(named("a", 3, 1), named("big", 20_000, 7), named("c", 1, 9));
        byte[] wire = stream(ts);
        ts.forEach(Tensor::close);
        for (int mode = 0; mode < 2; mode++) {
            Collector c = new Collector();
            EmbeddedChannel ch = new EmbeddedChannel(new TensorInboundHandler(), c);
            List<ByteBuf> sent = new ArrayList<>();
            if (mode == 0) {
                for (byte b : wire) {
                    // Untracked by the leak detector: PARANOID records every access, per byte.
                    ByteBuf one = Unpooled.wrappedBuffer(new byte[] {b});
                    sent.add(one);
                    ch.writeInbound(one);
                }
            } else {
                // A CompositeByteBuf of uneven heap and direct components.
                CompositeByteBuf comp = Unpooled.compositeBuffer();
                int at = 0;
                for (int k = 0; at < wire.length; k++) {
                    int n = Math.min(wire.length - at, 1 + k * 977);
                    ByteBuf part = k % 2 == 0 ? Unpooled.buffer(n) : Unpooled.directBuffer(n);
                    comp.addComponent(true, part.writeBytes(wire, at, n));
                    at += n;
                }
                sent.add(comp);
                ch.writeInbound(comp);
            }
            assertNull(c.failure);
            assertEquals(List.of("a", "big", "c"), c.names);
            assertEquals(7f + 19_999, c.values.get(1)[19_999]);
            assertInstanceOf(TensorInboundHandler.StreamMetadata.class, c.events.get(0));
            assertEquals(TensorInboundHandler.StreamEnd.INSTANCE, c.events.get(c.events.size() - 1));
            for (ByteBuf b : sent) {
                assertEquals(0, b.refCnt(), "every ByteBuf released by the handler");
            }
            assertFalse(ch.finish());
        }
    }

    @Test
    void truncatedStreamFailsWhenTheConnectionCloses() throws IOException {
        List<Tensor> ts = List.of(named("a", 3, 1), named("b", 30_000, 2));
        byte[] wire = stream(ts);
        ts.forEach(Tensor::close);
        Collector c = new Collector();
        EmbeddedChannel ch = new EmbeddedChannel(new TensorInboundHandler(), c);
        ch.writeInbound(Unpooled.wrappedBuffer(wire, 0, wire.length / 2));
        assertEquals(List.of("a"), c.names);
        ch.close();
        assertInstanceOf(DecoderException.class, c.failure);
        assertEquals(Status.TRUNCATED, ((HurrayException) c.failure.getCause()).status());
    }

    /**
     * A connection carries one stream: bytes after its end marker, in the marker's ByteBuf or a
     * later one, fail the connection (CORRUPT) after the tensors before them, and no end event is fired.
     */
    @Test
    void bytesAfterTheEndMarkerCloseTheConnection() throws IOException {
        List<Tensor> ts = List.of(named("a", 3, 1), named("b", 5, 2));
        byte[] wire = stream(ts);
        ts.forEach(Tensor::close);
        for (boolean sameBuf : new boolean[] {true, false}) {
            Collector c = new Collector();
            EmbeddedChannel ch = new EmbeddedChannel(new TensorInboundHandler(), c);
            ByteBuf junk = Unpooled.wrappedBuffer(new byte[] {1, 2, 3});
            if (sameBuf) {
                ch.writeInbound(Unpooled.wrappedBuffer(Unpooled.wrappedBuffer(wire), junk));
            } else {
                ch.writeInbound(Unpooled.wrappedBuffer(wire));
                assertEquals(TensorInboundHandler.StreamEnd.INSTANCE, c.events.get(c.events.size() - 1));
                ch.writeInbound(junk);
            }
            assertEquals(0, junk.refCnt(), "released");
            assertEquals(List.of("a", "b"), c.names, "same buffer " + sameBuf);
            assertInstanceOf(DecoderException.class, c.failure);
            HurrayException e = (HurrayException) c.failure.getCause();
            assertEquals(Status.CORRUPT, e.status());
            assertTrue(e.getMessage().contains("3 bytes after the end-of-stream marker"), e.getMessage());
            assertEquals(sameBuf, !c.events.contains(TensorInboundHandler.StreamEnd.INSTANCE));
            assertFalse(ch.isOpen());
            assertFalse(ch.finishAndReleaseAll());
        }
    }

    @Test
    void maxTensorBytesClosesTheConnection() throws IOException {
        List<Tensor> ts = List.of(named("small", 10, 1), named("big", 2_000, 2));
        byte[] wire = stream(ts);
        ts.forEach(Tensor::close);
        Collector c = new Collector();
        EmbeddedChannel ch = new EmbeddedChannel(new TensorInboundHandler(ReaderOptions.defaults().withMaxTensorBytes(1024)), c);
        ByteBuf in = Unpooled.wrappedBuffer(wire);
        ch.writeInbound(in);
        assertEquals(0, in.refCnt());
        assertEquals(List.of("small"), c.names);
        assertEquals(Status.LIMIT_EXCEEDED, ((HurrayException) c.failure.getCause()).status());
        assertFalse(ch.isOpen());
    }

    /** Every golden stream with bytes flipped: a clean failure, nothing leaked, connection closed. */
    @Test
    void hostileGoldenStreams() throws Exception {
        Path golden = repoRoot().resolve("src").resolve("golden");
        List<Path> streams;
        try (Stream<Path> s = Files.list(golden)) {
            streams = s.filter(p -> p.toString().endsWith(".hrry")).sorted().toList();
        }
        assertFalse(streams.isEmpty());
        int failures = 0;
        for (Path p : streams) {
            byte[] wire = Files.readAllBytes(p);
            for (int i = 0; i < wire.length; i += Math.max(1, wire.length / 97)) {
                byte[] bad = wire.clone();
                bad[i] ^= (byte) 0xA5;
                EmbeddedChannel ch = new EmbeddedChannel(TensorInboundHandler.forItems(ReaderOptions.defaults()),
                        new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ((TensorMessage) msg).release();
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                assertInstanceOf(HurrayException.class, cause.getCause(), cause.toString());
                                ctx.channel().attr(FAILED).set(Boolean.TRUE);
                            }
                        });
                ByteBuf in = Unpooled.directBuffer(bad.length).writeBytes(bad);
                ch.writeInbound(in);
                assertEquals(0, in.refCnt());
                ch.finishAndReleaseAll();
                if (ch.attr(FAILED).get() != null) {
                    failures++;
                }
            }
        }
        assertTrue(failures > 0);
    }

    private static final io.netty.util.AttributeKey<Boolean> FAILED = io.netty.util.AttributeKey.valueOf("failed");

    static Path repoRoot() {
        Path p = Paths.get("").toAbsolutePath();
        while (p != null && !Files.exists(p.resolve("hurray.h"))) {
            p = p.getParent();
        }
        assertNotNull(p, "no ancestor holds hurray.h");
        return p;
    }

    /** True if {@code b} is, or has as a component, a view of {@code size} bytes at {@code address}. */
    static boolean wraps(ByteBuf b, long address, int size) {
        if (b instanceof io.netty.buffer.CompositeByteBuf c) {
            for (ByteBuf part : c) {
                if (wraps(part, address, size)) {
                    return true;
                }
            }
            return false;
        }
        return b.readableBytes() == size && b.nioBufferCount() == 1 && b.nioBuffer().isDirect()
                && java.lang.foreign.MemorySegment.ofBuffer(b.nioBuffer()).address() == address;
    }

    @Test
    void outboundWrapsLargePayloadsAndClosesEachTensorOnceWritten() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new TensorOutboundHandler());
        Tensor small = named("s", 4, 1);
        Tensor big = named("b", 100_000, 3);
        Tensor w = named("w", 2, 5);
        long bigAddress = big.buffer(0).address();
        ChannelFuture f1 = ch.write(small);
        assertFalse(small.isOpen(), "a copied tensor is closed at once");
        assertFalse(f1.isDone(), "small tensors wait for flush");
        ChannelFuture f2 = ch.write(big);
        ch.write(Composite.builder("layer").add("w", w));
        ch.writeAndFlush(TensorOutboundHandler.END_OF_STREAM);
        assertTrue(f1.isSuccess() && f2.isSuccess());
        assertFalse(big.isOpen(), "closed once Netty wrote its wrapped payload");
        assertTrue(w.isOpen(), "a composite's tensors stay the caller's");
        w.close();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        boolean wrapped = false;
        for (ByteBuf b; (b = ch.readOutbound()) != null;) {
            // Not copied: the tensor's own memory is a component of what was written.
            wrapped |= wraps(b, bigAddress, 400_000);
            byte[] a = new byte[b.readableBytes()];
            b.readBytes(a);
            out.write(a);
            b.release();
        }
        assertTrue(wrapped, "the large payload went out as a view of the tensor's memory");
        try (Reader r = Reader.of(out.toByteArray())) {
            try (Tensor t = r.read()) {
                assertArrayEquals(new float[] {1, 2, 3, 4}, t.toFloatArray());
            }
            try (Tensor t = r.read()) {
                assertEquals(3f + 99_999, t.toFloatArray()[99_999]);
            }
            try (Tensor head = r.read(); Tensor member = r.read()) {
                assertEquals("w", member.descriptor().name().orElseThrow());
            }
            assertNull(r.read());
        }
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void failedWritesStillCloseTheTensor() throws Exception {
        // A transport that fails every write (as a reset connection does) and releases the buffers.
        io.netty.channel.ChannelOutboundHandlerAdapter failing = new io.netty.channel.ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, io.netty.channel.ChannelPromise promise) {
                io.netty.util.ReferenceCountUtil.release(msg);
                promise.setFailure(new IOException("connection reset"));
            }
        };
        EmbeddedChannel ch = new EmbeddedChannel(failing, new TensorOutboundHandler());
        Tensor big = named("b", 100_000, 3);
        Tensor small = named("s", 2, 3);
        ChannelFuture f = ch.write(big);
        ChannelFuture fs = ch.writeAndFlush(small);
        assertFalse(f.isSuccess());
        assertFalse(fs.isSuccess());
        assertFalse(big.isOpen());
        assertFalse(small.isOpen());
        ch.finishAndReleaseAll();
        // After the pipeline is gone, a TensorMessage is released by Netty itself.
        EmbeddedChannel closed = new EmbeddedChannel(new TensorOutboundHandler());
        closed.finishAndReleaseAll();
        TensorMessage late = new TensorMessage(named("late", 2, 1));
        assertFalse(closed.writeAndFlush(late).isSuccess());
        assertEquals(0, late.refCnt());
        // A confined tensor of another thread is refused and stays the caller's.
        EmbeddedChannel ch2 = new EmbeddedChannel(new TensorOutboundHandler());
        Tensor[] other = new Tensor[1];
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                other[0] = named("x", 2, 1);
            } catch (HurrayException e) {
                throw new IllegalStateException(e);
            }
        });
        t.join();
        ChannelFuture f3 = ch2.writeAndFlush(other[0]);
        assertInstanceOf(IllegalArgumentException.class, f3.cause());
        assertTrue(other[0].isOpen());
        ch2.finishAndReleaseAll();
    }

    @Test
    void smallTensorsAreCoalesced() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new TensorOutboundHandler());
        for (int i = 0; i < 100; i++) {
            ch.write(named("t" + i, 64, i));
        }
        ch.writeAndFlush(TensorOutboundHandler.END_OF_STREAM);
        int buffers = 0;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (ByteBuf b; (b = ch.readOutbound()) != null;) {
            buffers++;
            byte[] a = new byte[b.readableBytes()];
            b.readBytes(a);
            out.write(a);
            b.release();
        }
        assertTrue(buffers <= 2, buffers + " buffers for 100 tensors of 256 bytes");
        try (Reader r = Reader.of(out.toByteArray())) {
            for (int i = 0; i < 100; i++) {
                try (Tensor t = r.read()) {
                    assertEquals(i + 63f, t.toFloatArray()[63]);
                }
            }
        }
        ch.finishAndReleaseAll();
    }

    @Test
    void inboundFiresAWholeBatchInOrderThenTheFailure() throws IOException {
        List<Tensor> ts = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            ts.add(named("t" + i, 8, i));
        }
        byte[] wire = stream(ts);
        ts.forEach(Tensor::close);
        // The stream without its end marker, then damaged bytes: every tensor the bytes complete
        // comes first, in order, then one failure.
        byte[] bad = java.util.Arrays.copyOf(wire, wire.length + 64);
        java.util.Arrays.fill(bad, wire.length - 8, bad.length, (byte) 0x5a);
        Collector c = new Collector();
        EmbeddedChannel ch = new EmbeddedChannel(new TensorInboundHandler(), c);
        ch.writeInbound(Unpooled.wrappedBuffer(bad));
        assertEquals(300, c.names.size());
        for (int i = 0; i < 300; i++) {
            assertEquals("t" + i, c.names.get(i));
            assertEquals(i + 7f, c.values.get(i)[7]);
        }
        assertInstanceOf(DecoderException.class, c.failure);
        assertInstanceOf(HurrayException.class, c.failure.getCause());
        assertFalse(ch.isOpen());
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void outboundStagesManySmallTensorsAsFewBuffers() throws IOException {
        EmbeddedChannel ch = new EmbeddedChannel(new TensorOutboundHandler());
        List<ChannelFuture> writes = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            Tensor t = named("n" + i, 16, i);
            writes.add(ch.write(t));
            assertFalse(t.isOpen(), "a copied tensor is closed at once, even while queued");
        }
        ch.writeAndFlush(TensorOutboundHandler.END_OF_STREAM);
        for (ChannelFuture f : writes) {
            assertTrue(f.isSuccess());
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int buffers = 0;
        for (ByteBuf b; (b = ch.readOutbound()) != null;) {
            buffers++;
            byte[] a = new byte[b.readableBytes()];
            b.readBytes(a);
            out.write(a);
            b.release();
        }
        // About 2,000 x 130 bytes in batches of 64 KiB.
        assertTrue(buffers <= 8, buffers + " buffers");
        try (Reader r = Reader.of(out.toByteArray())) {
            for (int i = 0; i < 2_000; i++) {
                try (Tensor t = r.read()) {
                    assertEquals("n" + i, t.descriptor().name().orElseThrow());
                    assertEquals(i + 15f, t.toFloatArray()[15]);
                }
            }
            assertNull(r.read());
        }
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void outboundAfterAQueuedBatchKeepsOrderWithLargeAndCompositeItems() throws IOException {
        EmbeddedChannel ch = new EmbeddedChannel(new TensorOutboundHandler());
        Tensor w = named("w", 3, 1);
        for (int round = 0; round < 3; round++) {
            ch.write(named("s" + round, 4, round));
            ch.write(named("big" + round, 30_000, round));
            ch.write(Composite.builder("c" + round).add("w", w));
            ch.write(named("after" + round, 2, round));
        }
        ch.writeAndFlush(TensorOutboundHandler.END_OF_STREAM);
        w.close();
        List<String> names = new ArrayList<>();
        try (Reader r = Reader.of(written(ch))) {
            for (Tensor t = r.read(); t != null; t = r.read()) {
                names.add(t.descriptor().name().orElse(""));
                t.close();
            }
        }
        List<String> want = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            want.addAll(List.of("s" + round, "big" + round, "c" + round, "w", "after" + round));
        }
        assertEquals(want, names);
        assertFalse(ch.finishAndReleaseAll());
    }

    /**
     * A channel that is never closed nor torn down (as when an event loop group shuts down with
     * its channels open: Netty then calls no handler) still frees its encoder once its stream
     * ended: the cleaner finds nothing to report when the channel is dropped.
     */
    @Test
    void endedStreamClosesItsEncoderOnAChannelNeverClosed() throws Exception {
        long before = dev.hurray.internal.Leaks.leaked();
        assertNothingLeftForTheCleaner(endedStreamOnAnOpenChannel(), before, "an encoder");
    }

    /**
     * Waits until the dropped handler {@code gone} is collected, then until the leak cleaner
     * has had time to report, and checks it reported nothing since {@code before}.
     */
    private static void assertNothingLeftForTheCleaner(java.lang.ref.WeakReference<?> gone, long before, String what)
            throws InterruptedException {
        for (int i = 0; i < 200 && gone.get() != null; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertNull(gone.get(), "the dropped channel's handler was collected");
        // The cleaner runs on its own thread once the handler is collected: give it time to report.
        for (int i = 0; i < 20; i++) {
            System.gc();
            Thread.sleep(25);
        }
        assertEquals(before, dev.hurray.internal.Leaks.leaked(), what + " was left for the cleaner");
    }

    /**
     * The inbound handler closes its decoder when the end marker arrives, so a channel that is
     * never closed (a group shut down with connections open) leaves no decoder to the cleaner.
     */
    @Test
    void endedStreamClosesItsDecoderOnAChannelNeverClosed() throws Exception {
        long before = dev.hurray.internal.Leaks.leaked();
        assertNothingLeftForTheCleaner(streamReadOnAnOpenChannel(), before, "a decoder");
    }

    /** Reads a whole stream on a channel it drops without closing; the handler's reference. */
    private static java.lang.ref.WeakReference<TensorInboundHandler> streamReadOnAnOpenChannel() throws Exception {
        List<Tensor> ts = List.of(named("a", 3, 1));
        byte[] wire = stream(ts);
        ts.forEach(Tensor::close);
        TensorInboundHandler h = new TensorInboundHandler();
        Collector c = new Collector();
        EmbeddedChannel ch = new EmbeddedChannel(h, c);
        ch.writeInbound(Unpooled.wrappedBuffer(wire));
        assertEquals(List.of("a"), c.names);
        assertEquals(TensorInboundHandler.StreamEnd.INSTANCE, c.events.get(c.events.size() - 1));
        assertNull(c.failure);
        return new java.lang.ref.WeakReference<>(h);
    }

    /** Every byte the channel wrote so far, its outbound buffers released. */
    private static byte[] written(EmbeddedChannel ch) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (ByteBuf b; (b = ch.readOutbound()) != null;) {
            byte[] a = new byte[b.readableBytes()];
            b.readBytes(a);
            out.writeBytes(a);
            b.release();
        }
        return out.toByteArray();
    }

    /** Writes a tensor and the end marker on a channel it drops without closing; the handler's reference. */
    private static java.lang.ref.WeakReference<TensorOutboundHandler> endedStreamOnAnOpenChannel() throws Exception {
        TensorOutboundHandler h = new TensorOutboundHandler();
        EmbeddedChannel ch = new EmbeddedChannel(h);
        ch.write(named("t", 4, 1));
        assertTrue(ch.writeAndFlush(TensorOutboundHandler.END_OF_STREAM).isSuccess());
        for (ByteBuf b; (b = ch.readOutbound()) != null;) {
            b.release();
        }
        return new java.lang.ref.WeakReference<>(h);
    }

    @Test
    void writesAfterTheEndOfStreamFailAndCloseTheTensor() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new TensorOutboundHandler());
        ch.write(named("a", 4, 1));
        assertTrue(ch.writeAndFlush(TensorOutboundHandler.END_OF_STREAM).isSuccess());
        Tensor late = named("late", 4, 1);
        ChannelFuture f = ch.writeAndFlush(late);
        assertEquals(Status.INVALID_STATE, ((HurrayException) f.cause()).status());
        assertFalse(late.isOpen(), "a refused tensor is still closed by the handler");
        assertTrue(ch.writeAndFlush(TensorOutboundHandler.END_OF_STREAM).isSuccess(), "a second end is a no-op");
        try (Reader r = Reader.of(written(ch))) {
            try (Tensor t = r.read()) {
                assertEquals("a", t.descriptor().name().orElseThrow());
            }
            assertNull(r.read());
        }
        assertFalse(ch.finishAndReleaseAll());
    }
}
