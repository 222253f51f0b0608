package dev.hurray.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.HurrayException;
import dev.hurray.ReaderOptions;
import dev.hurray.Status;
import dev.hurray.Tensor;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The inbound handler after the end marker (its decoder closed then): bytes after it in the
 * items mode, closing or removing the handler after it, and a handler removed from its own
 * end event; Netty's leak detector at PARANOID.
 */
class HostileEndTest {
    static {
        LeakCheck.install();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        LeakCheck.assertNoLeaks();
    }

    /** Records what reaches it, in order: "meta", "t:NAME", "end", "fail", "raw" (a ByteBuf, released). */
    static class ItemCollector extends ChannelInboundHandlerAdapter {
        final List<String> order = new ArrayList<>();
        Throwable failure;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof TensorMessage m)) {
                order.add("raw");
                io.netty.util.ReferenceCountUtil.release(msg);
                return;
            }
            try {
                Tensor t = m.item() == null ? m.tensor() : m.item().tensor().orElseThrow();
                order.add("t:" + t.descriptor().name().orElse(""));
            } finally {
                m.release();
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            order.add(evt instanceof TensorInboundHandler.StreamEnd ? "end" : "meta");
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            order.add("fail");
            failure = cause;
        }
    }

    private static byte[] wire() throws Exception {
        List<Tensor> ts = List.of(TensorCodecTest.named("a", 3, 1), TensorCodecTest.named("b", 5, 2));
        byte[] w = TensorCodecTest.stream(ts);
        ts.forEach(Tensor::close);
        return w;
    }

    /** Items mode: junk in the end marker's buffer, after an empty buffer, or after a byte-at-a-time stream is CORRUPT, after the tensors (and the end event when it came first). */
    @Test
    void forItemsBytesAfterTheEndAreCorrupt() throws Exception {
        byte[] wire = wire();
        for (int mode = 0; mode < 3; mode++) {
            ItemCollector c = new ItemCollector();
            EmbeddedChannel ch = new EmbeddedChannel(TensorInboundHandler.forItems(ReaderOptions.defaults()), c);
            ByteBuf junk = Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 4});
            switch (mode) {
                case 0 -> ch.writeInbound(Unpooled.wrappedBuffer(Unpooled.wrappedBuffer(wire), junk));
                case 1 -> {
                    ch.writeInbound(Unpooled.wrappedBuffer(wire));
                    ch.writeInbound(Unpooled.EMPTY_BUFFER);
                    ch.writeInbound(junk);
                }
                default -> {
                    // One byte at a time, then junk.
                    for (byte b : wire) {
                        ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {b}));
                    }
                    ch.writeInbound(junk);
                }
            }
            assertEquals(0, junk.refCnt());
            assertInstanceOf(DecoderException.class, c.failure, "mode " + mode + " " + c.order);
            HurrayException e = (HurrayException) c.failure.getCause();
            assertEquals(Status.CORRUPT, e.status());
            assertTrue(e.getMessage().contains("4 bytes after the end-of-stream marker"), e.getMessage());
            List<String> want = mode == 0 ? List.of("meta", "t:a", "t:b", "fail") : List.of("meta", "t:a", "t:b", "end", "fail");
            assertEquals(want, c.order, "mode " + mode);
            assertFalse(ch.isOpen());
            assertFalse(ch.finishAndReleaseAll());
        }
    }

    /** Both modes: removing the handler or closing the channel after the end reports no failure (no TRUNCATED from the closed decoder). */
    @Test
    void closingOrRemovingAfterTheEndReportsNothing() throws Exception {
        byte[] wire = wire();
        for (boolean items : new boolean[] {false, true}) {
            for (int mode = 0; mode < 2; mode++) {
                ItemCollector c = new ItemCollector();
                TensorInboundHandler h = items ? TensorInboundHandler.forItems(ReaderOptions.defaults()) : new TensorInboundHandler();
                EmbeddedChannel ch = new EmbeddedChannel(h, c);
                ch.writeInbound(Unpooled.wrappedBuffer(wire));
                if (mode == 0) {
                    ch.pipeline().remove(h);
                    ch.pipeline().remove(c);
                    ch.close();
                } else {
                    ch.close();
                }
                assertNull(c.failure, c.order.toString());
                assertEquals(List.of("meta", "t:a", "t:b", "end"), c.order);
                ch.finishAndReleaseAll();
            }
        }
    }

    /** A handler after it that removes it from the pipeline when the end event arrives. */
    @Test
    void removedFromItsOwnEndEvent() throws Exception {
        byte[] wire = wire();
        ItemCollector c = new ItemCollector() {
            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                super.userEventTriggered(ctx, evt);
                if (evt instanceof TensorInboundHandler.StreamEnd) {
                    ctx.pipeline().remove(TensorInboundHandler.class);
                }
            }
        };
        EmbeddedChannel ch = new EmbeddedChannel(new TensorInboundHandler(), c);
        ByteBuf junk = Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 4});
        ch.writeInbound(Unpooled.wrappedBuffer(wire));
        ch.writeInbound(junk);
        // The junk goes past (no handler is left to judge it).
        assertEquals(List.of("meta", "t:a", "t:b", "end", "raw"), c.order);
        assertEquals(0, junk.refCnt());
        ch.finishAndReleaseAll();
    }
}
