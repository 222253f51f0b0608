package dev.hurray.manual;

import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A bounded soak of the Java↔native boundary (docs/reliability.md §JVM soak); the same code
 * runs, shorter, in {@code SoakTest}.
 *
 * <ol>
 *   <li><b>Upcall exceptions:</b> {@code exceptions} failures thrown from every callback kind —
 *       stream read (an {@code InputStream} and a {@code ReadableByteChannel}), stream write (an
 *       {@code OutputStream} and a {@code WritableByteChannel}), container {@code read_at} and
 *       {@code size} (a {@code FileChannel}), and the transport release ({@code close()}) — in
 *       rotation, each an {@code IOException}, a {@code RuntimeException} or an {@code Error}
 *       (not an {@code Error} from {@code close()}, which is rethrown as it is).
 *       Every one must come back as a {@link HurrayException} whose cause is that very
 *       throwable, and the retried call must succeed; the JVM must survive.</li>
 *   <li><b>Parallel handles:</b> {@code threads} threads, each with its own writers, readers
 *       and container for {@code seconds} seconds.</li>
 *   <li><b>Memory:</b> the process's resident set ({@code VmRSS}) less the committed Java heap,
 *       after a GC, once warm (10% of the failures and a quarter of the parallel time) and at
 *       the end; the growth is printed (and bounded by the test).</li>
 * </ol>
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -Xms512m -Xmx512m -XX:NativeMemoryTracking=summary \
 *      -Dhurray.library.path=native/target/dist/libhurray.so -cp CLASSPATH \
 *      dev.hurray.manual.UpcallSoakMain [exceptions=100000] [threads=4] [seconds=120]
 * </pre>
 */
public final class UpcallSoakMain {
    private UpcallSoakMain() {
    }

    /** What a soak did. */
    public record Result(long exceptions, long roundTrips, long rssWarmKiB, long rssEndKiB,
            long mallocWarmKiB, long mallocEndKiB) {
        /** Growth of the resident set less the committed heap, from warm to end, in KiB. */
        public long growthKiB() {
            return rssEndKiB - rssWarmKiB;
        }

        /** Growth of the C heap in use (glibc {@code mallinfo2}), from warm to end, in KiB. */
        public long mallocGrowthKiB() {
            return mallocEndKiB - mallocWarmKiB;
        }
    }

    public static void main(String[] args) throws Exception {
        long exceptions = args.length > 0 ? Long.parseLong(args[0]) : 100_000;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        long seconds = args.length > 2 ? Long.parseLong(args[2]) : 120;
        long t0 = System.nanoTime();
        Result r = run(exceptions, threads, seconds);
        System.out.printf("upcall exceptions: %d, parallel round trips: %d (%d threads, %d s), RSS-heap warm %d KiB, "
                + "end %d KiB, growth %d KiB; C heap in use warm %d KiB, end %d KiB, growth %d KiB; %.1f s%n",
                r.exceptions(), r.roundTrips(), threads, seconds, r.rssWarmKiB(), r.rssEndKiB(), r.growthKiB(),
                r.mallocWarmKiB(), r.mallocEndKiB(), r.mallocGrowthKiB(), (System.nanoTime() - t0) / 1e9);
    }

    /** Runs both phases; see the class comment. */
    public static Result run(long exceptions, int threads, long seconds) throws Exception {
        Path dir = Files.createTempDirectory("hurray-soak");
        try {
            Path file = dir.resolve("soak.hrryfile");
            byte[] stream = sample(file);
            // Warm-up: 10% of the failures and a quarter of the parallel time, so the JIT, the
            // Java heap and the C allocator's per-thread arenas reach their working size.
            long warm = Math.max(1, exceptions / 10);
            long done = failures(warm, stream, file);
            long trips = parallel(threads, Math.max(1, seconds / 4), dir);
            long rssWarm = rssKiB() - heapCommittedKiB();
            long mallocWarm = mallocInUseKiB();
            done += failures(exceptions - warm, stream, file);
            trips += parallel(threads, seconds, dir);
            long rssEnd = rssKiB() - heapCommittedKiB();
            long mallocEnd = mallocInUseKiB();
            return new Result(done, trips, rssWarm, rssEnd, mallocWarm, mallocEnd);
        } finally {
            try (var s = Files.list(dir)) {
                for (Path p : s.toList()) {
                    Files.deleteIfExists(p);
                }
            }
            Files.deleteIfExists(dir);
        }
    }

