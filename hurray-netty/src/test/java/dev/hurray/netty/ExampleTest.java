package dev.hurray.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The README's example server and client, run as written there. */
class ExampleTest {
    @Test
    void readmeExample() throws Exception {
        // --8<-- [start:example]
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory());
        CompletableFuture<float[]> reply = new CompletableFuture<>();
        CompletableFuture<Void> done = new CompletableFuture<>(); // the server's stream ended cleanly
        try {
            // Server: doubles every tensor it gets and sends it back; ends its stream after the client's.
            Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(
                                    new TensorInboundHandler(ReaderOptions.defaults().withMaxTensorBytes(64 << 20)),
                                    new TensorOutboundHandler(),
                                    new SimpleChannelInboundHandler<TensorMessage>() {
                                        @Override
                                        protected void channelRead0(ChannelHandlerContext ctx, TensorMessage m) {
                                            float[] v = m.tensor().toFloatArray(); // m is released after this returns
                                            for (int i = 0; i < v.length; i++) {
                                                v[i] *= 2;
                                            }
                                            ctx.writeAndFlush(Tensor.of(v)); // the handler closes it once written
                                        }

                                        @Override
                                        public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
                                            if (event == TensorInboundHandler.StreamEnd.INSTANCE) {
                                                // The client's stream ended: end ours, then hang up.
                                                ctx.writeAndFlush(TensorOutboundHandler.END_OF_STREAM)
                                                        .addListener(ChannelFutureListener.CLOSE);
                                            }
                                        }
                                    });
                        }
                    }).bind("127.0.0.1", 0).sync().channel();

            // Client: sends one tensor and ends its stream, reads the answer until the server's end.
            Channel client = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new TensorInboundHandler(), new TensorOutboundHandler(),
                                    new SimpleChannelInboundHandler<TensorMessage>() {
                                        @Override
                                        public void channelActive(ChannelHandlerContext ctx) {
                                            // On the event loop: the tensor is closed there after the write.
                                            ctx.write(Tensor.of(new float[] {1, 2, 3}));
                                            ctx.writeAndFlush(TensorOutboundHandler.END_OF_STREAM);
                                        }

                                        @Override
                                        protected void channelRead0(ChannelHandlerContext ctx, TensorMessage m) {
                                            reply.complete(m.tensor().toFloatArray());
                                        }

                                        @Override
                                        public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
                                            if (event == TensorInboundHandler.StreamEnd.INSTANCE) {
                                                done.complete(null);
                                            }
                                        }

                                        @Override
                                        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                            done.completeExceptionally(cause); // e.g. the server's stream cut short
                                            ctx.close();
                                        }
                                    });
                        }
                    }).connect(server.localAddress()).sync().channel();

            System.out.println(java.util.Arrays.toString(reply.get(10, TimeUnit.SECONDS))); // [2.0, 4.0, 6.0]
            done.get(10, TimeUnit.SECONDS); // throws if the server's stream failed
            client.closeFuture().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully();
        }
        // --8<-- [end:example]
        assertArrayEquals(new float[] {2, 4, 6}, reply.get());
        assertTrue(done.isDone() && !done.isCompletedExceptionally(), "both streams ended cleanly");
    }
}
