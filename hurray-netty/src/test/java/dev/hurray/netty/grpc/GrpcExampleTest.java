package dev.hurray.netty.grpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.hurray.Tensor;
import io.grpc.ConnectivityState;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The README's gRPC server and client, run as written there. */
class GrpcExampleTest {
    @Test
    void readmeExample() throws Exception {
        // --8<-- [start:grpc]
        MethodDescriptor<Tensor, Tensor> infer = MethodDescriptor.<Tensor, Tensor>newBuilder()
                .setType(MethodDescriptor.MethodType.UNARY)
                .setFullMethodName("demo.Model/Infer")
                .setRequestMarshaller(HurrayMarshallers.tensor())
                .setResponseMarshaller(HurrayMarshallers.tensor())
                .build();
        // The server: doubles every value. It owns the request tensor, and gRPC marshals the
        // reply inside onNext, so both are closed once onNext returns.
        ServerServiceDefinition model = ServerServiceDefinition.builder("demo.Model")
                .addMethod(infer, ServerCalls.asyncUnaryCall((request, reply) -> {
                    float[] v = request.toFloatArray();
                    request.close();
                    for (int i = 0; i < v.length; i++) {
                        v[i] *= 2;
                    }
                    try (Tensor out = Tensor.of(v, v.length)) {
                        reply.onNext(out);
                    }
                    reply.onCompleted();
                }))
                .build();
        Server server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                .addService(model).build().start();
        ManagedChannel channel = Grpc.newChannelBuilderForAddress("127.0.0.1", server.getPort(),
                InsecureChannelCredentials.create()).build();
        try (Tensor x = Tensor.of(new float[] {1, 2, 3}, 3);
                Tensor y = ClientCalls.blockingUnaryCall(channel, infer, io.grpc.CallOptions.DEFAULT, x)) {
            System.out.println(java.util.Arrays.toString(y.toFloatArray())); // [2.0, 4.0, 6.0]
            assertArrayEquals(new float[] {2, 4, 6}, y.toFloatArray());
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        // --8<-- [end:grpc]
    }

    /** The README's wait for READY, then tensors closed as soon as the call that sends them returns. */
    @Test
    void readmeWaitForReady() throws Exception {
        MethodDescriptor<Tensor, Tensor> echo = MethodDescriptor.<Tensor, Tensor>newBuilder()
                .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("demo.Echo/Echo")
                .setRequestMarshaller(HurrayMarshallers.tensor()).setResponseMarshaller(HurrayMarshallers.tensor()).build();
        Server server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                .addService(ServerServiceDefinition.builder("demo.Echo").addMethod(echo, ServerCalls.asyncUnaryCall((t, r) -> {
                    r.onNext(t);
                    t.close();
                    r.onCompleted();
                })).build()).build().start();
        // A name, resolved on the first use: without the wait the first message is queued.
        ManagedChannel channel = Grpc.newChannelBuilder("dns:///localhost:" + server.getPort(),
                InsecureChannelCredentials.create()).build();
        try {
            // --8<-- [start:ready]
            ConnectivityState s;
            while ((s = channel.getState(true)) != ConnectivityState.READY) { // true: connect now
                if (s == ConnectivityState.SHUTDOWN) throw new IllegalStateException("channel shut down");
                CountDownLatch changed = new CountDownLatch(1);
                channel.notifyWhenStateChanged(s, changed::countDown);
                changed.await(10, TimeUnit.SECONDS);
            }
            // --8<-- [end:ready]
            for (int i = 0; i < 20; i++) {
                com.google.common.util.concurrent.ListenableFuture<Tensor> back;
                try (Tensor x = Tensor.of(new float[] {i, i + 1}, 2)) {
                    back = ClientCalls.futureUnaryCall(channel.newCall(echo, io.grpc.CallOptions.DEFAULT), x);
                }
                try (Tensor y = back.get(10, TimeUnit.SECONDS)) {
                    assertArrayEquals(new float[] {i, i + 1}, y.toFloatArray());
                }
            }
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
