package dev.hurray.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.HurrayException;
import dev.hurray.ReaderOptions;
import dev.hurray.Status;
import dev.hurray.Tensor;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.DecoderException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Real servers and clients over loopback, with the NIO transport and epoll where it loads. */
class LoopbackTest {
    static {
        LeakCheck.install();
    }

    record Transport(IoHandlerFactory io, Class<? extends ServerSocketChannel> server, Class<? extends SocketChannel> client) {
        static Transport of(String name) {
            if (name.equals("epoll")) {
                Assumptions.assumeTrue(Epoll.isAvailable(), () -> "epoll does not load here: " + Epoll.unavailabilityCause());
                return new Transport(EpollIoHandler.newFactory(), EpollServerSocketChannel.class, EpollSocketChannel.class);
            }
            return new Transport(NioIoHandler.newFactory(), NioServerSocketChannel.class, NioSocketChannel.class);
        }
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        LeakCheck.assertNoLeaks();
    }

    /** Checks every tensor of every connection: name "c{conn}-{i}", values base + index. */
    static final class Checker extends ChannelInboundHandlerAdapter {
        final AtomicInteger tensors;
        final ConcurrentLinkedQueue<String> errors;
        final CountDownLatch ends;
        int next;

        Checker(AtomicInteger tensors, ConcurrentLinkedQueue<String> errors, CountDownLatch ends) {
            this.tensors = tensors;
            this.errors = errors;
            this.ends = ends;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            TensorMessage m = (TensorMessage) msg;
            try {
                Tensor t = m.tensor();
                String name = t.descriptor().name().orElse("?");
                int conn = Integer.parseInt(name.substring(1, name.indexOf('-')));
                int i = Integer.parseInt(name.substring(name.indexOf('-') + 1));
                float[] v = t.toFloatArray();
                if (i != next++ || v.length != length(i)) {
                    errors.add(name + ": order or length " + v.length);
                }
                for (int k = 0; k < v.length; k++) {
                    if (v[k] != conn * 1000 + i + k) {
                        errors.add(name + "[" + k + "] = " + v[k]);
                        break;
                    }
                }
                tensors.incrementAndGet();
            } finally {
                m.release();
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt == TensorInboundHandler.StreamEnd.INSTANCE) {
                ends.countDown();
                ctx.close();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            errors.add(cause.toString());
            ctx.close();
        }
    }

    static int length(int i) {
        return i % 5 == 4 ? 20_000 : 16 + i;
    }

    /** Writes {@code count} named tensors and the end marker from the channel's event loop. */
    static final class Sender extends ChannelInboundHandlerAdapter {
        private final int conn;
        private final int count;

