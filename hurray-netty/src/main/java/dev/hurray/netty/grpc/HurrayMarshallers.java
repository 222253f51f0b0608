package dev.hurray.netty.grpc;

import dev.hurray.HurrayException;
import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.TensorDecoder;
import dev.hurray.TensorEncoder;
import dev.hurray.TensorScope;
import dev.hurray.WriterOptions;
import io.grpc.Drainable;
import io.grpc.HasByteBuffer;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * gRPC marshallers for tensors: a message is one complete Hurray stream (docs/spec/stream.md)
 * holding one tensor ({@link #tensor()}) or a list of tensors ({@link #tensors()}), so a service
 * needs no protobuf message and no code generation.
 *
 * <pre>{@code
 * MethodDescriptor<Tensor, Tensor> infer = MethodDescriptor.<Tensor, Tensor>newBuilder()
 *         .setType(MethodDescriptor.MethodType.UNARY)
 *         .setFullMethodName("demo.Model/Infer")
 *         .setRequestMarshaller(HurrayMarshallers.tensor())
 *         .setResponseMarshaller(HurrayMarshallers.tensor())
 *         .build();
 * }</pre>
 *
 * <h2>Copies</h2>
 * Sending: the stream is encoded into arrays, one copy of each byte (the message must not refer
 * to the tensor: its owner may close it as soon as the send returns, and the in-process
 * transport reads the message later): one array of its own for a message under 64 KiB, else
 * 64 KiB chunks kept between messages (at most 16 MiB of them idle), which the message gives
 * back once gRPC has drained, read or closed it. It is drained ({@link Drainable}) into gRPC's buffers with one write
 * per array. Encoders and decoders are reset and kept between messages (at most 16 idle of
 * each kind), so a message makes no native encoder or decoder of its own. The message length is known up front ({@link KnownLength}). Receiving: where the
 * transport offers its buffers ({@link HasByteBuffer}, as grpc-netty does) they are handed straight to a {@link TensorDecoder}, which copies each byte once, a
 * large payload into the tensor's own allocation; otherwise the stream is read through a
 * 64 KiB chunk.
 *
 * <h2>Ownership</h2>
 * A tensor given to gRPC to send stays the caller's: keep it open until the call that sends
 * it ({@code onNext}, {@code sendMessage}) returns, then close it. On a channel that has not
 * resolved its address yet, gRPC queues the first messages of a call and marshals them later
 * (a delayed call), so the tensor must stay open longer: connect first (one call, or
 * {@code getState(true)} until {@code READY}) before streaming tensors you close at once; a tensor closed
 * before it is marshalled fails the call ({@code CANCELLED}, caused by {@code FAILED_PRECONDITION}
 * saying so). A received tensor is owned by
 * the code that gets it ({@code onNext}, the unary handler): close it. Received tensors are
 * {@link TensorScope#SHARED} by default, since gRPC may deliver them on any executor thread;
 * small ones of consecutive messages share one shared arena per batch ({@link TensorDecoder},
 * Ownership): a closed tensor's accessors throw, and segments taken from it before stay valid
 * until every tensor of its batch is closed.
 *
 * <h2>Size limit</h2>
 * gRPC refuses messages over 4 MiB by default ({@code maxInboundMessageSize} on the receiving
 * channel or server). The marshallers refuse, when sending, a message larger than their own
 * limit (4 MiB unless given) with {@code RESOURCE_EXHAUSTED} naming both settings, rather than
 * letting the peer fail the call later; raise both together, or send large tensors as several
 * messages of a streaming call.
 *
 * <h2>Errors</h2>
 * A message that is not a valid stream of exactly the expected tensors (bytes after the stream's
 * end marker included) fails the call with {@code INVALID_ARGUMENT} whose cause is the
 * {@link HurrayException}.
 */
public final class HurrayMarshallers {
    /** gRPC's default largest inbound message, bytes. */
    public static final long GRPC_DEFAULT_MAX_MESSAGE_BYTES = 4L << 20;

    private HurrayMarshallers() {
    }

    /** One tensor per message, default limits, received tensors {@link TensorScope#SHARED}. */
    public static MethodDescriptor.Marshaller<Tensor> tensor() {
        return tensor(ReaderOptions.defaults().withTensorScope(TensorScope.SHARED), GRPC_DEFAULT_MAX_MESSAGE_BYTES);
    }

    /**
     * One tensor per message.
     *
     * @param options limits and tensor scope for received messages
     * @param maxMessageBytes largest message sent (match the peer's {@code maxInboundMessageSize})
     * @throws IllegalArgumentException if {@code maxMessageBytes} is not positive (no message fits)
     */
    public static MethodDescriptor.Marshaller<Tensor> tensor(ReaderOptions options, long maxMessageBytes) {
        Objects.requireNonNull(options, "options");
        checkLimit(maxMessageBytes);
        return new MethodDescriptor.Marshaller<>() {
            @Override
            public InputStream stream(Tensor value) {
                return encode(List.of(value), maxMessageBytes);
            }

            @Override
            public Tensor parse(InputStream stream) {
                List<Tensor> ts = decode(stream, options);
                if (ts.size() != 1) {
                    ts.forEach(Tensor::close);
                    throw Status.INVALID_ARGUMENT.withDescription("a tensor message holds " + ts.size()
                            + " tensors, not 1").asRuntimeException();
                }
                return ts.get(0);
            }
        };
    }

    /** A list of tensors per message, default limits, received tensors {@link TensorScope#SHARED}. */
    public static MethodDescriptor.Marshaller<List<Tensor>> tensors() {
        return tensors(ReaderOptions.defaults().withTensorScope(TensorScope.SHARED), GRPC_DEFAULT_MAX_MESSAGE_BYTES);
    }

    /** A list of tensors per message (a whole stream); see {@link #tensor(ReaderOptions, long)}. */
    public static MethodDescriptor.Marshaller<List<Tensor>> tensors(ReaderOptions options, long maxMessageBytes) {
        Objects.requireNonNull(options, "options");
        checkLimit(maxMessageBytes);
        return new MethodDescriptor.Marshaller<>() {
            @Override
            public InputStream stream(List<Tensor> value) {
                return encode(value, maxMessageBytes);
            }

            @Override
            public List<Tensor> parse(InputStream stream) {
                return decode(stream, options);
            }
        };
    }

    private static void checkLimit(long maxMessageBytes) {
        if (maxMessageBytes <= 0) {
            throw new IllegalArgumentException("maxMessageBytes " + maxMessageBytes + " leaves room for no message: give"
                    + " the peer's maxInboundMessageSize (gRPC's default is " + GRPC_DEFAULT_MAX_MESSAGE_BYTES + ")");
        }
    }

    /**
     * Encoders and decoders kept between messages, reset ({@link TensorEncoder#reset()},
     * {@link TensorDecoder#reset()}): a message costs no native handle, cleaner registration or
     * staging area of its own. Bounded: at most {@link #MAX_IDLE} wait per kind (and per
     * {@code ReaderOptions}, for {@link #MAX_OPTION_SETS} of them); more are closed. gRPC calls
     * marshallers from any thread, so one is taken for a message and given back after it.
     */
    static final class Idle<T extends AutoCloseable> {
        static final int MAX_IDLE = 16;
        static final int MAX_OPTION_SETS = 8;
        private final java.util.concurrent.ConcurrentLinkedQueue<T> idle = new java.util.concurrent.ConcurrentLinkedQueue<>();
        private final java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger();

        T take() {
            T t = idle.poll();
            if (t != null) {
                count.decrementAndGet();
            }
            return t;
        }

        /** Keeps {@code t}, or closes it when enough wait. */
        void give(T t) throws Exception {
            if (count.incrementAndGet() <= MAX_IDLE) {
                idle.offer(t);
            } else {
                count.decrementAndGet();
                t.close();
            }
        }

        int size() {
            return count.get();
        }
    }

    /** Every marshaller encodes with the same options (default writer options, the largest copy limit). */
    static final Idle<TensorEncoder> ENCODERS = new Idle<>();
    static final java.util.concurrent.ConcurrentHashMap<ReaderOptions, Idle<TensorDecoder>> DECODERS =
            new java.util.concurrent.ConcurrentHashMap<>();

    private static Idle<TensorDecoder> decoders(ReaderOptions options) {
        Idle<TensorDecoder> pool = DECODERS.get(options);
        if (pool == null && DECODERS.size() < Idle.MAX_OPTION_SETS) {
            pool = DECODERS.computeIfAbsent(options, o -> new Idle<>());
        }
        return pool;
    }

    /** Resets {@code c} and keeps it in {@code pool}; closes it when it cannot be reset or kept. */
    private static <T extends AutoCloseable> void recycle(Idle<T> pool, T c, boolean reset) {
        try {
            if (pool != null && reset) {
                if (c instanceof TensorEncoder e) {
                    e.reset();
                } else if (c instanceof TensorDecoder d) {
                    d.reset();
                }
                pool.give(c);
                return;
            }
        } catch (Exception e) {
            // Not reusable: closed below.
        }
        try {
            c.close();
        } catch (Exception e) {
            // Encoders and decoders close without checked failures.
        }
    }

    /** Bytes of small tensors gathered before a list's output is copied out. */
    private static final long GATHER_BYTES = 1 << 20;

    /**
     * Encodes a whole stream into arrays: one copy of every byte, into one array of its own for
     * less than 64 KiB pending and pooled chunks above (see {@link #copyOut}). A message stream must not refer to the tensor,
     * whose owner may close it once the send returns while the transport reads the stream later
     * (the in-process transport hands the stream itself to the server).
     */
    private static InputStream encode(List<Tensor> tensors, long maxMessageBytes) {
        List<byte[]> parts = new ArrayList<>(2);
        long[] total = {0};
        TensorEncoder e = ENCODERS.take();
        boolean reusable = false;
        try {
            if (e == null) {
                e = TensorEncoder.create(WriterOptions.defaults(), TensorEncoder.MAX_COPY_BYTES);
            }
            long gathered = 0;
            for (Tensor t : tensors) {
                Objects.requireNonNull(t, "tensor");
                if (!t.isOpen()) {
                    throw Status.FAILED_PRECONDITION.withDescription("the tensor was closed before gRPC marshalled it: "
                            + "a call whose channel has not connected yet queues its messages and marshals them later, "
                            + "so connect first (one call, or ManagedChannel.getState(true) until READY) or close the "
                            + "tensor only after the call completes").asRuntimeException();
                }
                e.encode(t);
                gathered += t.descriptor().totalBufferBytes() + 64;
                // Small items stay staged and leave together; a borrowed payload must leave now.
                if (e.borrowsPayloads() || gathered >= GATHER_BYTES) {
                    copyOut(e, parts, total, maxMessageBytes);
                    gathered = 0;
                }
            }
            e.finish();
            copyOut(e, parts, total, maxMessageBytes);
            reusable = true;
        } catch (HurrayException ex) {
            throw Status.INVALID_ARGUMENT.withDescription("encoding a tensor failed: " + ex.getMessage()).withCause(ex)
                    .asRuntimeException();
        } finally {
            if (e != null) {
                recycle(ENCODERS, e, reusable);
            }
        }
        return new PartsStream(parts, total[0]);
    }

    /**
     * Copies everything pending into {@code parts}, refusing a message over the limit first: one
     * array of its own when less than a chunk is pending, else pooled chunks ({@link Chunks})
     * and an array of its own for the rest.
     */
    private static void copyOut(TensorEncoder e, List<byte[]> parts, long[] total, long maxMessageBytes)
            throws HurrayException {
        long n = e.pendingBytes();
        if (n == 0) {
            return;
        }
        if (total[0] + n > maxMessageBytes || n > Integer.MAX_VALUE - 8) {
            throw Status.RESOURCE_EXHAUSTED.withDescription("a Hurray message of more than "
                    + maxMessageBytes + " bytes: raise maxInboundMessageSize on the receiving channel "
                    + "or server and the marshaller's maxMessageBytes (HurrayMarshallers.tensor(options, "
                    + "maxMessageBytes)), or send the tensors as several messages").asRuntimeException();
        }
        long left = n;
        byte[] a = null;
        int at = 0;
        while (left > 0) {
            long sent = 0;
            for (TensorEncoder.Piece p : e.output()) {
                ByteBuffer b = p.bytes();
                while (b.hasRemaining()) {
                    if (a == null || at == a.length) {
                        a = left - sent >= Chunks.CHUNK_BYTES ? Chunks.take() : new byte[(int) (left - sent)];
                        at = 0;
                        parts.add(a);
                    }
                    int k = Math.min(b.remaining(), a.length - at);
                    b.get(a, at, k);
                    at += k;
                    sent += k;
                }
            }
            if (sent == 0) {
                throw new IllegalStateException("the encoder listed no output while " + left + " bytes are pending");
            }
            e.consumed(sent);
            left -= sent;
        }
        total[0] += n;
    }

    /**
     * The arrays a large message is copied into, {@link #CHUNK_BYTES} each, kept between messages
     * (at most {@link #MAX_IDLE}, 16 MiB): a message stream gives its chunks back once it has been
     * drained, read to its end, fed to a decoder or closed, after which it reads nothing more. A
     * large message so costs no new array (a zeroed, humongous allocation for the collector) of
     * its own.
     */
    static final class Chunks {
        static final int CHUNK_BYTES = 64 * 1024;
        static final int MAX_IDLE = 256;
        private static final java.util.concurrent.ConcurrentLinkedQueue<byte[]> IDLE =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        private static final java.util.concurrent.atomic.AtomicInteger COUNT =
                new java.util.concurrent.atomic.AtomicInteger();

        private Chunks() {
        }

        static byte[] take() {
            byte[] c = IDLE.poll();
            if (c == null) {
                return new byte[CHUNK_BYTES];
            }
            COUNT.decrementAndGet();
            return c;
        }

        /** Keeps {@code c} for a later message (only whole chunks; others are left to the collector). */
        static void give(byte[] c) {
            if (c.length != CHUNK_BYTES) {
                return;
            }
            if (COUNT.incrementAndGet() <= MAX_IDLE) {
                IDLE.offer(c);
            } else {
                COUNT.decrementAndGet();
            }
        }

        static int idle() {
            return COUNT.get();
        }
    }

    private static List<Tensor> decode(InputStream in, ReaderOptions options) {
        List<Tensor> out = new ArrayList<>();
        Idle<TensorDecoder> pool = decoders(options);
        TensorDecoder d = pool == null ? null : pool.take();
        boolean reusable = false;
        try {
            if (d == null) {
                d = TensorDecoder.create(options);
            }
            if (in instanceof PartsStream parts) {
                // Our own message, handed over as is (the in-process transport): its arrays.
                parts.feedTo(d, out);
            } else if (in instanceof HasByteBuffer buffers && buffers.byteBufferSupported()) {
                // The transport's own buffers, no copy before the decoder's; the decoder copies
                // what it is fed before feed returns, so the buffers need not outlive this call
                // (no detach). An empty buffer while bytes remain (skipping 0 bytes would not
                // move past it) sends the rest through a chunk.
                while (in.available() > 0) {
                    ByteBuffer b = buffers.getByteBuffer();
                    if (b == null || !b.hasRemaining()) {
                        break;
                    }
                    int n = b.remaining();
                    d.feed(b);
                    d.drainTo(out);
                    in.skipNBytes(n);
                }
                if (in.available() > 0) {
                    feedRest(in, d, out);
                }
            } else {
                feedRest(in, d, out);
            }
            d.endOfInput();
            d.drainTo(out);
            reusable = true;
            return out;
        } catch (HurrayException e) {
            // A reset decoder forgets the failure: it can serve the next message.
            reusable = true;
            out.forEach(Tensor::close);
            throw Status.INVALID_ARGUMENT.withDescription("not a valid Hurray message: " + e.getMessage()).withCause(e)
                    .asRuntimeException();
        } catch (IOException | RuntimeException e) {
            out.forEach(Tensor::close);
            if (e instanceof StatusRuntimeException s) {
                throw s;
            }
            throw Status.INTERNAL.withDescription("reading a Hurray message failed").withCause(e).asRuntimeException();
        } finally {
            if (d != null) {
                recycle(pool, d, reusable);
            }
        }
    }

    /** Largest chunk a message is read through when its stream offers no buffers. */
    private static final int CHUNK_BYTES = 64 * 1024;

    /**
     * Feeds what is left of {@code in} through one chunk: as large as the rest of the message
     * when the stream knows it ({@code available()}, exact for gRPC's {@link KnownLength}
     * streams; at least 4 KiB), at most {@link #CHUNK_BYTES}, so that a small message does not cost a 64 KiB
     * array (zeroed on allocation) of its own.
     */
    private static void feedRest(InputStream in, TensorDecoder d, List<Tensor> out) throws IOException {
        int known = in.available();
        byte[] chunk = new byte[Math.min(Math.max(known, 4096), CHUNK_BYTES)];
        for (int n; ; ) {
            n = in.read(chunk);
            if (n < 0) {
                return;
            }
            d.feed(ByteBuffer.wrap(chunk, 0, n));
            d.drainTo(out);
        }
    }

    /**
     * The encoded message: arrays, drained in order. Once it has been drained, read to its end,
     * fed to a decoder or closed, its chunks go back to {@link Chunks} and it reads as ended.
     */
    static final class PartsStream extends InputStream implements Drainable, KnownLength {
        private List<byte[]> parts;
        private long remaining;
        private int index;
        private int offset;

        PartsStream(List<byte[]> parts, long total) {
            this.parts = parts;
            this.remaining = total;
        }

        /** The current part, skipping finished ones; null at the end (the chunks then given back). */
        private byte[] current() {
            while (index < parts.size()) {
                byte[] p = parts.get(index);
                if (offset < p.length) {
                    return p;
                }
                index++;
                offset = 0;
            }
            release();
            return null;
        }

        /** Gives the chunks back; the stream then holds nothing and reads as ended. */
        private void release() {
            List<byte[]> done;
            // Atomic, so that two threads closing one stream at once cannot give a chunk back twice
            // (two later messages would then share it); a stream is otherwise used by one thread.
            synchronized (this) {
                done = parts;
                if (done.isEmpty()) {
                    return;
                }
                parts = List.of();
                index = 0;
                offset = 0;
                remaining = 0;
            }
            for (byte[] p : done) {
                Chunks.give(p);
            }
        }

        @Override
        public int read() {
            byte[] p = current();
            if (p == null) {
                return -1;
            }
            remaining--;
            return p[offset++] & 0xff;
        }

        @Override
        public int read(byte[] dst, int off, int len) {
            Objects.checkFromIndexSize(off, len, dst.length);
            if (len == 0) {
                return 0;
            }
            byte[] p = current();
            if (p == null) {
                return -1;
            }
            int n = Math.min(len, p.length - offset);
            System.arraycopy(p, offset, dst, off, n);
            offset += n;
            remaining -= n;
            if (remaining == 0) {
                release();
            }
            return n;
        }

        /** Feeds what is left to {@code d}, draining its tensors into {@code out}. */
        void feedTo(TensorDecoder d, List<Tensor> out) throws HurrayException {
            for (byte[] p; (p = current()) != null;) {
                int from = offset;
                offset = p.length;
                remaining -= p.length - from;
                d.feed(ByteBuffer.wrap(p, from, p.length - from));
                d.drainTo(out);
            }
        }

        @Override
        public int available() {
            return (int) Math.min(remaining, Integer.MAX_VALUE);
        }

        @Override
        public int drainTo(OutputStream target) throws IOException {
            long n = remaining;
            for (byte[] p; (p = current()) != null;) {
                target.write(p, offset, p.length - offset);
                offset = p.length;
            }
            remaining = 0;
            return (int) n;
        }

        @Override
        public void close() {
            release();
        }
    }
}