    /** A 3-tensor stream (also written as a container at {@code file}). */
    private static byte[] sample(Path file) throws IOException {
        try (Writer w = Writer.toMemory(); HurrayFileWriter fw = HurrayFile.create(file)) {
            for (int i = 0; i < 3; i++) {
                try (Tensor t = Tensor.of(new float[] {i, i + 1, i + 2, i + 3}, 2, 2)) {
                    w.write(t);
                    fw.add("t" + i, t);
                }
            }
            w.finish();
            fw.finish();
            return w.toByteArray();
        }
    }

    private static Throwable nth(long i) {
        return switch ((int) (i % 3)) {
            case 0 -> new IllegalStateException("soak runtime " + i);
            case 1 -> new AssertionError("soak error " + i);
            default -> new IOException("soak io " + i);
        };
    }

    private static void sneaky(Throwable t) throws IOException {
        if (t instanceof IOException io) {
            throw io;
        }
        if (t instanceof RuntimeException re) {
            throw re;
        }
        throw (Error) t;
    }

    /** One pending throwable, thrown by the next call of a wrapped source or sink. */
    private static final class Bomb {
        Throwable armed;

        void fire() throws IOException {
            Throwable t = armed;
            if (t != null) {
                armed = null;
                sneaky(t);
            }
        }

        /** Arms {@code t}; runs {@code op} expecting it back as the cause; runs it again. */
        void expect(Throwable t, IoOp op) throws IOException {
            armed = t;
            try {
                op.run();
                throw new IllegalStateException("the armed " + t + " was not thrown");
            } catch (HurrayException e) {
                if (e.getCause() != t) {
                    throw new IllegalStateException("cause is not the thrown " + t, e);
                }
            }
            op.run();
        }
    }

    @FunctionalInterface
    private interface IoOp {
        void run() throws IOException;
    }

