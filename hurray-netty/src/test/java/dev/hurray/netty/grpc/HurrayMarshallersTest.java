package dev.hurray.netty.grpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.TensorScope;
import io.grpc.CallOptions;
import io.grpc.Context;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Tensor services over grpc-netty on loopback and in-process, with no protobuf. */
class HurrayMarshallersTest {
    static {
        dev.hurray.netty.LeakCheck.install();
    }

    @org.junit.jupiter.api.AfterAll
    static void noLeaks() throws InterruptedException {
        dev.hurray.netty.LeakCheck.assertNoLeaks();
    }

    static final long BIG_LIMIT = 64L << 20;

    static MethodDescriptor<Tensor, Tensor> method(String name, MethodDescriptor.MethodType type, long limit) {
        ReaderOptions opts = ReaderOptions.defaults().withTensorScope(TensorScope.SHARED);
        return MethodDescriptor.<Tensor, Tensor>newBuilder().setType(type).setFullMethodName("demo.Model/" + name)
                .setRequestMarshaller(HurrayMarshallers.tensor(opts, limit))
                .setResponseMarshaller(HurrayMarshallers.tensor(opts, limit)).build();
    }

    static final MethodDescriptor<Tensor, Tensor> PLUS_ONE = method("PlusOne", MethodDescriptor.MethodType.UNARY,
            HurrayMarshallers.GRPC_DEFAULT_MAX_MESSAGE_BYTES);
    static final MethodDescriptor<Tensor, Tensor> BIG = method("Big", MethodDescriptor.MethodType.UNARY, BIG_LIMIT);
    static final MethodDescriptor<Tensor, Tensor> BIDI = method("Stream", MethodDescriptor.MethodType.BIDI_STREAMING,
            HurrayMarshallers.GRPC_DEFAULT_MAX_MESSAGE_BYTES);
    static final MethodDescriptor<Tensor, Tensor> SLOW = method("Slow", MethodDescriptor.MethodType.UNARY,
            HurrayMarshallers.GRPC_DEFAULT_MAX_MESSAGE_BYTES);

    static Tensor plusOne(Tensor in) {
        float[] v = in.toFloatArray();
        for (int i = 0; i < v.length; i++) {
            v[i] += 1;
        }
        Tensor out = Tensor.allocate(TensorDescriptor.of(ElementType.FLOAT32, v.length), TensorScope.SHARED);
        java.lang.foreign.MemorySegment.copy(v, 0, out.buffer(0), ValueLayout.JAVA_FLOAT_UNALIGNED, 0, v.length);
        return out;
    }

    static final CountDownLatch SERVER_CANCELLED = new CountDownLatch(1);

