package dev.hurray.netty.grpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.TensorScope;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The marshallers' pooled encoders and decoders: reused, bounded, and never carrying one message's state into the next. */
class MarshallerReuseTest {
    static {
        dev.hurray.netty.LeakCheck.install();
    }

    @org.junit.jupiter.api.AfterAll
    static void noLeaks() throws InterruptedException {
        dev.hurray.netty.LeakCheck.assertNoLeaks();
    }

    static Tensor named(String name, int n, float base) throws Exception {
        Tensor t = Tensor.allocate(TensorDescriptor.builder(ElementType.FLOAT32, n).name(name).build(), TensorScope.SHARED);
        for (int i = 0; i < n; i++) {
            t.buffer(0).setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, base + i);
        }
        return t;
    }

    static byte[] wire(MethodDescriptor.Marshaller<Tensor> m, Tensor t) throws Exception {
        try (InputStream in = m.stream(t)) {
            return in.readAllBytes();
        }
    }

    @Test
    void encodersAndDecodersAreKeptBetweenMessagesAndBounded() throws Exception {
        ReaderOptions opts = ReaderOptions.defaults().withTensorScope(TensorScope.SHARED).withMaxTensorBytes(1 << 20);
        MethodDescriptor.Marshaller<Tensor> m = HurrayMarshallers.tensor(opts, HurrayMarshallers.GRPC_DEFAULT_MAX_MESSAGE_BYTES);
        for (int i = 0; i < 300; i++) {
            byte[] w;
            try (Tensor t = named("doc-" + i, 700, i)) {
                w = wire(m, t);
            }
            // Through the byte-stream path (a copy) and the message stream itself (in-process).
            try (Tensor back = m.parse(new ByteArrayInputStream(w))) {
                assertEquals("doc-" + i, back.descriptor().name().orElseThrow());
                assertEquals(i + 699f, back.toFloatArray()[699]);
            }
            try (Tensor t = named("again-" + i, 3, i); Tensor back = m.parse(m.stream(t))) {
                assertArrayEquals(new float[] {i, i + 1, i + 2}, back.toFloatArray());
            }
        }
        int idle = HurrayMarshallers.ENCODERS.size();
        assertTrue(idle >= 1 && idle <= HurrayMarshallers.Idle.MAX_IDLE, idle + " idle encoders");
        HurrayMarshallers.Idle<?> decoders = HurrayMarshallers.DECODERS.get(opts);
        assertNotNull(decoders, "decoders for these options are kept");
        assertTrue(decoders.size() >= 1 && decoders.size() <= HurrayMarshallers.Idle.MAX_IDLE);
    }

    @Test
    void aKeptDecoderForgetsTheLastMessagesFailure() throws Exception {
        MethodDescriptor.Marshaller<Tensor> m = HurrayMarshallers.tensor();
        byte[] good;
        try (Tensor t = named("x", 10, 0)) {
            good = wire(m, t);
        }
        byte[] flipped = good.clone();
        flipped[3] ^= 1;
        for (int i = 0; i < 50; i++) {
            byte[] bad = switch (i % 3) {
                case 0 -> flipped;
                case 1 -> java.util.Arrays.copyOf(good, good.length - 1 - i % 7); // truncated
                default -> java.util.Arrays.copyOf(good, 9 + i % 20); // the header and part of a frame
            };
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> m.parse(new ByteArrayInputStream(bad)));
            assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
            try (Tensor back = m.parse(new ByteArrayInputStream(good))) {
                assertEquals(9f, back.toFloatArray()[9]);
            }
        }
        // A message of two tensors for the one-tensor marshaller: refused, the next is unaffected.
        byte[] two;
        try (Tensor a = named("a", 1, 0); Tensor b = named("b", 1, 0);
                InputStream in = HurrayMarshallers.tensors().stream(List.of(a, b))) {
            two = in.readAllBytes();
        }
        assertEquals(Status.Code.INVALID_ARGUMENT, assertThrows(StatusRuntimeException.class,
                () -> m.parse(new ByteArrayInputStream(two))).getStatus().getCode());
        try (Tensor back = m.parse(new ByteArrayInputStream(good))) {
            assertEquals(0f, back.toFloatArray()[0]);
        }
    }

    /** Drains into a byte array the way gRPC's framer does (one write per array). */
    static byte[] drained(InputStream in) throws Exception {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        int n = ((io.grpc.Drainable) in).drainTo(out);
        assertEquals(out.size(), n);
        return out.toByteArray();
    }

    @Test
    void aLargeMessageGivesItsChunksBackOnceDrainedReadFedOrClosed() throws Exception {
        MethodDescriptor.Marshaller<Tensor> m = HurrayMarshallers.tensor();
        int n = 300_000; // 1.2 MB: 18 whole chunks and a tail
        byte[] reference;
        try (Tensor t = named("big", n, 1)) {
            reference = wire(m, t);
        }
        assertTrue(reference.length > 18 * HurrayMarshallers.Chunks.CHUNK_BYTES);
        for (int round = 0; round < 4; round++) {
            Tensor t = named("big", n, 1);
            InputStream in = m.stream(t);
            t.close(); // the message holds its own copy
            int held = HurrayMarshallers.Chunks.idle();
            byte[] got;
            switch (round) {
                case 0 -> got = drained(in);
                case 1 -> got = in.readAllBytes();
                case 2 -> {
                    try (Tensor back = m.parse(in)) { // the in-process transport's path
                        assertEquals(n, back.descriptor().shape().elementCount());
                        assertEquals(n + 0f, back.toFloatArray()[n - 1]);
                    }
                    got = reference;
                }
                default -> {
                    in.close(); // never drained
                    got = reference;
                }
            }
            assertArrayEquals(reference, got);
            // Every whole chunk came back (or the pool is full), and the stream reads as ended.
            assertTrue(HurrayMarshallers.Chunks.idle() >= Math.min(held + 18, HurrayMarshallers.Chunks.MAX_IDLE),
                    "round " + round + ": " + held + " -> " + HurrayMarshallers.Chunks.idle());
            assertEquals(-1, in.read());
            assertEquals(0, in.available());
            assertEquals(-1, in.read(new byte[8], 0, 8));
        }
        // A message made from chunks used before holds the new message's bytes only.
        try (Tensor t = named("other", 17_000, 5); InputStream in = m.stream(t); Tensor back = m.parse(
                new ByteArrayInputStream(drained(in)))) {
            assertEquals("other", back.descriptor().name().orElseThrow());
            assertEquals(5f + 16_999, back.toFloatArray()[16_999]);
        }
    }

    @Test
    void aTensorClosedBeforeItIsMarshalledIsRefusedWithTheReason() throws Exception {
        Tensor t = named("late", 4, 0);
        t.close();
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> HurrayMarshallers.tensor().stream(t));
        assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription().contains("closed before gRPC marshalled it")
                && e.getStatus().getDescription().contains("READY"), e.getStatus().getDescription());
        // The encoder given back serves the next message.
        try (Tensor ok = named("ok", 4, 1); Tensor back = HurrayMarshallers.tensor().parse(HurrayMarshallers.tensor().stream(ok))) {
            assertEquals(4f, back.toFloatArray()[3]);
        }
    }

    @Test
    void aRefusedMessageLeavesNoStateInTheNextEncoder() throws Exception {
        MethodDescriptor.Marshaller<List<Tensor>> small = HurrayMarshallers.tensors(
                ReaderOptions.defaults().withTensorScope(TensorScope.SHARED), 100_000);
        List<Tensor> many = new ArrayList<>();
        try {
            for (int i = 0; i < 40; i++) {
                many.add(named("m" + i, 1_000, i));
            }
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> small.stream(many));
            assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode());
            assertTrue(e.getStatus().getDescription().contains("maxInboundMessageSize"));
            List<Tensor> few = many.subList(0, 3);
            List<Tensor> back = small.parse(new ByteArrayInputStream(small.stream(few).readAllBytes()));
            try {
                assertEquals(3, back.size());
                for (int i = 0; i < 3; i++) {
                    assertEquals("m" + i, back.get(i).descriptor().name().orElseThrow());
                    assertEquals(i + 999f, back.get(i).toFloatArray()[999]);
                }
            } finally {
                back.forEach(Tensor::close);
            }
        } finally {
            many.forEach(Tensor::close);
        }
    }

    @Test
    void aListOfManySmallAndSomeLargeTensorsRoundTrips() throws Exception {
        MethodDescriptor.Marshaller<List<Tensor>> m = HurrayMarshallers.tensors();
        List<Tensor> ts = new ArrayList<>();
        try {
            for (int i = 0; i < 500; i++) {
                ts.add(named("t" + i, i % 50 == 7 ? 40_000 : 1 + i % 9, i));
            }
            List<Tensor> back = m.parse(new ByteArrayInputStream(m.stream(ts).readAllBytes()));
            try {
                assertEquals(500, back.size());
                for (int i = 0; i < 500; i++) {
                    float[] v = back.get(i).toFloatArray();
                    assertEquals("t" + i, back.get(i).descriptor().name().orElseThrow());
                    assertEquals(i % 50 == 7 ? 40_000 : 1 + i % 9, v.length);
                    assertEquals(i + v.length - 1f, v[v.length - 1]);
                }
            } finally {
                back.forEach(Tensor::close);
            }
        } finally {
            ts.forEach(Tensor::close);
        }
    }

    @Test
    void concurrentMessagesOnManyThreadsEachGetTheirOwnValues() throws Exception {
        MethodDescriptor.Marshaller<Tensor> m = HurrayMarshallers.tensor();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> jobs = new ArrayList<>();
            for (int thread = 0; thread < 32; thread++) {
                int id = thread;
                jobs.add(pool.submit(() -> {
                    for (int i = 0; i < 100; i++) {
                        String name = "w" + id + "-" + i;
                        try (Tensor t = named(name, 64 + id, id * 1000 + i);
                                Tensor back = m.parse(i % 2 == 0 ? m.stream(t) : new ByteArrayInputStream(wire(m, t)))) {
                            assertEquals(name, back.descriptor().name().orElseThrow());
                            float[] v = back.toFloatArray();
                            assertEquals(64 + id, v.length);
                            assertEquals(id * 1000 + i + 63f + id, v[v.length - 1]);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : jobs) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertTrue(HurrayMarshallers.ENCODERS.size() <= HurrayMarshallers.Idle.MAX_IDLE);
    }
}