    private static long failures(long count, byte[] stream, Path file) throws IOException {
        Bomb bomb = new Bomb();
        long n = 0;
        while (n < count) {
            int kind = (int) ((n / 3) % 6);
            Throwable t = nth(n);
            if (kind == 5 && t instanceof Error) {
                // close() reports IOExceptions and RuntimeExceptions as HurrayException; an Error
                // from close() is rethrown as it is (Reader.close), so it is not part of the rotation.
                t = new IOException("soak io " + n);
            }
            switch (kind) {
                case 0 -> { // read: InputStream
                    InputStream in = new ByteArrayInputStream(stream) {
                        @Override
                        public synchronized int read(byte[] b, int off, int len) {
                            try {
                                bomb.fire();
                            } catch (IOException e) {
                                throw new UncheckedIOException(e);
                            }
                            return super.read(b, off, len);
                        }
                    };
                    InputStream guarded = new InputStream() {
                        @Override
                        public int read() {
                            throw new UnsupportedOperationException();
                        }

                        @Override
                        public int read(byte[] b, int off, int len) throws IOException {
                            bomb.fire();
                            return in.read(b, off, len);
                        }
                    };
                    try (Reader r = Reader.of(guarded)) {
                        bomb.expect(t, () -> r.read().close());
                        drain(r);
                    }
                }
                case 1 -> { // read: channel
                    ReadableByteChannel src = java.nio.channels.Channels.newChannel(new ByteArrayInputStream(stream));
                    ReadableByteChannel ch = new ReadableByteChannel() {
                        @Override
                        public int read(ByteBuffer dst) throws IOException {
                            bomb.fire();
                            return src.read(dst);
                        }

                        @Override
                        public boolean isOpen() {
                            return true;
                        }

                        @Override
                        public void close() {
                        }
                    };
                    try (Reader r = Reader.of(ch)) {
                        bomb.expect(t, () -> r.read().close());
                        drain(r);
                    }
                }
                case 2 -> { // write: OutputStream
                    ByteArrayOutputStream sink = new ByteArrayOutputStream();
                    OutputStream out = new OutputStream() {
                        @Override
                        public void write(int b) {
                            throw new UnsupportedOperationException();
                        }

                        @Override
                        public void write(byte[] b, int off, int len) throws IOException {
                            bomb.fire();
                            sink.write(b, off, len);
                        }
                    };
                    try (Writer w = Writer.of(out, WriterOptions.defaults().withBatchBytes(0)); Tensor x = Tensor.of(new float[] {1, 2, 3}, 3)) {
                        bomb.expect(t, () -> w.write(x));
                    }
                }
                case 3 -> { // write: channel
                    WritableByteChannel ch = new WritableByteChannel() {
                        @Override
                        public int write(ByteBuffer src) throws IOException {
                            bomb.fire();
                            int r = src.remaining();
                            src.position(src.limit());
                            return r;
                        }

                        @Override
                        public boolean isOpen() {
                            return true;
                        }

                        @Override
                        public void close() {
                        }
                    };
                    try (Writer w = Writer.of(ch, WriterOptions.defaults().withBatchBytes(0)); Tensor x = Tensor.of(new float[] {1, 2, 3}, 3)) {
                        bomb.expect(t, () -> w.write(x));
                    }
                }
                case 4 -> { // read_at and size: a FileChannel
                    FileChannel real = FileChannel.open(file, StandardOpenOption.READ);
                    boolean sizeFirst = (n & 1) == 0;
                    FileChannel ch = new ThrowingFileChannel(real, bomb, sizeFirst);
                    bomb.armed = t;
                    try {
                        HurrayFile.open(ch).close();
                        throw new IllegalStateException("open did not fail");
                    } catch (HurrayException e) {
                        if (e.getCause() != t) {
                            throw new IllegalStateException("cause is not the thrown " + t, e);
                        }
                    }
                    try (HurrayFile f = HurrayFile.open(ch); Tensor x = f.read("t1")) {
                        x.buffer(0);
                    }
                }
                default -> { // release: close() throws
                    InputStream in = new ByteArrayInputStream(stream) {
                        @Override
                        public void close() throws IOException {
                            bomb.fire();
                        }
                    };
                    bomb.armed = t;
                    Reader r = Reader.of(in);
                    drain(r);
                    try {
                        r.close();
                        throw new IllegalStateException("close did not fail");
                    } catch (HurrayException e) {
                        if (e.getCause() != t) {
                            throw new IllegalStateException("cause is not the thrown " + t, e);
                        }
                    }
                }
            }
            n++;
        }
        return n;
    }

    private static void drain(Reader r) throws IOException {
        for (Tensor x = r.read(); x != null; x = r.read()) {
            x.close();
        }
    }

    /** Delegates to {@code real}; the first read or size call (as chosen) fires the bomb. */
    private static final class ThrowingFileChannel extends FileChannel {
        private final FileChannel real;
        private final Bomb bomb;
        private final boolean sizeFirst;

        ThrowingFileChannel(FileChannel real, Bomb bomb, boolean sizeFirst) {
            this.real = real;
            this.bomb = bomb;
            this.sizeFirst = sizeFirst;
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            if (!sizeFirst) {
                bomb.fire();
            }
            return real.read(dst, position);
        }

        @Override
        public long size() throws IOException {
            if (sizeFirst) {
                bomb.fire();
            }
            return real.size();
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            return real.read(dst);
        }

        @Override
        public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
            return real.read(dsts, offset, length);
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            return real.write(src);
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
            return real.write(srcs, offset, length);
        }

        @Override
        public long position() throws IOException {
            return real.position();
        }