    static ServerServiceDefinition service() {
        ServerCalls.UnaryMethod<Tensor, Tensor> unary = (req, obs) -> {
            try (req; Tensor out = plusOne(req)) {
                obs.onNext(out);
            }
            obs.onCompleted();
        };
        return ServerServiceDefinition.builder("demo.Model")
                .addMethod(PLUS_ONE, ServerCalls.asyncUnaryCall(unary))
                .addMethod(BIG, ServerCalls.asyncUnaryCall(unary))
                .addMethod(SLOW, ServerCalls.asyncUnaryCall((req, obs) -> {
                    req.close();
                    // Answers only once the client's deadline has cancelled the call's context
                    // (its listener runs on the deadline's own thread, not this call's executor).
                    CountDownLatch cancelled = new CountDownLatch(1);
                    Context.current().addListener(c -> cancelled.countDown(), Runnable::run);
                    try {
                        cancelled.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    obs.onError(Status.ABORTED.asRuntimeException());
                }))
                .addMethod(BIDI, ServerCalls.asyncBidiStreamingCall(obs -> new StreamObserver<>() {
                    @Override
                    public void onNext(Tensor t) {
                        try (t; Tensor out = plusOne(t)) {
                            obs.onNext(out);
                        }
                    }

                    @Override
                    public void onError(Throwable e) {
                        if (Status.fromThrowable(e).getCode() == Status.Code.CANCELLED) {
                            SERVER_CANCELLED.countDown();
                        }
                    }

                    @Override
                    public void onCompleted() {
                        obs.onCompleted();
                    }
                })).build();
    }

    record Setup(Server server, ManagedChannel channel) implements AutoCloseable {
        static Setup of(String transport) throws Exception {
            if (transport.equals("inprocess")) {
                String name = InProcessServerBuilder.generateName();
                Server s = InProcessServerBuilder.forName(name).addService(service()).maxInboundMessageSize((int) BIG_LIMIT)
                        .build().start();
                return new Setup(s, InProcessChannelBuilder.forName(name).maxInboundMessageSize((int) BIG_LIMIT).build());
            }
            Server s = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create()).addService(service())
                    .maxInboundMessageSize((int) BIG_LIMIT).build().start();
            return new Setup(s, Grpc.newChannelBuilderForAddress("127.0.0.1", s.getPort(), InsecureChannelCredentials.create())
                    .maxInboundMessageSize((int) BIG_LIMIT).build());
        }

        @Override
        public void close() throws InterruptedException {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    static Tensor floats(int n) {
        Tensor t = Tensor.allocate(TensorDescriptor.of(ElementType.FLOAT32, n), TensorScope.SHARED);
        for (int i = 0; i < n; i++) {
            t.buffer(0).setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, i);
        }
        return t;
    }

    @ParameterizedTest
    @ValueSource(strings = {"netty", "inprocess"})
    void unaryAndLargeTensors(String transport) throws Exception {
        try (Setup s = Setup.of(transport)) {
            for (int n : new int[] {0, 3, 100_000}) {
                try (Tensor in = floats(n);
                        Tensor out = ClientCalls.blockingUnaryCall(s.channel(), PLUS_ONE, CallOptions.DEFAULT, in)) {
                    float[] v = out.toFloatArray();
                    assertEquals(n, v.length);
                    for (int i = 0; i < n; i++) {
                        assertEquals(i + 1f, v[i]);
                    }
                }
            }
            // 5 MiB: over gRPC's default 4 MiB, refused when sent with the setting named.
            try (Tensor in = floats(5 << 18)) {
                StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                        () -> ClientCalls.blockingUnaryCall(s.channel(), PLUS_ONE, CallOptions.DEFAULT, in));
                assertTrue(e.getStatus().getCode() == Status.Code.RESOURCE_EXHAUSTED
                        || e.getStatus().getCode() == Status.Code.CANCELLED, e.toString());
                String text = e.getStatus().getDescription() + " " + e.getCause();
                assertTrue(text.contains("maxInboundMessageSize"), text);
                // With the limits raised on both sides it goes through.
                try (Tensor out = ClientCalls.blockingUnaryCall(s.channel(), BIG, CallOptions.DEFAULT, in)) {
                    assertEquals((5 << 18) - 1 + 1f, out.toFloatArray()[(5 << 18) - 1]);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"netty", "inprocess"})
    void bidiStreamingCancellationAndDeadline(String transport) throws Exception {
        try (Setup s = Setup.of(transport)) {
            // Until a channel has resolved its address, gRPC queues sent messages in a delayed
            // call and marshals them later, after onNext returned and the caller closed the
            // tensor: connect first (see the README's gRPC ownership note).
            try (Tensor warm = floats(1); Tensor back = ClientCalls.blockingUnaryCall(s.channel(), PLUS_ONE,
                    CallOptions.DEFAULT, warm)) {
                assertEquals(1f, back.toFloatArray()[0]);
            }
            List<float[]> got = new ArrayList<>();
            CompletableFuture<Void> done = new CompletableFuture<>();
            var call = s.channel().newCall(BIDI, CallOptions.DEFAULT);
            StreamObserver<Tensor> requests = ClientCalls.asyncBidiStreamingCall(call, new StreamObserver<>() {
                @Override
                public void onNext(Tensor t) {
                    try (t) {
                        synchronized (got) {
                            got.add(t.toFloatArray());
                        }
                    }
                }

                @Override
                public void onError(Throwable e) {
                    done.completeExceptionally(e);
                }

                @Override
                public void onCompleted() {
                    done.complete(null);
                }
            });
            for (int i = 0; i < 50; i++) {
                try (Tensor t = floats(i * 97)) {
                    requests.onNext(t);
                }
            }
            requests.onCompleted();
            done.get(20, TimeUnit.SECONDS);
            assertEquals(50, got.size());
            for (int i = 0; i < 50; i++) {
                assertEquals(i * 97, got.get(i).length);
                if (i > 0) {
                    assertEquals(i * 97f, got.get(i)[i * 97 - 1]);
                }
            }
            // Cancel mid-stream: the server's observer sees CANCELLED.
            var call2 = s.channel().newCall(BIDI, CallOptions.DEFAULT);
            CountDownLatch first = new CountDownLatch(1);
            StreamObserver<Tensor> r2 = ClientCalls.asyncBidiStreamingCall(call2, new StreamObserver<>() {
                @Override
                public void onNext(Tensor t) {
                    t.close();
                    first.countDown();
                }

                @Override
                public void onError(Throwable e) {
                }

                @Override
                public void onCompleted() {
                }
            });
            try (Tensor t = floats(10)) {
                r2.onNext(t);
            }
            assertTrue(first.await(10, TimeUnit.SECONDS));
            call2.cancel("test cancels", null);
            assertTrue(SERVER_CANCELLED.await(10, TimeUnit.SECONDS));
            // A deadline that passes while the server works.
            try (Tensor in = floats(4)) {
                StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> ClientCalls.blockingUnaryCall(
                        s.channel(), SLOW, CallOptions.DEFAULT.withDeadlineAfter(200, TimeUnit.MILLISECONDS), in));
                assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode());
            }
        }
    }

