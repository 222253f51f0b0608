package dev.hurray.netty.grpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.hurray.ElementType;
import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.TensorScope;
import io.grpc.CallOptions;
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
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Hostile use of the gRPC marshallers: message streams misused (closed, drained or read twice,
 * read after their chunks went back to the pool), messages at the chunk and gather sizes, many
 * threads sharing the chunk pool, transport streams whose buffers and lengths lie, damaged
 * messages, and the in-process transport with tensors closed as soon as they are sent. Every
 * value of every message is checked: no message may show another's bytes.
 */
class HostileMarshallerTest {
    static {
        dev.hurray.netty.LeakCheck.install();
    }

    @org.junit.jupiter.api.AfterAll
    static void noLeaks() throws InterruptedException {
        dev.hurray.netty.LeakCheck.assertNoLeaks();
    }

    static final int CHUNK = HurrayMarshallers.Chunks.CHUNK_BYTES;

    /** The byte at {@code i} of the payload of message {@code seed}: differs between messages at most places. */
    static byte pattern(long seed, int i) {
        long x = seed * 0x9E3779B97F4A7C15L + i * 0xBF58476D1CE4E5B9L;
        return (byte) (x ^ (x >>> 29) ^ (x >>> 47));
    }

    static byte[] expected(long seed, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = pattern(seed, i);
        }
        return b;
    }

    static Tensor bytes(String name, long seed, int n) {
        return Tensor.of(name, expected(seed, n), n);
    }


    /** Fails unless {@code t} is message {@code seed}'s tensor, every byte. */
    static void check(Tensor t, String name, long seed, int n) {
        assertEquals(name, t.descriptor().name().orElseThrow());
        assertEquals(ElementType.INT8, t.descriptor().elementType());
        assertEquals(n, t.descriptor().shape().elementCount());
        byte[] got = n == 0 ? new byte[0] : t.buffer(0).asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
        byte[] want = expected(seed, n);
        if (!Arrays.equals(want, got)) {
            fail(name + ": byte " + Arrays.mismatch(want, got) + " of " + n + " differs (another message's bytes?)");
        }
    }

    static final MethodDescriptor.Marshaller<Tensor> ONE = HurrayMarshallers.tensor();
    static final MethodDescriptor.Marshaller<List<Tensor>> LIST = HurrayMarshallers.tensors();

    static byte[] wire(String name, long seed, int n) throws Exception {
        try (Tensor t = bytes(name, seed, n); InputStream in = ONE.stream(t)) {
            return in.readAllBytes();
        }
    }

    static byte[] drained(InputStream in) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int n = ((io.grpc.Drainable) in).drainTo(out);
        assertEquals(out.size(), n);
        return out.toByteArray();
    }

    /** Takes every idle chunk and fails if the pool held one array twice (two messages would then share it); gives them back. */
    static void assertPoolHoldsDistinctChunks() {
        List<byte[]> all = new ArrayList<>();
        Set<byte[]> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (int i = HurrayMarshallers.Chunks.idle(); i > 0; i--) {
            byte[] c = HurrayMarshallers.Chunks.take();
            assertEquals(CHUNK, c.length);
            assertTrue(seen.add(c), "the chunk pool holds one array twice");
            all.add(c);
        }
        all.forEach(HurrayMarshallers.Chunks::give);
    }

    /** Two threads closing one large message stream at the same moment give each chunk back once. */
    @org.junit.jupiter.api.Test
    void racingClosesOfOneStreamGiveEachChunkBackOnce() throws Exception {
        MethodDescriptor.Marshaller<Tensor> m = HurrayMarshallers.tensor();
        java.util.concurrent.ExecutorService two = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 200; round++) {
                InputStream in;
                try (Tensor t = bytes("race", round, 5 * CHUNK)) {
                    in = m.stream(t);
                }
                java.util.concurrent.CyclicBarrier go = new java.util.concurrent.CyclicBarrier(2);
                java.util.concurrent.Callable<Void> close = () -> {
                    go.await();
                    in.close();
                    return null;
                };
                var a = two.submit(close);
                var b = two.submit(close);
                a.get();
                b.get();
                assertPoolHoldsDistinctChunks();
            }
        } finally {
            two.shutdownNow();
        }
    }

    /** A message's chunks, as the stream holds them (empty once given back). */
    @SuppressWarnings("unchecked")
    static List<byte[]> partsOf(InputStream in) throws Exception {
        var f = HurrayMarshallers.PartsStream.class.getDeclaredField("parts");
        f.setAccessible(true);
        return (List<byte[]>) f.get(in);
    }

    static void assertEnded(InputStream in) throws Exception {
        assertEquals(-1, in.read());
        assertEquals(-1, in.read(new byte[10], 0, 10));
        assertEquals(0, in.available());
        assertEquals(0, in.skip(100));
        assertEquals(0, drained(in).length);
        assertEquals(0, in.readAllBytes().length);
        assertTrue(partsOf(in).isEmpty(), "an ended stream holds no chunk");
    }

    /**
     * Every misuse of a large message stream (close twice, read after close or drain, drain
     * twice, read partly then close, parse after release) leaves it holding nothing, and the
     * next messages, built from the same chunks, hold their own bytes only, even when the old
     * stream is used again afterwards.
     */
    @Test
    void aMisusedMessageStreamNeverGivesOrShowsAChunkTwice() throws Exception {
        int n = 5 * CHUNK + 777;
        byte[] reference = wire("big", 1, n);
        List<InputStream> old = new ArrayList<>();
        for (int misuse = 0; misuse < 8; misuse++) {
            InputStream in;
            try (Tensor t = bytes("big", 1, n)) {
                in = ONE.stream(t);
            }
            assertEquals(reference.length, in.available());
            switch (misuse) {
                case 0 -> {
                    in.close();
                    in.close();
                }
                case 1 -> {
                    assertArrayEquals(reference, drained(in));
                    assertEquals(0, drained(in).length);
                    in.close();
                }
                case 2 -> {
                    byte[] head = in.readNBytes(CHUNK + 5);
                    assertArrayEquals(Arrays.copyOf(reference, CHUNK + 5), head);
                    in.close();
                }
                case 3 -> {
                    byte[] head = in.readNBytes(3);
                    byte[] rest = drained(in);
                    assertArrayEquals(reference, concat(head, rest));
                }
                case 4 -> {
                    assertArrayEquals(reference, in.readAllBytes());
                    in.close();
                    in.close();
                }
                case 5 -> {
                    try (Tensor back = ONE.parse(in)) {
                        check(back, "big", 1, n);
                    }
                    // Fed already: a second parse of the same stream sees nothing, not stale bytes.
                    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> ONE.parse(in));
                    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
                }
                case 6 -> {
                    in.close();
                    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> ONE.parse(in));
                    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
                }
                default -> {
                    // One byte at a time to the end (read() does not give chunks back itself).
                    ByteArrayOutputStream b = new ByteArrayOutputStream();
                    for (int c; (c = in.read()) >= 0; ) {
                        b.write(c);
                    }
                    assertArrayEquals(reference, b.toByteArray());
                }
            }
            assertEnded(in);
            old.add(in);
            assertPoolHoldsDistinctChunks();
            // A new message takes the chunks just given back; the old streams, used again, must
            // not give them back a second time nor read them.
            long seed = 100 + misuse;
            try (Tensor t = bytes("next", seed, n); InputStream next = ONE.stream(t)) {
                for (InputStream o : old) {
                    o.close();
                    assertEnded(o);
                }
                assertPoolHoldsDistinctChunks();
                // Messages made while `next` holds its chunks use others.
                try (Tensor u = bytes("third", seed + 1, n); InputStream third = ONE.stream(u)) {
                    Set<byte[]> mine = Collections.newSetFromMap(new IdentityHashMap<>());
                    mine.addAll(partsOf(next));
                    for (byte[] c : partsOf(third)) {
                        assertTrue(!mine.contains(c), "two live messages share a chunk");
                    }
                    try (Tensor back = ONE.parse(new ByteArrayInputStream(drained(third)))) {
                        check(back, "third", seed + 1, n);
                    }
                }
                try (Tensor back = ONE.parse(next)) {
                    check(back, "next", seed, n);
                }
            }
        }
        assertPoolHoldsDistinctChunks();
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    record Sized(String name, int n) {
    }

    /** The name and payload length whose one-tensor message is exactly {@code target} bytes long. */
    static Sized sizedFor(int target) throws Exception {
        for (int extra = 0; extra < 80; extra++) {
            String name = "s" + "x".repeat(extra);
            int n = Math.max(0, target - 300);
            for (int tries = 0; tries < 8 && n >= 0; tries++) {
                int len = wire(name, 0, n).length;
                if (len == target) {
                    return new Sized(name, n);
                }
                n += target - len;
            }
        }
        throw new AssertionError("no message of exactly " + target + " bytes");
    }

    /** Messages exactly at, one under and one over the chunk size and its multiples, through every way in and out. */
    @Test
    void messagesAtChunkBoundariesRoundTripEveryWay() throws Exception {
        List<Integer> targets = new ArrayList<>();
        for (int k : new int[] {1, 2, 3, 16, 17}) {
            for (int d = -1; d <= 1; d++) {
                targets.add(k * CHUNK + d);
            }
        }
        long seed = 7;
        for (int target : targets) {
            Sized s = sizedFor(target);
            for (int way = 0; way < 5; way++) {
                seed++;
                InputStream in;
                try (Tensor t = bytes(s.name(), seed, s.n())) {
                    in = ONE.stream(t);
                }
                assertEquals(target, in.available(), "message length");
                Tensor back = switch (way) {
                    case 0 -> ONE.parse(in);
                    case 1 -> ONE.parse(new ByteArrayInputStream(drained(in)));
                    case 2 -> ONE.parse(new ByteArrayInputStream(in.readAllBytes()));
                    case 3 -> ONE.parse(buffersOf(drained(in), new Random(seed)));
                    default -> {
                        byte[] one = new byte[target];
                        for (int i = 0; i < target; i++) {
                            one[i] = (byte) in.read();
                        }
                        assertEquals(-1, in.read());
                        yield ONE.parse(new ByteArrayInputStream(one));
                    }
                };
                try (back) {
                    check(back, s.name(), seed, s.n());
                }
                assertEnded(in);
            }
        }
        assertPoolHoldsDistinctChunks();
    }

    /** The message cut into transport buffers of random sizes, as grpc-netty's frames. */
    static InputStream buffersOf(byte[] wire, Random r) {
        List<ByteBuffer> bs = new ArrayList<>();
        for (int at = 0; at < wire.length; ) {
            int k = Math.min(wire.length - at, 1 + r.nextInt(r.nextBoolean() ? 100 : 3 * CHUNK));
            bs.add(ByteBuffer.wrap(wire, at, k).slice());
            at += k;
        }
        return new HurrayMarshallersTest.Buffers(bs.toArray(ByteBuffer[]::new));
    }

    /**
     * Lists whose small tensors add up to around the 1 MiB gathered before a copy out, with
     * tensors around the encoder's 64 KiB copy limit among them: every tensor comes back.
     */
    @Test
    void listsCrossingTheGatherLimitRoundTrip() throws Exception {
        Random r = new Random(36);
        int[] near = {CHUNK - 65, CHUNK - 64, CHUNK - 1, CHUNK, CHUNK + 1, (1 << 20) - 64, (1 << 20) + 1, 0, 1, 63};
        for (int round = 0; round < 24; round++) {
            List<Tensor> ts = new ArrayList<>();
            List<Integer> sizes = new ArrayList<>();
            long total = 0;
            while (total < (round % 2 == 0 ? (1 << 20) + 200_000 : 3 << 20)) {
                int n = r.nextInt(3) == 0 ? near[r.nextInt(near.length)] : r.nextInt(round % 3 == 0 ? 2_000 : 70_000);
                sizes.add(n);
                total += n + 200;
            }
            try {
                for (int i = 0; i < sizes.size(); i++) {
                    ts.add(bytes("t" + i, round * 1000L + i, sizes.get(i)));
                }
                InputStream in = LIST.stream(ts);
                List<Tensor> back = switch (round % 3) {
                    case 0 -> LIST.parse(in);
                    case 1 -> LIST.parse(buffersOf(drained(in), r));
                    default -> LIST.parse(new ByteArrayInputStream(in.readAllBytes()));
                };
                try {
                    assertEquals(sizes.size(), back.size());
                    for (int i = 0; i < sizes.size(); i++) {
                        check(back.get(i), "t" + i, round * 1000L + i, sizes.get(i));
                    }
                } finally {
                    back.forEach(Tensor::close);
                }
                assertEnded(in);
            } finally {
                ts.forEach(Tensor::close);
            }
        }
        assertPoolHoldsDistinctChunks();
    }

    /**
     * Many threads making, misusing and parsing large messages at once, sharing the chunk
     * pool: each message holds its own bytes, every byte checked.
     */
    @Test
    void concurrentLargeMessagesNeverShowAnotherMessagesBytes() throws Exception {
        int threads = 8;
        int perThread = Integer.getInteger("hurray.hostile.messages", 400);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> jobs = new ArrayList<>();
            for (int thread = 0; thread < threads; thread++) {
                int id = thread;
                jobs.add(pool.submit(() -> {
                    Random r = new Random(id);
                    for (int i = 0; i < perThread; i++) {
                        long seed = id * 1_000_000L + i;
                        int n = switch (i % 4) {
                            case 0 -> CHUNK - 200 + r.nextInt(400);
                            case 1 -> 2 * CHUNK + r.nextInt(CHUNK);
                            case 2 -> r.nextInt(6 * CHUNK);
                            default -> 64 + r.nextInt(1000);
                        };
                        String name = "w" + id + "-" + i;
                        InputStream in;
                        try (Tensor t = bytes(name, seed, n)) {
                            in = ONE.stream(t);
                        }
                        Tensor back = switch (r.nextInt(5)) {
                            case 0 -> ONE.parse(in);
                            case 1 -> ONE.parse(new ByteArrayInputStream(drained(in)));
                            case 2 -> ONE.parse(buffersOf(in.readAllBytes(), r));
                            case 3 -> {
                                byte[] head = in.readNBytes(r.nextInt(CHUNK + 10));
                                byte[] rest = drained(in);
                                yield ONE.parse(new ByteArrayInputStream(concat(head, rest)));
                            }
                            default -> {
                                // Given back early, then used again after other threads took its chunks.
                                byte[] all = in.readAllBytes();
                                in.close();
                                Thread.yield();
                                assertEnded(in);
                                yield ONE.parse(new ByteArrayInputStream(all));
                            }
                        };
                        try (back) {
                            check(back, name, seed, n);
                        }
                        in.close();
                    }
                    return null;
                }));
            }
            for (Future<?> f : jobs) {
                f.get(300, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertTrue(HurrayMarshallers.Chunks.idle() <= HurrayMarshallers.Chunks.MAX_IDLE);
        assertPoolHoldsDistinctChunks();
    }

    /** A transport stream with buffers whose lengths, buffers and skips misbehave as told. */
    static class Lying extends InputStream implements io.grpc.HasByteBuffer {
        final byte[] data;
        int pos;
        final boolean emptyBuffers;
        final int bufferExtra;
        final int availableDelta;
        final boolean skipNothing;
        int calls;

        Lying(byte[] data, boolean emptyBuffers, int bufferExtra, int availableDelta, boolean skipNothing) {
            this.data = data;
            this.emptyBuffers = emptyBuffers;
            this.bufferExtra = bufferExtra;
            this.availableDelta = availableDelta;
            this.skipNothing = skipNothing;
        }

        @Override
        public boolean byteBufferSupported() {
            return true;
        }

        @Override
        public ByteBuffer getByteBuffer() {
            if (emptyBuffers && calls++ % 2 == 0) {
                return ByteBuffer.allocate(0);
            }
            if (pos >= data.length && bufferExtra == 0) {
                return null;
            }
            int k = Math.min(data.length - pos, 1000);
            // bufferExtra > 0: a buffer reaching past the message (its last bytes, then junk).
            byte[] b = Arrays.copyOfRange(data, pos, pos + k + bufferExtra);
            return ByteBuffer.wrap(b).asReadOnlyBuffer();
        }

        @Override
        public int available() {
            return Math.max(0, data.length - pos + availableDelta);
        }

        @Override
        public long skip(long n) {
            if (skipNothing) {
                return 0;
            }
            int k = (int) Math.min(n, data.length - pos);
            pos += k;
            return k;
        }

        @Override
        public int read() {
            return pos < data.length ? data[pos++] & 0xff : -1;
        }
    }

    /**
     * Transport streams that lie (empty buffers while bytes remain, buffers larger than what is
     * left, available() too high or too low, skip that skips nothing): parse ends, within a
     * few seconds, with the message's tensor or with INVALID_ARGUMENT or INTERNAL; it never
     * hangs and never returns other bytes.
     */
    @Test
    void lyingTransportStreamsEndWithTheTensorOrAnError() throws Exception {
        int n = 3 * CHUNK + 5;
        byte[] w = wire("lie", 3, n);
        byte[] small = wire("lie", 3, 10);
        for (byte[] data : List.of(w, small)) {
            int len = data == w ? n : 10;
            for (boolean empty : new boolean[] {false, true}) {
                for (int extra : new int[] {0, 7}) {
                    for (int delta : new int[] {0, -data.length, -1, 1, 1000}) {
                        for (boolean skipNothing : new boolean[] {false, true}) {
                            Lying in = new Lying(data, empty, extra, delta, skipNothing);
                            String what = "empty=" + empty + " extra=" + extra + " delta=" + delta + " skip0="
                                    + skipNothing + " len=" + data.length;
                            assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
                                try (Tensor back = ONE.parse(in)) {
                                    check(back, "lie", 3, len);
                                } catch (StatusRuntimeException e) {
                                    Status.Code c = e.getStatus().getCode();
                                    assertTrue(c == Status.Code.INVALID_ARGUMENT || c == Status.Code.INTERNAL, what + ": " + e);
                                }
                            }, what);
                        }
                    }
                }
            }
        }
        // Honest streams with empty buffers among the real ones (as a zero-length frame would
        // leave) parse.
        for (int emptyAt = 0; emptyAt < 4; emptyAt++) {
            List<ByteBuffer> bs = new ArrayList<>();
            for (int at = 0, i = 0; at < w.length; i++) {
                if (i == emptyAt) {
                    bs.add(ByteBuffer.allocate(0));
                }
                int k = Math.min(w.length - at, 40_000);
                bs.add(ByteBuffer.wrap(w, at, k).slice());
                at += k;
            }
            InputStream in = new HurrayMarshallersTest.Buffers(bs.toArray(ByteBuffer[]::new));
            assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
                try (Tensor back = ONE.parse(in)) {
                    check(back, "lie", 3, n);
                }
            }, "an empty buffer at " + emptyAt);
        }
    }

    /**
     * Damaged messages through every way in: cut at every length, a byte flipped anywhere,
     * bytes after the end: INVALID_ARGUMENT (or, for a flipped payload byte the stream cannot
     * detect without payload checksums, a tensor of the right shape); the marshaller serves
     * the next good message.
     */
    @Test
    void damagedMessagesAreInvalidArgumentThroughEveryWayIn() throws Exception {
        byte[] w = wire("d", 9, 2 * CHUNK + 3);
        byte[] s = wire("d", 9, 40);
        Random r = new Random(9);
        for (byte[] good : List.of(s, w)) {
            int n = good == s ? 40 : 2 * CHUNK + 3;
            List<byte[]> bad = new ArrayList<>();
            int step = good == s ? 1 : 997;
            for (int cut = 0; cut < good.length; cut += step) {
                bad.add(Arrays.copyOf(good, cut));
            }
            bad.add(Arrays.copyOf(good, good.length - 1));
            bad.add(Arrays.copyOf(good, good.length + 1));
            bad.add(concat(good, good));
            for (byte[] b : bad) {
                for (int way = 0; way < 3; way++) {
                    InputStream in = way == 0 ? new ByteArrayInputStream(b)
                            : way == 1 ? buffersOf(b, r) : new Lying(b, true, 0, 0, false);
                    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> ONE.parse(in),
                            b.length + " of " + good.length + " bytes");
                    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.toString());
                }
            }
            int flips = good == s ? good.length : 400;
            for (int i = 0; i < flips; i++) {
                byte[] b = good.clone();
                int at = good == s ? i : r.nextInt(b.length);
                b[at] ^= (byte) (1 << r.nextInt(8));
                InputStream in = i % 2 == 0 ? new ByteArrayInputStream(b) : buffersOf(b, r);
                try (Tensor back = ONE.parse(in)) {
                    assertEquals(n, back.descriptor().shape().elementCount(), "a flip at " + at);
                } catch (StatusRuntimeException e) {
                    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.toString());
                }
            }
            try (Tensor back = ONE.parse(buffersOf(good, r))) {
                check(back, "d", 9, n);
            }
        }
    }

    /** A limit no message fits is refused when the marshaller is made, not at every send. */
    @Test
    void aLimitNoMessageFitsIsRefusedUpFront() throws Exception {
        ReaderOptions o = ReaderOptions.defaults().withTensorScope(TensorScope.SHARED);
        for (long limit : new long[] {0, -1, Long.MIN_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HurrayMarshallers.tensor(o, limit));
            assertTrue(e.getMessage().contains("maxMessageBytes " + limit), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> HurrayMarshallers.tensors(o, limit));
        }
        // The smallest limit a message fits, and one byte under it.
        byte[] w = wire("fit", 1, 10);
        try (Tensor t = bytes("fit", 1, 10)) {
            try (InputStream in = HurrayMarshallers.tensor(o, w.length).stream(t)) {
                assertArrayEquals(w, in.readAllBytes());
            }
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> HurrayMarshallers.tensor(o, w.length - 1).stream(t));
            assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode());
        }
        // A list holding one tensor several times, large and small, sends each copy.
        try (Tensor big = bytes("same", 2, 3 * CHUNK + 1); Tensor small = bytes("small", 3, 5)) {
            List<Tensor> back = LIST.parse(LIST.stream(List.of(big, small, big, small, big)));
            try {
                assertEquals(5, back.size());
                for (int i = 0; i < 5; i++) {
                    if (i % 2 == 0) {
                        check(back.get(i), "same", 2, 3 * CHUNK + 1);
                    } else {
                        check(back.get(i), "small", 3, 5);
                    }
                }
            } finally {
                back.forEach(Tensor::close);
            }
        }
    }

    static final MethodDescriptor<Tensor, Tensor> ECHO = MethodDescriptor.<Tensor, Tensor>newBuilder()
            .setType(MethodDescriptor.MethodType.BIDI_STREAMING).setFullMethodName("hostile.Echo/Echo")
            .setRequestMarshaller(HurrayMarshallers.tensor(ReaderOptions.defaults().withTensorScope(TensorScope.SHARED),
                    64L << 20))
            .setResponseMarshaller(HurrayMarshallers.tensor(ReaderOptions.defaults().withTensorScope(TensorScope.SHARED),
                    64L << 20))
            .build();

    /** Echoes each tensor as a new one (copied, then the request closed), closing the reply as soon as it is sent. */
    static ServerServiceDefinition echo() {
        return ServerServiceDefinition.builder("hostile.Echo")
                .addMethod(ECHO, ServerCalls.asyncBidiStreamingCall(obs -> new StreamObserver<>() {
                    @Override
                    public void onNext(Tensor t) {
                        Tensor copy;
                        try (t) {
                            copy = Tensor.copyOf(t.descriptor(), t.buffer(0));
                        }
                        try (copy) {
                            obs.onNext(copy);
                        }
                    }

                    @Override
                    public void onError(Throwable e) {
                    }

                    @Override
                    public void onCompleted() {
                        obs.onCompleted();
                    }
                })).build();
    }

    /**
     * The in-process transport hands the message streams themselves to the other side, and
     * grpc-netty its own buffers, not detached: the client closes each tensor right after onNext, the server closes each reply right after
     * sending it, several calls run at once and some are cancelled with messages queued; every
     * received tensor holds its own message's bytes.
     */
    @ParameterizedTest
    @ValueSource(strings = {"inprocess", "netty", "netty-gzip"})
    void callsWithTensorsClosedAtOnceKeepEveryMessagesBytes(String transport) throws Exception {
        // gzip: the server's parse gets the decompressing stream (no buffers, no known length).
        CallOptions options = transport.endsWith("gzip") ? CallOptions.DEFAULT.withCompression("gzip") : CallOptions.DEFAULT;
        ExecutorService serverThreads = Executors.newFixedThreadPool(4);
        Server server;
        ManagedChannel channel;
        if (transport.equals("inprocess")) {
            String name = InProcessServerBuilder.generateName();
            server = InProcessServerBuilder.forName(name).addService(echo()).maxInboundMessageSize(64 << 20)
                    .executor(serverThreads).build().start();
            channel = InProcessChannelBuilder.forName(name).maxInboundMessageSize(64 << 20).build();
        } else {
            // grpc-netty hands parse its buffers (not detached): they are released once parse returns.
            server = io.grpc.Grpc.newServerBuilderForPort(0, io.grpc.InsecureServerCredentials.create())
                    .addService(echo()).maxInboundMessageSize(64 << 20).executor(serverThreads).build().start();
            channel = io.grpc.Grpc.newChannelBuilderForAddress("127.0.0.1", server.getPort(),
                    io.grpc.InsecureChannelCredentials.create()).maxInboundMessageSize(64 << 20).build();
        }
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try {
            // Connect first (a delayed call marshals later; see the README's ownership note).
            echoCall(channel, options, 99, 0, 1, false, true, new Random(99));
            List<Future<?>> jobs = new ArrayList<>();
            for (int c = 0; c < 4; c++) {
                int id = c;
                jobs.add(clients.submit(() -> {
                    Random r = new Random(id);
                    for (int call = 0; call < 6; call++) {
                        echoCall(channel, options, id, call, 40, call % 3 == 2, false, r);
                    }
                    return null;
                }));
            }
            for (Future<?> f : jobs) {
                f.get(300, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            serverThreads.shutdownNow();
        }
        assertPoolHoldsDistinctChunks();
    }

    /** One echo call of {@code count} tensors, each closed right after onNext; cancelled with messages queued if told. */
    static void echoCall(ManagedChannel channel, CallOptions options, int id, int call, int count, boolean cancel, boolean warm, Random r) throws Exception {
        List<Tensor> got = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> done = new CompletableFuture<>();
        var cc = channel.newCall(ECHO, options);
        StreamObserver<Tensor> requests = ClientCalls.asyncBidiStreamingCall(cc, new StreamObserver<>() {
            @Override
            public void onNext(Tensor t) {
                got.add(t);
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
        int[] sizes = new int[count];
        // Until the channel is ready a call queues its messages and marshals them later: the
        // warming call keeps its tensors open until it is done.
        List<Tensor> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sizes[i] = i % 3 == 0 ? CHUNK + r.nextInt(3) - 1 : r.nextInt(5 * CHUNK);
            Tensor t = bytes("c" + id + "-" + call + "-" + i, seedOf(id, call, i), sizes[i]);
            requests.onNext(t);
            if (warm) {
                sent.add(t);
            } else {
                t.close();
            }
        }
        if (cancel) {
            cc.cancel("the test cancels with messages queued", null);
            try {
                done.get(20, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                assertEquals(Status.Code.CANCELLED, Status.fromThrowable(e.getCause()).getCode());
            }
        } else {
            requests.onCompleted();
            done.get(60, TimeUnit.SECONDS);
            assertEquals(count, got.size());
        }
        sent.forEach(Tensor::close);
        synchronized (got) {
            for (int i = 0; i < got.size(); i++) {
                try (Tensor t = got.get(i)) {
                    check(t, "c" + id + "-" + call + "-" + i, seedOf(id, call, i), sizes[i]);
                }
            }
        }
    }

    static long seedOf(int client, int call, int i) {
        return (client * 100L + call) * 1000 + i;
    }
}