        @Override
        public FileChannel position(long p) throws IOException {
            real.position(p);
            return this;
        }

        @Override
        public FileChannel truncate(long size) throws IOException {
            real.truncate(size);
            return this;
        }

        @Override
        public void force(boolean metaData) throws IOException {
            real.force(metaData);
        }

        @Override
        public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
            return real.transferTo(position, count, target);
        }

        @Override
        public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
            return real.transferFrom(src, position, count);
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            return real.write(src, position);
        }

        @Override
        public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
            return real.map(mode, position, size);
        }

        @Override
        public FileLock lock(long position, long size, boolean shared) throws IOException {
            return real.lock(position, size, shared);
        }

        @Override
        public FileLock tryLock(long position, long size, boolean shared) throws IOException {
            return real.tryLock(position, size, shared);
        }

        @Override
        protected void implCloseChannel() throws IOException {
            real.close();
        }
    }

    /** {@code threads} threads, each round-tripping its own handles for {@code seconds}. */
    private static long parallel(int threads, long seconds, Path dir) throws Exception {
        AtomicLong trips = new AtomicLong();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> ts = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < threads; i++) {
            Path file = dir.resolve("parallel-" + i + ".hrryfile");
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    float[] v = new float[1024];
                    while (System.nanoTime() < end) {
                        byte[] bytes;
                        try (Writer w = Writer.toMemory(); Tensor x = Tensor.of(v, 32, 32)) {
                            for (int k = 0; k < 16; k++) {
                                w.write(x);
                            }
                            w.finish();
                            bytes = w.toByteArray();
                        }
                        try (Reader r = Reader.of(bytes)) {
                            drain(r);
                        }
                        try (HurrayFileWriter fw = HurrayFile.create(file); Tensor x = Tensor.of(v, 1024)) {
                            fw.add("x", x);
                            fw.finish();
                        }
                        try (HurrayFile f = HurrayFile.open(file); Tensor x = f.read("x")) {
                            x.buffer(0);
                        }
                        trips.incrementAndGet();
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("a parallel handle failed", failures.get(0));
        }
        return trips.get();
    }

    /**
     * Bytes of the C heap in use, in KiB: glibc's {@code mallinfo2()} {@code uordblks +
     * hblkhd} (small and mmap'd chunks), which is where the native library's allocations live
     * (it uses the system allocator); 0 where {@code mallinfo2} is missing. Unlike the resident
     * set it does not move when the JVM touches heap pages.
     */
    static long mallocInUseKiB() {
        java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
        var f = linker.defaultLookup().find("mallinfo2");
        if (f.isEmpty()) {
            return 0;
        }
        java.lang.foreign.StructLayout info = java.lang.foreign.MemoryLayout.structLayout(
                java.util.stream.IntStream.range(0, 10).mapToObj(i -> java.lang.foreign.ValueLayout.JAVA_LONG.withName("f" + i))
                        .toArray(java.lang.foreign.MemoryLayout[]::new));
        var h = linker.downcallHandle(f.get(), java.lang.foreign.FunctionDescriptor.of(info));
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment r = (java.lang.foreign.MemorySegment) h.invokeExact(
                    (java.lang.foreign.SegmentAllocator) a);
            long hblkhd = r.get(java.lang.foreign.ValueLayout.JAVA_LONG, 4 * 8);
            long uordblks = r.get(java.lang.foreign.ValueLayout.JAVA_LONG, 7 * 8);
            return (hblkhd + uordblks) / 1024;
        } catch (Throwable t) {
            return 0;
        }
    }

    /** The committed Java heap in KiB (taken out of the resident set: it is not native memory). */
    static long heapCommittedKiB() {
        return java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getCommitted() / 1024;
    }

    /** The process's resident set in KiB after a GC, from /proc/self/status (0 elsewhere). */
    static long rssKiB() {
        System.gc();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
        return 0;
    }

    static {
        // Status is referenced so the class's imports stay honest about what it checks.
        assert Status.TRANSPORT != null;
    }
}