    @org.junit.jupiter.api.Test
    void hostileMessagesAreInvalidArgument() throws Exception {
        MethodDescriptor.Marshaller<Tensor> m = HurrayMarshallers.tensor();
        byte[] wire;
        try (Tensor t = floats(10); InputStream in = m.stream(t)) {
            wire = in.readAllBytes();
        }
        for (int cut : new int[] {0, 7, wire.length - 1}) {
            byte[] bad = java.util.Arrays.copyOf(wire, cut);
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> m.parse(new ByteArrayInputStream(bad)));
            assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
        }
        byte[] flipped = wire.clone();
        flipped[3] ^= 1;
        assertEquals(Status.Code.INVALID_ARGUMENT, assertThrows(StatusRuntimeException.class,
                () -> m.parse(new ByteArrayInputStream(flipped))).getStatus().getCode());
        try (Tensor back = m.parse(new ByteArrayInputStream(wire))) {
            assertArrayEquals(new float[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, back.toFloatArray());
        }
        // A list of tensors per message.
        try (Tensor a = floats(2); Tensor b = floats(70_000)) {
            List<Tensor> back = HurrayMarshallers.tensors().parse(HurrayMarshallers.tensors().stream(List.of(a, b)));
            assertEquals(2, back.size());
            assertEquals(69_999f, back.get(1).toFloatArray()[69_999]);
            back.forEach(Tensor::close);
        }
    }