        Sender(int conn, int count) {
            this.conn = conn;
            this.count = count;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) throws HurrayException {
            for (int i = 0; i < count; i++) {
                Tensor t = TensorCodecTest.named("c" + conn + "-" + i, length(i), conn * 1000 + i);
                ctx.write(t);
            }
            ctx.writeAndFlush(TensorOutboundHandler.END_OF_STREAM);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"nio", "epoll"})
    void thousandConcurrentConnectionsStreamingNamedTensors(String transport) throws Exception {
        Transport tr = Transport.of(transport);
        int connections = 1000;
        int perConnection = 10;
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, tr.io());
        AtomicInteger tensors = new AtomicInteger();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        CountDownLatch ends = new CountDownLatch(connections);
        try {
            Channel server = new ServerBootstrap().group(group).channel(tr.server())
                    .option(ChannelOption.SO_BACKLOG, 2048)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new TensorInboundHandler(), new Checker(tensors, errors, ends));
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            Bootstrap client = new Bootstrap().group(group).channel(tr.client());
            for (int c = 0; c < connections; c++) {
                int conn = c;
                client.clone().handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new TensorOutboundHandler(), new Sender(conn, perConnection));
                    }
                }).connect(server.localAddress());
            }
            assertTrue(ends.await(50, TimeUnit.SECONDS), ends.getCount() + " connections unfinished; errors " + errors);
            assertEquals(List.of(), List.copyOf(errors));
            assertEquals(connections * perConnection, tensors.get());
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** A server whose inbound failures are collected. */
    private static Channel failureServer(EventLoopGroup group, Transport tr, AtomicInteger tensors,
            AtomicReference<Throwable> failure, CountDownLatch closed, ReaderOptions options) throws InterruptedException {
        return new ServerBootstrap().group(group).channel(tr.server())
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new TensorInboundHandler(options), new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                tensors.incrementAndGet();
                                ((TensorMessage) msg).release();
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                failure.compareAndSet(null, cause);
                            }

                            @Override
                            public void channelInactive(ChannelHandlerContext ctx) {
                                // After the decoder's own channelInactive, which reports a truncation.
                                closed.countDown();
                            }
                        });
                    }
                }).bind("127.0.0.1", 0).sync().channel();
    }

    @ParameterizedTest
    @ValueSource(strings = {"nio", "epoll"})
    void peerSendingOneByteAtATimeThenStoppingMidTensor(String transport) throws Exception {
        Transport tr = Transport.of(transport);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, tr.io());
        try {
            byte[] wire;
            try (Tensor a = TensorCodecTest.named("a", 8, 1); Tensor b = TensorCodecTest.named("b", 1000, 2)) {
                wire = TensorCodecTest.stream(List.of(a, b));
            }
            for (boolean stopMidTensor : new boolean[] {false, true}) {
                AtomicInteger tensors = new AtomicInteger();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                CountDownLatch closed = new CountDownLatch(1);
                Channel server = failureServer(group, tr, tensors, failure, closed, ReaderOptions.defaults());
                int len = stopMidTensor ? wire.length - 2000 : wire.length;
                try (Socket s = new Socket()) {
                    s.setTcpNoDelay(true);
                    s.connect(server.localAddress());
                    OutputStream out = s.getOutputStream();
                    for (int i = 0; i < len; i++) {
                        out.write(wire[i]);
                        out.flush();
                    }
                }
                assertTrue(closed.await(10, TimeUnit.SECONDS));
                if (stopMidTensor) {
                    assertEquals(1, tensors.get());
                    assertInstanceOf(DecoderException.class, failure.get());
                    assertEquals(Status.TRUNCATED, ((HurrayException) failure.get().getCause()).status());
                } else {
                    assertEquals(2, tensors.get());
                    assertNull(failure.get());
                }
                server.close().sync();
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"nio"})
    void hostileBytesCloseTheConnection(String transport) throws Exception {
        Transport tr = Transport.of(transport);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, tr.io());
        try {
            AtomicInteger tensors = new AtomicInteger();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch closed = new CountDownLatch(1);
            Channel server = failureServer(group, tr, tensors, failure, closed, ReaderOptions.defaults().withMaxTensorBytes(1 << 20));
            byte[] wire;
            try (Tensor a = TensorCodecTest.named("big", 1 << 19, 1)) {
                wire = TensorCodecTest.stream(List.of(a));
            }
            try (Socket s = new Socket()) {
                s.connect(server.localAddress());
                try {
                    s.getOutputStream().write(wire);
                } catch (java.net.SocketException e) {
                    // The server may close before the rest arrives (a reset or broken pipe).
                }
                // The peer keeps its side open: the server closes on the failure.
                assertTrue(closed.await(10, TimeUnit.SECONDS));
            }
            assertEquals(Status.LIMIT_EXCEEDED, ((HurrayException) failure.get().getCause()).status());
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /**
     * A slow reader: the client stops reading; the server writes 256 KiB tensors only while its
     * channel is writable, and the bytes it holds stay under the high water mark plus one tensor.
     */
    @ParameterizedTest
    @ValueSource(strings = {"nio", "epoll"})
    void slowReaderBackPressureKeepsMemoryBounded(String transport) throws Exception {
        Transport tr = Transport.of(transport);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, tr.io());
        int total = 200;
        int elems = 64 * 1024;
        AtomicLong maxPending = new AtomicLong();
        AtomicInteger written = new AtomicInteger();
        CompletableFuture<Integer> done = new CompletableFuture<>();
        AtomicInteger received = new AtomicInteger();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        CountDownLatch stalled = new CountDownLatch(1); // the server's pump stopped at an unwritable channel
        try {
            Channel server = new ServerBootstrap().group(group).channel(tr.server())
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 << 10, 1 << 20))
                    .childOption(ChannelOption.SO_SNDBUF, 64 << 10)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new TensorOutboundHandler(), new ChannelInboundHandlerAdapter() {
                                @Override
                                public void channelActive(ChannelHandlerContext ctx) throws HurrayException {
                                    pump(ctx);
                                }

                                @Override
                                public void channelWritabilityChanged(ChannelHandlerContext ctx) throws HurrayException {
                                    pump(ctx);
                                }

                                private void pump(ChannelHandlerContext ctx) throws HurrayException {
                                    while (ctx.channel().isWritable() && written.get() < total) {
                                        int i = written.getAndIncrement();
                                        ctx.writeAndFlush(TensorCodecTest.named("c0-" + i, elems, i));
                                        io.netty.channel.ChannelOutboundBuffer ob = ctx.channel().unsafe().outboundBuffer();
                                        if (ob != null) {
                                            maxPending.accumulateAndGet(ob.totalPendingWriteBytes(), Math::max);
                                        }
                                    }
                                    if (written.get() < total) {
                                        stalled.countDown();
                                    }
                                    if (written.get() == total && ctx.channel().isActive()) {
                                        written.incrementAndGet();
                                        ctx.writeAndFlush(TensorOutboundHandler.END_OF_STREAM);
                                    }
                                }
                            });
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            Channel client = new Bootstrap().group(group).channel(tr.client())
                    .option(ChannelOption.AUTO_READ, false)
                    .option(ChannelOption.SO_RCVBUF, 64 << 10)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new TensorInboundHandler(), new ChannelInboundHandlerAdapter() {
                                @Override
                                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                    TensorMessage m = (TensorMessage) msg;
                                    try {
                                        float[] v = m.tensor().toFloatArray();
                                        int i = received.getAndIncrement();
                                        if (v[0] != i || v[elems - 1] != i + elems - 1) {
                                            errors.add("tensor " + i);
                                        }
                                    } finally {
                                        m.release();
                                    }
                                }

                                @Override
                                public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                                    if (evt == TensorInboundHandler.StreamEnd.INSTANCE) {
                                        done.complete(received.get());
                                    }
                                }

                                @Override
                                public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                    done.completeExceptionally(cause);
                                }
                            });
                        }
                    }).connect(server.localAddress()).sync().channel();
            assertTrue(stalled.await(10, TimeUnit.SECONDS), "the writer was never held back (wrote " + written.get() + ")");
            int stalledAt = written.get();
            assertTrue(stalledAt < total, "the writer was held back (wrote " + stalledAt + " of " + total + ")");
            // Below the high water mark plus the tensor that crossed it.
            assertTrue(maxPending.get() <= (1 << 20) + 4L * elems + 4096, "pending " + maxPending.get());
            client.config().setAutoRead(true);
            client.read();
            assertEquals(total, done.get(30, TimeUnit.SECONDS));
            assertEquals(List.of(), List.copyOf(errors));
            // Held to the same bound through every later stall too.
            assertTrue(maxPending.get() <= (1 << 20) + 4L * elems + 4096, "pending " + maxPending.get());
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
