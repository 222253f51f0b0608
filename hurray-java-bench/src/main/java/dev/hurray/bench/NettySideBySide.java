package dev.hurray.bench;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import dev.hurray.ElementType;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.netty.TensorInboundHandler;
import dev.hurray.netty.TensorMessage;
import dev.hurray.netty.TensorOutboundHandler;
import dev.hurray.netty.grpc.HurrayMarshallers;
import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * One loopback connection, in one run: the Hurray Netty codec against raw Netty framing
 * ({@link LengthFieldBasedFrameDecoder} on {@code ByteBuf}s), and the Hurray gRPC marshaller
 * against protobuf {@code bytes} messages (a hand-made marshaller writing field 1 with
 * {@link CodedOutputStream}, no protoc), over a client-streaming call. Each contender sends
 * the same payload memory; the receiver touches the first and last value of each message and
 * releases it. Rounds alternate the contenders; figures are medians.
 *
 * <pre>
 * java -XX:+AlwaysPreTouch -Xms2g -Xmx2g --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
 *      -cp hurray-java-bench/target/benchmarks.jar dev.hurray.bench.NettySideBySide [--rounds 5] [--mib 128] \
 *      [--only netty-1KiB,netty-64KiB,netty-1MiB,netty-16MiB,grpc-3KiB,grpc-1MiB] [--hurray-only | --base-only] [--cpu]
 * </pre>
 */
public final class NettySideBySide {
    private NettySideBySide() {
    }

    public static void main(String[] args) throws Exception {
        int rounds = 5;
        long mib = 128;
        String only = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--mib" -> mib = Long.parseLong(args[++i]);
                case "--only" -> only = args[++i];
                case "--hurray-only" -> hurrayOnly = true;
                case "--base-only" -> baseOnly = true;
                case "--cpu" -> cpu = true;
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        try {
            System.out.println("| path | message | Hurray MB/s | baseline MB/s | Hurray / baseline |");
            System.out.println("|---|---:|---:|---:|---:|");
            for (int size : new int[] {1024, 64 << 10, 1 << 20, 16 << 20}) {
                if (!wanted(only, "netty-" + human(size))) {
                    continue;
                }
                long count = Math.max(64, Math.min(200_000, (mib << 20) / size));
                if (size == 1024) {
                    count = 200_000;
                }
                long n = count;
                report("Netty vs LengthFieldBasedFrameDecoder", size, rounds,
                        () -> nettyRound(group, size, n, true), () -> nettyRound(group, size, n, false));
            }
            for (int size : new int[] {3072, 1 << 20}) {
                if (!wanted(only, "grpc-" + human(size))) {
                    continue;
                }
                long n = size == 3072 ? 100_000 : Math.max(64, (mib << 20) / size);
                boolean named = size == 3072;
                report("gRPC vs protobuf bytes" + (named ? ", named" : ""), size, rounds,
                        () -> grpcRound(size, n, true, named), () -> grpcRound(size, n, false, named));
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** Runs only the Hurray contender (for profiling it alone); ratios are then not printed. */
    private static boolean hurrayOnly;
    /** Runs only the baseline (to profile it the same way); ratios are then not printed. */
    private static boolean baseOnly;
    /** Also prints CPU time per MB of payload (median) for each contender: the event loops' for the Netty rows, the whole process's for the gRPC rows. */
    private static boolean cpu;
    /** CPU seconds per MB of the last Netty round. */
    private static double lastCpu;

    /** CPU nanoseconds used so far by the Netty event loop threads. */
    private static long loopCpuNanos() {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long n = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("multiThreadIoEventLoopGroup")) {
                long c = mx.getThreadCpuTime(t.threadId());
                n += Math.max(c, 0);
            }
        }
        return n;
    }

    /** True when {@code row} ("netty-1 KiB", "grpc-3 KiB", spaces optional) is in the comma-separated {@code only}, or no filter is given. */
    private static boolean wanted(String only, String row) {
        if (only == null) {
            return true;
        }
        String r = row.replace(" ", "").toLowerCase(Locale.ROOT);
        for (String o : only.split(",")) {
            if (o.replace(" ", "").toLowerCase(Locale.ROOT).equals(r)) {
                return true;
            }
        }
        return false;
    }

    interface Round {
        /** Seconds for the round. */
        double run() throws Exception;
    }

    private static void report(String path, int size, int rounds, Round hurray, Round base) throws Exception {
        List<Double> h = new ArrayList<>();
        List<Double> b = new ArrayList<>();
        if (hurrayOnly || baseOnly) {
            List<Double> only = new ArrayList<>();
            for (int r = 0; r <= rounds; r++) {
                only.add(baseOnly ? base.run() : hurray.run());
            }
            System.out.printf(Locale.ROOT, baseOnly ? "| %s | %s | | %.0f | |%n" : "| %s | %s | %.0f | | |%n", path,
                    human(size), 1 / median(only));
            return;
        }
        hurray.run(); // warm-up
        base.run();
        List<Double> hc = new ArrayList<>();
        List<Double> bc = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            if (r % 2 == 0) {
                h.add(hurray.run());
                hc.add(lastCpu);
                b.add(base.run());
                bc.add(lastCpu);
            } else {
                b.add(base.run());
                bc.add(lastCpu);
                h.add(hurray.run());
                hc.add(lastCpu);
            }
        }
        double hm = median(h);
        double bm = median(b);
        String cpus = cpu && lastCpu > 0
                ? String.format(Locale.ROOT, " (%s CPU µs/MB: Hurray %.0f, baseline %.0f)", path.startsWith("gRPC") ? "process" : "event loop",
                        median(hc) * 1e6, median(bc) * 1e6)
                : "";
        System.out.printf(Locale.ROOT, "| %s | %s | %.0f | %.0f | **%.2f×** |%s%n", path, human(size),
                1 / hm, 1 / bm, bm / hm, cpus);
    }

