package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Named float32[768] embeddings over loopback TCP, each with a name ({@code emb-<i>}) and one
 * metadata entry, against the hand-written baseline: a {@code SocketChannel} loop that reuses
 * one direct buffer per side and sends a length-prefixed name plus the payload.
 *
 * <pre>
 * java ... dev.hurray.bench.Embeddings recv PORT N IMPL     # one JVM receives, prints ms
 * java ... dev.hurray.bench.Embeddings send PORT N IMPL     # another JVM sends
 * java ... dev.hurray.bench.Embeddings warm N [ROUNDS]      # both in one JVM, every impl, warm
 * </pre>
 *
 * IMPL is {@code raw} (the baseline), {@code dos} (a buffered {@code DataOutputStream}),
 * {@code natural} (what a new user writes: a descriptor built per tensor with the builder,
 * {@code Tensor.copyOf} of a heap array, the default writer, {@code read} and {@code close}),
 * {@code hurray} (a descriptor built per tensor, {@code write(descriptor, payload)}) or
 * {@code hurray-rename} (one template descriptor, renamed per tensor with
 * {@link TensorDescriptor#withName}). {@code raw-ffm-chunk} is the raw loop plus one downcall
 * into libhurray per 64 KiB on each side: the floor of a binding that crosses the boundary
 * once per chunk, as Hurray's reader and writer do. {@code raw-ffm} is the raw loop plus the
 * Panama FFM traffic a native binding cannot avoid, with no format work: per tensor, two
 * downcalls into libhurray on each side (calls refused at once for a NULL handle) and a few
 * native-segment reads and writes. It measures what the JDK's FFM machinery alone costs a fresh
 * JVM. The receiver reads every tensor's name and
 * first element; times are from the receiver's first byte to its last tensor (the cold script
 * {@code embeddings.sh} times whole JVMs instead).
 */
public final class Embeddings {
    /** Elements per tensor (768; {@code small} mode changes it). */
    static int DIM = 768;
    static int PAYLOAD = DIM * 4;

    /** Sum of the {@code raw-ffm} calls' results, so that no call is dead code. */
    static long ffmRc;

    private Embeddings() {
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        switch (args[0]) {
            case "send" -> send(Integer.parseInt(args[1]), Integer.parseInt(args[2]), args[3]);
            case "recv" -> {
                long ns = recv(Integer.parseInt(args[1]), Integer.parseInt(args[2]), args[3]);
                System.out.printf("%s %s %.1f ms%n", args[3], args[2], ns / 1e6);
            }
            case "warm" -> warm(Integer.parseInt(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 7);
            case "small" -> {
                // Unnamed-size mode: SIZE-byte float32 tensors (still named, as every impl sends a name).
                DIM = Integer.parseInt(args[1]) / 4;
                PAYLOAD = DIM * 4;
                warm(Integer.parseInt(args[2]), args.length > 3 ? Integer.parseInt(args[3]) : 7);
            }
            case "vt" -> threads(Integer.parseInt(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 7);
            default -> throw new IllegalArgumentException("send|recv|warm|small|vt");
        }
    }

    /** Sends N embeddings to 127.0.0.1:port, retrying the connect until the receiver listens. */
    static void send(int port, int n, String impl) throws Exception {
        SocketChannel ch = null;
        for (int i = 0; i < 400 && ch == null; i++) {
            try {
                ch = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            } catch (IOException e) {
                Thread.sleep(25);
            }
        }
        if (ch == null) {
            throw new IOException("no receiver on port " + port);
        }
        try (SocketChannel c = ch) {
            sendOn(c, n, impl);
        }
    }

    static void sendOn(SocketChannel ch, int n, String impl) throws IOException {
        switch (impl) {
            case "raw" -> {
                ByteBuffer out = ByteBuffer.allocateDirect(8 + 64 + PAYLOAD).order(ByteOrder.LITTLE_ENDIAN);
                float[] row = new float[DIM];
                for (int i = 0; i < n; i++) {
                    byte[] name = ("emb-" + i).getBytes(StandardCharsets.UTF_8);
                    sendRaw(ch, out, row, name, i);
                }
            }
            case "dos" -> {
                DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Channels.newOutputStream(ch), 64 * 1024));
                byte[] bytes = new byte[PAYLOAD];
                java.nio.FloatBuffer floats = ByteBuffer.wrap(bytes).asFloatBuffer(); // big-endian, as DataOutput
                float[] row = new float[DIM];
                for (int i = 0; i < n; i++) {
                    byte[] name = ("emb-" + i).getBytes(StandardCharsets.UTF_8);
                    out.writeInt(name.length);
                    out.write(name);
                    out.writeInt(PAYLOAD);
                    for (int k = 0; k < DIM; k++) {
                        row[k] = i + k;
                    }
                    floats.clear();
                    floats.put(row);
                    out.write(bytes, 0, PAYLOAD);
                }
                out.flush();
            }
            case "raw-ffm" -> {
                ByteBuffer out = ByteBuffer.allocateDirect(8 + 64 + PAYLOAD).order(ByteOrder.LITTLE_ENDIAN);
                float[] row = new float[DIM];
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment scratch = arena.allocate(4096, 8);
                    MemorySegment slices = arena.allocate(64, 8);
                    MemorySegment state = arena.allocate(64, 8);
                    for (int i = 0; i < n; i++) {
                        byte[] name = ("emb-" + i).getBytes(StandardCharsets.UTF_8);
                        // What a binding does per tensor: name bytes into native memory, a
                        // rename and an encode downcall, payload pointers into a slice table.
                        MemorySegment.copy(name, 0, scratch, ValueLayout.JAVA_BYTE, 0, name.length);
                        ffmRc += dev.hurray.ffm.hurray_h.hurray_descriptor_encode_with_name(MemorySegment.NULL,
                                scratch, name.length, scratch.asSlice(1024), 1024, state);
                        slices.set(ValueLayout.JAVA_LONG, 0, scratch.address());
                        slices.set(ValueLayout.JAVA_LONG, 8, PAYLOAD);
                        ffmRc += dev.hurray.ffm.hurray_h.hurray_encoder_encode_encoded(MemorySegment.NULL, scratch,
                                name.length, slices, 1, state);
                        ffmRc += state.get(ValueLayout.JAVA_LONG, 0);
                        sendRaw(ch, out, row, name, i);
                    }
                }
            }
            case "raw-ffm-chunk" -> {
                // The raw loop plus what a binding that crosses once per 64 KiB chunk pays: one
                // downcall per 64 KiB sent (a call refused at once for a NULL handle).
                ByteBuffer out = ByteBuffer.allocateDirect(8 + 64 + PAYLOAD).order(ByteOrder.LITTLE_ENDIAN);
                float[] row = new float[DIM];
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment result = arena.allocate(64, 8);
                    long since = 0;
                    for (int i = 0; i < n; i++) {
                        byte[] name = ("emb-" + i).getBytes(StandardCharsets.UTF_8);
                        since += 8 + name.length + PAYLOAD;
                        if (since >= 64 * 1024) {
                            since = 0;
                            ffmRc += dev.hurray.ffm.hurray_h.hurray_encoder_encode_batch(MemorySegment.NULL, 0,
                                    MemorySegment.NULL, 0, 0, MemorySegment.NULL, 0, result);
                        }
                        sendRaw(ch, out, row, name, i);
                    }
                }
            }
            case "natural" -> {
                sendNatural(ch, n);
            }
            case "hurray", "hurray-rename" -> {
                boolean rename = impl.equals("hurray-rename");
                float[] row = new float[DIM];
                TensorDescriptor template = TensorDescriptor.builder(ElementType.FLOAT32, DIM)
                        .name("emb").metadata("source", "bench").build();
                try (Arena arena = Arena.ofConfined();
                     Writer w = Writer.of(ch, WriterOptions.defaults().withBatchBytes(WriterOptions.DEFAULT_BATCH_BYTES))) {
                    MemorySegment payload = arena.allocate(PAYLOAD, 64);
                    for (int i = 0; i < n; i++) {
                        for (int k = 0; k < DIM; k++) {
                            row[k] = i + k;
                        }
                        MemorySegment.copy(row, 0, payload, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, DIM);
                        TensorDescriptor d = rename ? template.withName("emb-" + i)
                                : TensorDescriptor.builder(ElementType.FLOAT32, DIM)
                                        .name("emb-" + i).metadata("source", "bench").build();
                        w.write(d, payload);
                    }
                }
            }
            default -> throw new IllegalArgumentException(impl);
        }
    }

    /** Accepts one connection on port and receives N embeddings; returns ns from accept to the last. */
    static long recv(int port, int n, String impl) throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            try (SocketChannel ch = server.accept()) {
                return recvOn(ch, n, impl);
            }
        }
    }

    static long recvOn(SocketChannel ch, int n, String impl) throws IOException {
        long t0 = System.nanoTime();
        long check = 0;
        switch (impl) {
            case "raw-ffm" -> {
                ByteBuffer head = ByteBuffer.allocateDirect(4).order(ByteOrder.LITTLE_ENDIAN);
                ByteBuffer nameBuf = ByteBuffer.allocateDirect(4096);
                ByteBuffer payload = ByteBuffer.allocateDirect(PAYLOAD).order(ByteOrder.LITTLE_ENDIAN);
                byte[] name = new byte[4096];
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment result = arena.allocate(256, 8);
                    MemorySegment slot = arena.allocate(8, 8);
                    for (int i = 0; i < n; i++) {
                        // What a binding does per tensor: a decode and a destroy downcall, and
                        // the result's fields read from native memory.
                        ffmRc += dev.hurray.ffm.hurray_h.hurray_decoder_next(MemorySegment.NULL, 0, 0, result);
                        for (int f = 0; f < 6; f++) {
                            ffmRc += result.get(ValueLayout.JAVA_LONG, 8L * f);
                        }
                        ffmRc += result.get(ValueLayout.ADDRESS, 64).address();
                        check += recvRaw(ch, head, nameBuf, payload, name);
                        slot.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
                        dev.hurray.ffm.hurray_h.hurray_tensor_destroy(slot);
                    }
                }
            }
            case "raw-ffm-chunk" -> {
                ByteBuffer head = ByteBuffer.allocateDirect(4).order(ByteOrder.LITTLE_ENDIAN);
                ByteBuffer nameBuf = ByteBuffer.allocateDirect(4096);
                ByteBuffer payload = ByteBuffer.allocateDirect(PAYLOAD).order(ByteOrder.LITTLE_ENDIAN);
                byte[] name = new byte[4096];
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment results = arena.allocate(256, 8);
                    MemorySegment count = arena.allocate(8, 8);
                    long since = 0;
                    for (int i = 0; i < n; i++) {
                        since += 8 + PAYLOAD;
                        if (since >= 64 * 1024) {
                            since = 0;
                            ffmRc += dev.hurray.ffm.hurray_h.hurray_decoder_next_batch(MemorySegment.NULL, 0, 0, results,
                                    1, count);
                        }
                        check += recvRaw(ch, head, nameBuf, payload, name);
                    }
                }
            }
            case "raw", "dos" -> {
                ByteBuffer head = ByteBuffer.allocateDirect(4).order(ByteOrder.BIG_ENDIAN);
                ByteBuffer nameBuf = ByteBuffer.allocateDirect(4096);
                ByteBuffer payload = ByteBuffer.allocateDirect(PAYLOAD);
                ByteOrder order = impl.equals("raw") ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN;
                head.order(order);
                payload.order(order);
                byte[] name = new byte[4096];
                for (int i = 0; i < n; i++) {
                    check += recvRaw(ch, head, nameBuf, payload, name);
                }
            }
            case "hurray", "hurray-rename", "natural" -> {
                try (Reader r = Reader.of(ch)) {
                    for (int i = 0; i < n; i++) {
                        try (Tensor t = r.read()) {
                            String s = t.descriptor().name().orElseThrow();
                            check += s.length() + (long) t.buffer(0).get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0);
                        }
                    }
                }
            }
            default -> throw new IllegalArgumentException(impl);
        }
        long ns = System.nanoTime() - t0;
        if (check == 42) {
            System.out.print("");
        }
        return ns;
    }

    /**
     * Exactly what a new user writes: a descriptor per tensor, {@code Tensor.copyOf} of a heap
     * array, the default writer (shared with {@link ColdSide}).
     */
    static void sendNatural(java.nio.channels.WritableByteChannel ch, int n) throws IOException {
        sendNatural(ch, n, null);
    }

    /** As {@link #sendNatural(java.nio.channels.WritableByteChannel, int)}, calling {@code afterEach} with each tensor's index once it is written (or not, when null). */
    static void sendNatural(java.nio.channels.WritableByteChannel ch, int n, java.util.function.IntConsumer afterEach)
            throws IOException {
        float[] row = new float[DIM];
        byte[] doc = "bench".getBytes(StandardCharsets.UTF_8);
        try (Writer w = Writer.of(ch)) {
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < DIM; k++) {
                    row[k] = i + k;
                }
                TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, DIM)
                        .name("emb-" + i).metadata("doc", doc).build();
                try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row))) {
                    w.write(t);
                }
                if (afterEach != null) {
                    afterEach.accept(i);
                }
            }
        }
    }

    /** The raw loop's send of embedding {@code i}: length-prefixed name, length, payload, through one reused buffer. */
    private static void sendRaw(SocketChannel ch, ByteBuffer out, float[] row, byte[] name, int i) throws IOException {
        out.clear();
        out.putInt(name.length).put(name).putInt(PAYLOAD);
        for (int k = 0; k < DIM; k++) {
            row[k] = i + k;
        }
        out.asFloatBuffer().put(row);
        out.position(out.position() + PAYLOAD);
        out.flip();
        while (out.hasRemaining()) {
            ch.write(out);
        }
    }

    /** The raw loop's receive of one embedding; the name's length plus the first element, as a check value. */
    private static long recvRaw(SocketChannel ch, ByteBuffer head, ByteBuffer nameBuf, ByteBuffer payload, byte[] name)
            throws IOException {
        int len = readInt(ch, head);
        nameBuf.clear().limit(len);
        fill(ch, nameBuf);
        nameBuf.flip().get(name, 0, len);
        String s = new String(name, 0, len, StandardCharsets.UTF_8);
        int plen = readInt(ch, head);
        payload.clear().limit(plen);
        fill(ch, payload);
        return s.length() + (long) payload.getFloat(0);
    }

    private static int readInt(SocketChannel ch, ByteBuffer head) throws IOException {
        head.clear();
        fill(ch, head);
        return head.getInt(0);
    }

    private static void fill(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new EOFException();
            }
        }
    }

    /** Every impl in one warm JVM, interleaved rounds; prints the median per impl and the ratios. */
    static void warm(int n, int rounds) throws Exception {
        String[] impls = {"raw", "dos", "natural", "hurray", "hurray-rename"};
        double[][] ms = new double[impls.length][rounds];
        for (int warmup = 0; warmup < 2; warmup++) {
            for (String impl : impls) {
                once(n, impl);
            }
        }
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < impls.length; k++) {
                int i = (k + r) % impls.length;
                ms[i][r] = once(n, impls[i]) / 1e6;
            }
        }
        double raw = median(ms[0]);
        double best = Math.min(raw, median(ms[1]));
        System.out.printf("| impl | %d named float32[%d], one warm JVM (median of %d) | vs raw | vs best baseline |%n", n, DIM, rounds);
        System.out.println("|---|---|---|---|");
        for (int k = 0; k < impls.length; k++) {
            double m = median(ms[k]);
            System.out.printf("| %s | %.1f ms | %.2f× | %.2f× |%n", impls[k], m, raw / m, best / m);
        }
    }

    private static long once(int n, String impl) throws Exception {
        return once(n, impl, false);
    }

    /** One transfer; with {@code virtual}, sender and receiver run on virtual threads. */
    private static long once(int n, String impl, boolean virtual) throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread.Builder b = virtual ? Thread.ofVirtual() : Thread.ofPlatform();
            Thread sender = b.start(() -> {
                try (SocketChannel ch = SocketChannel.open(server.getLocalAddress())) {
                    sendOn(ch, n, impl);
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            long[] ns = new long[1];
            Thread receiver = b.start(() -> {
                try (SocketChannel ch = server.accept()) {
                    ns[0] = recvOn(ch, n, impl);
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            sender.join();
            receiver.join();
            return ns[0];
        }
    }

    /** Hurray (batched, renamed descriptors) on platform threads against virtual threads, interleaved. */
    static void threads(int n, int rounds) throws Exception {
        double[][] ms = new double[2][rounds];
        for (int w = 0; w < 2; w++) {
            once(n, "hurray-rename", false);
            once(n, "hurray-rename", true);
        }
        for (int r = 0; r < rounds; r++) {
            ms[0][r] = once(n, "hurray-rename", false) / 1e6;
            ms[1][r] = once(n, "hurray-rename", true) / 1e6;
        }
        double p = median(ms[0]);
        double v = median(ms[1]);
        System.out.printf("| threads | %d named float32[%d], one connection (median of %d) | vs platform |%n|---|---|---|%n", n, DIM, rounds);
        System.out.printf("| platform | %.1f ms | 1.00× |%n| virtual | %.1f ms | %.2f× |%n", p, v, p / v);
    }

    private static double median(double[] v) {
        double[] c = v.clone();
        java.util.Arrays.sort(c);
        return c[c.length / 2];
    }
}