    /** A message is one stream: bytes after its end marker fail it, through a copying stream and the transport's buffers. */
    @org.junit.jupiter.api.Test
    void aMessageWithBytesAfterItsEndIsInvalidArgument() throws Exception {
        MethodDescriptor.Marshaller<Tensor> m = HurrayMarshallers.tensor();
        MethodDescriptor.Marshaller<List<Tensor>> list = HurrayMarshallers.tensors();
        byte[] wire;
        try (Tensor t = floats(10); InputStream in = m.stream(t)) {
            wire = in.readAllBytes();
        }
        byte[] junk = java.util.Arrays.copyOf(wire, wire.length + 2);
        List<java.util.function.Supplier<InputStream>> inputs = List.of(
                () -> new ByteArrayInputStream(junk),
                () -> new Buffers(java.nio.ByteBuffer.wrap(junk)),
                () -> new Buffers(java.nio.ByteBuffer.wrap(wire), java.nio.ByteBuffer.wrap(new byte[] {9, 9})));
        for (java.util.function.Supplier<InputStream> in : inputs) {
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> m.parse(in.get()));
            assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
            assertTrue(e.getStatus().getDescription().contains("2 bytes after the end-of-stream marker"),
                    e.getStatus().getDescription());
            e = assertThrows(StatusRuntimeException.class, () -> list.parse(in.get()));
            assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
        }
        // The decoders given back after the failure serve the next clean message.
        for (InputStream in : List.of(new ByteArrayInputStream(wire), new Buffers(java.nio.ByteBuffer.wrap(wire)))) {
            try (Tensor back = m.parse(in)) {
                assertEquals(9f, back.toFloatArray()[9]);
            }
        }
    }

    /** A stream without buffers that does not know its length (available() 0) is read to its end in chunks. */
    @org.junit.jupiter.api.Test
    void aStreamOfUnknownLengthIsReadWhole() throws Exception {
        MethodDescriptor.Marshaller<List<Tensor>> list = HurrayMarshallers.tensors();
        byte[] wire;
        try (Tensor a = floats(3); Tensor b = floats(50_000); InputStream in = list.stream(List.of(a, b))) {
            wire = in.readAllBytes();
        }
        InputStream unknown = new java.io.FilterInputStream(new ByteArrayInputStream(wire)) {
            @Override
            public int available() {
                return 0;
            }
        };
        List<Tensor> back = list.parse(unknown);
        assertEquals(2, back.size());
        assertEquals(49_999f, back.get(1).toFloatArray()[49_999]);
        back.forEach(Tensor::close);
    }

    /** A transport's message as grpc-netty hands it over: its buffers (detachable, which parse must not need). */
    static final class Buffers extends InputStream implements io.grpc.HasByteBuffer, io.grpc.Detachable {
        private final java.util.ArrayDeque<java.nio.ByteBuffer> buffers = new java.util.ArrayDeque<>();

        Buffers(java.nio.ByteBuffer... bs) {
            buffers.addAll(List.of(bs));
        }

        @Override
        public boolean byteBufferSupported() {
            return true;
        }

        @Override
        public java.nio.ByteBuffer getByteBuffer() {
            java.nio.ByteBuffer b = buffers.peek();
            return b == null ? null : b.asReadOnlyBuffer();
        }

        /** The marshaller copies every byte while parse runs, so it never needs the buffers longer. */
        @Override
        public InputStream detach() {
            throw new AssertionError("parse detached the transport's buffers");
        }

        @Override
        public int available() {
            return buffers.stream().mapToInt(java.nio.ByteBuffer::remaining).sum();
        }

        @Override
        public long skip(long n) {
            long left = n;
            while (left > 0 && !buffers.isEmpty()) {
                java.nio.ByteBuffer b = buffers.peek();
                int k = (int) Math.min(left, b.remaining());
                b.position(b.position() + k);
                left -= k;
                if (!b.hasRemaining()) {
                    buffers.poll();
                }
            }
            return n - left;
        }

        @Override
        public int read() {
            while (!buffers.isEmpty()) {
                java.nio.ByteBuffer b = buffers.peek();
                if (b.hasRemaining()) {
                    return b.get() & 0xff;
                }
                buffers.poll();
            }
            return -1;
        }
    }
}