    private static double median(List<Double> xs) {
        double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a[a.length / 2];
    }

    private static String human(int size) {
        return size >= 1 << 20 ? (size >> 20) + " MiB" : size >= 1024 ? (size >> 10) + " KiB" : size + " B";
    }

    /** The payload every contender sends: float values, 64-byte aligned native memory. */
    private static MemorySegment payload(int size) {
        MemorySegment s = Arena.global().allocate(size, 64);
        for (int i = 0; i < size / 4; i++) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, i);
        }
        return s;
    }

    private static final java.util.Map<Integer, MemorySegment> PAYLOADS = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * One connection moving {@code count} messages of {@code size} bytes; returns seconds per
     * MB of payload (so that 1 / result is MB/s).
     */
    private static double nettyRound(EventLoopGroup group, int size, long count, boolean hurray) throws Exception {
        MemorySegment data = PAYLOADS.computeIfAbsent(size, NettySideBySide::payload);
        TensorDescriptor desc = TensorDescriptor.of(ElementType.FLOAT32, size / 4);
        CompletableFuture<Long> done = new CompletableFuture<>();
        AtomicLong received = new AtomicLong();
        Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (hurray) {
                            ch.pipeline().addLast(new TensorInboundHandler());
                        } else {
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(Integer.MAX_VALUE, 0, 4, 0, 4));
                        }
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                float first;
                                float last;
                                if (msg instanceof TensorMessage m) {
                                    MemorySegment b = m.tensor().buffer(0);
                                    first = b.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, 0);
                                    last = b.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, b.byteSize() / 4 - 1);
                                    m.release();
                                } else {
                                    ByteBuf f = (ByteBuf) msg;
                                    first = f.getFloatLE(f.readerIndex());
                                    last = f.getFloatLE(f.writerIndex() - 4);
                                    f.release();
                                }
                                if (first != 0 || last != size / 4 - 1) {
                                    done.completeExceptionally(new AssertionError("wrong values"));
                                }
                                if (received.incrementAndGet() == count) {
                                    done.complete(System.nanoTime());
                                }
                            }
                        });
                    }
                }).bind("127.0.0.1", 0).sync().channel();
        long[] start = new long[1];
        long cpu0 = cpu ? loopCpuNanos() : 0;
        Channel client = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (hurray) {
                            ch.pipeline().addLast(new TensorOutboundHandler());
                        }
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            long sent;

                            @Override
                            public void channelActive(ChannelHandlerContext ctx) {
                                start[0] = System.nanoTime();
                                pump(ctx);
                            }

                            @Override
                            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                                pump(ctx);
                            }

                            private void pump(ChannelHandlerContext ctx) {
                                int unflushed = 0;
                                while (ctx.channel().isWritable() && sent < count) {
                                    if (hurray) {
                                        ctx.write(Tensor.wrap(data, desc));
                                    } else {
                                        ctx.write(Unpooled.wrappedBuffer(ctx.alloc().directBuffer(4).writeInt(size),
                                                Unpooled.wrappedBuffer(data.asByteBuffer())));
                                    }
                                    sent++;
                                    if (++unflushed == 64) {
                                        ctx.flush();
                                        unflushed = 0;
                                    }
                                }
                                if (sent == count && hurray) {
                                    sent++;
                                    ctx.write(TensorOutboundHandler.END_OF_STREAM);
                                }
                                ctx.flush();
                            }
                        });
                    }
                }).connect(server.localAddress()).sync().channel();
        long end = done.get(120, TimeUnit.SECONDS);
        client.close().sync();
        server.close().sync();
        lastCpu = cpu ? (loopCpuNanos() - cpu0) / 1e9 / (count * (double) size / 1e6) : 0;
        return (end - start[0]) / 1e9 / (count * (double) size / 1e6);
    }

    // ------------------------------------------------------------------ gRPC

    /** A protobuf message {@code bytes data = 1; string name = 2;} marshalled by hand. */
    record Bytes(ByteString data, String name) {
    }

    static final MethodDescriptor.Marshaller<Bytes> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(Bytes v) {
            int n = CodedOutputStream.computeBytesSize(1, v.data())
                    + (v.name() == null ? 0 : CodedOutputStream.computeStringSize(2, v.name()));
            byte[] out = new byte[n];
            CodedOutputStream c = CodedOutputStream.newInstance(out);
            try {
                c.writeBytes(1, v.data());
                if (v.name() != null) {
                    c.writeString(2, v.name());
                }
                c.checkNoSpaceLeft();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return new ByteArrayInputStream(out);
        }

        @Override
        public Bytes parse(InputStream in) {
            try {
                CodedInputStream c = CodedInputStream.newInstance(in);
                c.setSizeLimit(Integer.MAX_VALUE);
                ByteString data = ByteString.EMPTY;
                String name = null;
                for (int tag; (tag = c.readTag()) != 0;) {
                    switch (WireFormat.getTagFieldNumber(tag)) {
                        case 1 -> data = c.readBytes();
                        case 2 -> name = c.readString();
                        default -> c.skipField(tag);
                    }
                }
                return new Bytes(data, name);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    private static <T> MethodDescriptor<T, T> method(String name, MethodDescriptor.Marshaller<T> m) {
        return MethodDescriptor.<T, T>newBuilder().setType(MethodDescriptor.MethodType.CLIENT_STREAMING)
                .setFullMethodName("bench.Sink/" + name).setRequestMarshaller(m).setResponseMarshaller(m).build();
    }

    private static final MethodDescriptor<Tensor, Tensor> TENSORS = method("Tensors", HurrayMarshallers.tensor());
    private static final MethodDescriptor<Bytes, Bytes> PROTOS = method("Protos", BYTES);
    private static Server grpcServer;
    private static ManagedChannel grpcChannel;

    private static void startGrpc() throws IOException {
        if (grpcServer != null) {
            return;
        }
        ServerServiceDefinition svc = ServerServiceDefinition.builder("bench.Sink")
                .addMethod(TENSORS, ServerCalls.asyncClientStreamingCall(obs -> new Counting<>(obs, t -> {
                    MemorySegment b = t.buffer(0);
                    float last = b.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, b.byteSize() / 4 - 1);
                    t.close();
                    return last;
                }, () -> Tensor.scalar(0f))))
                .addMethod(PROTOS, ServerCalls.asyncClientStreamingCall(obs -> new Counting<>(obs,
                        m -> m.data().asReadOnlyByteBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN)
                                .getFloat(m.data().size() - 4),
                        () -> new Bytes(ByteString.EMPTY, null))))
                .build();
        grpcServer = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create()).addService(svc).build().start();
        grpcChannel = Grpc.newChannelBuilderForAddress("127.0.0.1", grpcServer.getPort(),
                InsecureChannelCredentials.create()).build();
    }

    /** Touches each message, answers once at the end. */
    static final class Counting<T> implements StreamObserver<T> {
        private final StreamObserver<T> out;
        private final java.util.function.ToDoubleFunction<T> touch;
        private final Supplier<T> reply;

        Counting(StreamObserver<T> out, java.util.function.ToDoubleFunction<T> touch, Supplier<T> reply) {
            this.out = out;
            this.touch = touch;
            this.reply = reply;
        }

        @Override
        public void onNext(T v) {
            touch.applyAsDouble(v);
        }

        @Override
        public void onError(Throwable t) {
        }

        @Override
        public void onCompleted() {
            T r = reply.get();
            out.onNext(r);
            out.onCompleted();
            if (r instanceof Tensor t) {
                t.close();
            }
        }
    }

    private static double grpcRound(int size, long count, boolean hurray, boolean named) throws Exception {
        startGrpc();
        lastCpu = 0;
        MemorySegment data = PAYLOADS.computeIfAbsent(size, NettySideBySide::payload);
        float[] floats = data.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
        CompletableFuture<Void> done = new CompletableFuture<>();
        long cpu0 = processCpuNanos();
        long start = System.nanoTime();
        if (hurray) {
            TensorDescriptor plain = TensorDescriptor.of(ElementType.FLOAT32, size / 4);
            ClientCalls.asyncClientStreamingCall(grpcChannel.newCall(TENSORS, CallOptions.DEFAULT),
                    new Pump<Tensor>(count, done, i -> {
                        // What a user writes: a descriptor per tensor when named, the floats from the heap.
                        TensorDescriptor d = named
                                ? TensorDescriptor.builder(ElementType.FLOAT32, size / 4).name("doc-" + i).build()
                                : plain;
                        return Tensor.copyOf(d, MemorySegment.ofArray(floats));
                    }, Tensor::close));
        } else {
            ClientCalls.asyncClientStreamingCall(grpcChannel.newCall(PROTOS, CallOptions.DEFAULT),
                    new Pump<Bytes>(count, done, i -> {
                        java.nio.ByteBuffer bb = java.nio.ByteBuffer.allocate(size).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                        bb.asFloatBuffer().put(floats);
                        return new Bytes(ByteString.copyFrom(bb), named ? "doc-" + i : null);
                    }, m -> { }));
        }
        done.get(120, TimeUnit.SECONDS);
        double mb = count * (double) size / 1e6;
        lastCpu = (processCpuNanos() - cpu0) / 1e9 / mb;
        return (System.nanoTime() - start) / 1e9 / mb;
    }

    /**
     * CPU nanoseconds the whole process used so far: gRPC's work spreads over its event loops,
     * its executor threads and the garbage collector (the baseline's arrays), so the gRPC rows
     * count them all.
     */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    interface Make<T> {
        T make(long i) throws Exception;
    }

    /** Sends {@code count} messages while the call is ready. */
    static final class Pump<T> implements ClientResponseObserver<T, T> {
        private final long count;
        private final CompletableFuture<Void> done;
        private final Make<T> make;
        private final java.util.function.Consumer<T> after;
        private long sent;

        Pump(long count, CompletableFuture<Void> done, Make<T> make, java.util.function.Consumer<T> after) {
            this.count = count;
            this.done = done;
            this.make = make;
            this.after = after;
        }

        @Override
        public void beforeStart(ClientCallStreamObserver<T> req) {
            req.setOnReadyHandler(() -> {
                try {
                    while (req.isReady() && sent < count) {
                        T m = make.make(sent++);
                        req.onNext(m);
                        after.accept(m);
                    }
                    if (sent == count) {
                        sent++;
                        req.onCompleted();
                    }
                } catch (Exception e) {
                    done.completeExceptionally(e);
                }
            });
        }

        @Override
        public void onNext(T value) {
            after.accept(value);
        }

        @Override
        public void onError(Throwable t) {
            done.completeExceptionally(t);
        }

        @Override
        public void onCompleted() {
            done.complete(null);
        }
    }
}
