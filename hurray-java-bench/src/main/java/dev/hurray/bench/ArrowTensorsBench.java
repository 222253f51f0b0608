package dev.hurray.bench;

import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.ElementType;
import dev.hurray.arrow.ArrowTables;
import dev.hurray.arrow.ArrowTensors;
import dev.hurray.arrow.FixedShapeTensorVector;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.apache.arrow.vector.ipc.message.ArrowBlock;

/**
 * Arrow tensor columns against Hurray, N float32[768] embeddings (default 100,000), each figure
 * with a baseline measured in the same run, interleaved rounds, medians:
 * <ol>
 *   <li><b>column</b>: an HRRYFILE holding the embeddings as one {@code [N, 768]} tensor, read
 *       ({@code map}: zero copy; {@code open}: one positional read into fresh memory), made an
 *       Arrow {@code arrow.fixed_shape_tensor} column ({@link ArrowTensors#toVector}) and a Hurray
 *       tensor again ({@link ArrowTensors#toTensor}), every row's first element summed; against
 *       {@code MemorySegment.copy} of the payload into a reused buffer, into fresh memory, and
 *       a {@code pread} of the payload into a reused buffer. Also from one file kept open whose
 *       buffer pool holds the tensor (with and without payload checksums).</li>
 *   <li><b>ipc-to-stream</b>: an Arrow IPC file with that column read by {@code ArrowFileReader}
 *       and written as a Hurray stream to a loopback socket ({@link ArrowTables#toHurray}), read
 *       by a {@code Reader} on another thread; against the same payload bytes read from the file
 *       into a reused direct buffer and sent through the same kind of socket (received into a
 *       reused 1 MiB buffer, fresh huge-page memory, or one buffer of the payload's size reused
 *       across runs); also over one connection kept across rounds. Its parts, in
 *       the same run: the same streams from a Hurray tensor (or its named rows) already in
 *       memory, and {@code ArrowFileReader} loading the file alone.</li>
 *   <li><b>lookup</b>: one embedding by name from an HRRYFILE of N named tensors
 *       ({@code HurrayFile.open} + {@code read(name)} + close) against finding it in an Arrow IPC
 *       file of {@code name} and {@code tensor} columns (record batches of 10,000 rows, scanned
 *       until the name is found, the row converted).</li>
 * </ol>
 *
 * <pre>java -Xms1g -Xmx1g --enable-native-access=ALL-UNNAMED \
 *   --add-opens=java.base/java.nio=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
 *   -cp hurray-java-bench/target/benchmarks.jar dev.hurray.bench.ArrowTensorsBench [N] [ROUNDS] [DIR] [OPS]</pre>
 *
 * <p>{@code OPS} runs only the named operations (comma-separated, as in {@code names} in
 * {@link #main}, e.g. {@code "memcpy,raw loopback,tensor -> stream"}); a row is printed when its
 * operation and its baseline ran. {@code -Dhurray.library.path=} another build's
 * {@code libhurray.so} compares two native builds with the same Java code, JVM by JVM.
 */
public final class ArrowTensorsBench {
    static final int DIM = 768;

    private final int rows;
    private final Path dir;
    final Path column;
    final Path named;
    final Path ipc;
    final Path ipcNamed;
    private final BufferAllocator allocator = new RootAllocator();

    ArrowTensorsBench(int rows, Path dir) throws IOException {
        ArrowTensors.register();
        this.rows = rows;
        this.dir = dir;
        column = dir.resolve("column.hrry");
        named = dir.resolve("named.hrry");
        ipc = dir.resolve("column.arrow");
        ipcNamed = dir.resolve("named.arrow");
        write();
    }

    long payloadBytes() {
        return (long) rows * DIM * 4;
    }

    private void write() throws IOException {
        try (Tensor t = Tensor.allocate(TensorDescriptor.builder(ElementType.FLOAT32, rows, DIM).name("emb").build())) {
            MemorySegment s = t.buffer(0);
            for (long i = 0; i < (long) rows * DIM; i++) {
                s.setAtIndex(ValueLayout.JAVA_FLOAT, i, i % 977);
            }
            try (HurrayFileWriter w = HurrayFile.create(column)) {
                w.add(t);
                w.finish();
            }
            try (HurrayFileWriter w = HurrayFile.create(named)) {
                TensorDescriptor row = TensorDescriptor.of(ElementType.FLOAT32, DIM);
                for (int i = 0; i < rows; i++) {
                    w.add(row.withName(name(i)), s.asSlice((long) i * DIM * 4, DIM * 4L));
                }
                w.finish();
            }
            try (FixedShapeTensorVector v = ArrowTensors.toVector(t, "emb", allocator);
                 VectorSchemaRoot root = new VectorSchemaRoot(List.of(v.getField()), List.of(v), rows);
                 FileChannel ch = FileChannel.open(ipc, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                         StandardOpenOption.TRUNCATE_EXISTING)) {
                ArrowTables.write(root, ch, false);
            }
            writeNamedIpc(t);
        }
    }

    static String name(int i) {
        return "emb-" + i;
    }

    private void writeNamedIpc(Tensor t) throws IOException {
        int batch = Math.min(rows, 10_000);
        try (FileChannel ch = FileChannel.open(ipcNamed, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ArrowFileWriter w = null;
            VectorSchemaRoot out = null;
            try {
                for (int start = 0; start < rows; start += batch) {
                    int n = Math.min(batch, rows - start);
                    try (Tensor part = Tensor.copyOf(TensorDescriptor.of(ElementType.FLOAT32, n, DIM),
                            t.buffer(0).asSlice((long) start * DIM * 4, (long) n * DIM * 4));
                         VarCharVector names = new VarCharVector("name", allocator);
                         FixedShapeTensorVector v = ArrowTensors.toVector(part, "tensor", allocator)) {
                        names.allocateNew(n);
                        for (int i = 0; i < n; i++) {
                            names.setSafe(i, name(start + i).getBytes(StandardCharsets.UTF_8));
                        }
                        names.setValueCount(n);
                        try (VectorSchemaRoot b = new VectorSchemaRoot(List.of(names.getField(), v.getField()),
                                List.of(names, v), n)) {
                            if (w == null) {
                                out = VectorSchemaRoot.create(b.getSchema(), allocator);
                                w = new ArrowFileWriter(out, null, ch);
                                w.start();
                            }
                            try (var rb = new org.apache.arrow.vector.VectorUnloader(b).getRecordBatch()) {
                                new org.apache.arrow.vector.VectorLoader(out).load(rb);
                            }
                            w.writeBatch();
                            out.clear();
                        }
                    }
                }
                w.end();
            } finally {
                if (w != null) {
                    w.close();
                }
                if (out != null) {
                    out.close();
                }
            }
        }
    }

    // ---------------------------------------------------------------- 1. column

    private MemorySegment copyDst;
    private MemorySegment copySrc;

    /** Baseline: one copy of the payload into a reused, pre-touched buffer. */
    double memcpy() {
        if (copyDst == null) {
            copySrc = Arena.global().allocate(payloadBytes(), 64);
            copyDst = Arena.global().allocate(payloadBytes(), 64);
            copySrc.fill((byte) 1);
            copyDst.fill((byte) 0);
        }
        MemorySegment.copy(copySrc, 0, copyDst, 0, payloadBytes());
        return copyDst.get(ValueLayout.JAVA_FLOAT, 0);
    }

    /** HRRYFILE -> Arrow column -> Hurray tensor; returns the sum of every row's first element. */
    double columnRoundTrip(boolean map) throws IOException {
        try (HurrayFile f = map ? HurrayFile.map(column) : HurrayFile.open(column)) {
            return columnRoundTrip(f);
        }
    }

    /** As {@link #columnRoundTrip(boolean)} with {@code open}, the payload checksums not checked: the read alone. */
    double columnOpenUnchecked() throws IOException {
        try (HurrayFile f = HurrayFile.open(column, dev.hurray.FileReaderOptions.defaults()
                .withPayloadChecks(dev.hurray.FileReaderOptions.PayloadChecks.SKIP))) {
            return columnRoundTrip(f);
        }
    }

    private HurrayFile keptOpen;

    /**
     * As {@link #columnRoundTrip(boolean)} with {@code open}, from one file kept open whose
     * buffer pool holds the tensor (a service reading the same file again): after the warm-up
     * round each read lands in memory the previous one released, not in fresh pages.
     */
    double columnOpenKept() throws IOException {
        if (keptOpen == null) {
            keptOpen = HurrayFile.open(column, dev.hurray.FileReaderOptions.defaults()
                    .withBufferPoolBytes(2 * payloadBytes() + (1 << 20)));
        }
        return columnRoundTrip(keptOpen);
    }

    private MemorySegment preadDst;
    private long payloadOffset = -1;

    /**
     * Baseline of a read from the page cache: the HRRYFILE's payload range read with positional
     * reads ({@code FileChannel.read}, {@code pread}) into a reused, touched buffer, no checksum.
     */
    double pread() throws IOException {
        if (preadDst == null) {
            preadDst = Arena.global().allocate(payloadBytes(), 64);
            preadDst.fill((byte) 0);
            try (HurrayFile f = HurrayFile.open(column)) {
                payloadOffset = f.entry("emb").orElseThrow().buffers().get(0).offset();
            }
        }
        try (FileChannel ch = FileChannel.open(column, StandardOpenOption.READ)) {
            ByteBuffer b = preadDst.asByteBuffer();
            while (b.hasRemaining()) {
                if (ch.read(b, payloadOffset + b.position()) < 0) {
                    throw new IOException("short file");
                }
            }
        }
        return preadDst.get(ValueLayout.JAVA_FLOAT, 0);
    }

    private HurrayFile keptOpenUnchecked;

    /** As {@link #columnOpenKept}, the payload checksums not checked: the read into reused memory alone. */
    double columnOpenKeptUnchecked() throws IOException {
        if (keptOpenUnchecked == null) {
            keptOpenUnchecked = HurrayFile.open(column, dev.hurray.FileReaderOptions.defaults()
                    .withBufferPoolBytes(2 * payloadBytes() + (1 << 20))
                    .withPayloadChecks(dev.hurray.FileReaderOptions.PayloadChecks.SKIP));
        }
        return columnRoundTrip(keptOpenUnchecked);
    }

    private double columnRoundTrip(HurrayFile f) throws IOException {
        try (Tensor t = f.read("emb")) {
            Tensor back;
            try (FixedShapeTensorVector v = ArrowTensors.toVector(t, "emb", allocator)) {
                back = ArrowTensors.toTensor(v);
            }
            try (back) {
                MemorySegment s = back.buffer(0);
                double sum = 0;
                for (long r = 0; r < rows; r++) {
                    sum += s.get(ValueLayout.JAVA_FLOAT, r * DIM * 4);
                }
                return sum;
            }
        }
    }

    // ---------------------------------------------------------------- 2. ipc to stream

    private ByteBuffer rawBuf;

    /** Baseline: the IPC file's payload bytes read into a reused buffer and sent over loopback. */
    double rawSend() throws Exception {
        return overLoopback(this::sendIpcPayload, in -> {
            ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
            long got = 0;
            while (got < payloadBytes()) {
                b.clear();
                int n = in.read(b);
                if (n < 0) {
                    break;
                }
                got += n;
            }
            return got;
        });
    }

    /** The raw baselines' sender: the IPC file's payload bytes read into a reused 1 MiB buffer and written. */
    private void sendIpcPayload(SocketChannel out) throws IOException {
        if (rawBuf == null) {
            rawBuf = ByteBuffer.allocateDirect(1 << 20);
        }
        long left = payloadBytes();
        try (FileChannel ch = FileChannel.open(ipc, StandardOpenOption.READ)) {
            long pos = 0;
            while (left > 0) {
                rawBuf.clear().limit((int) Math.min(rawBuf.capacity(), left));
                int n = ch.read(rawBuf, pos);
                pos += n;
                left -= n;
                rawBuf.flip();
                while (rawBuf.hasRemaining()) {
                    out.write(rawBuf);
                }
            }
        }
    }

    /**
     * Second baseline: as {@link #rawSend}, but the receiver keeps the bytes, as a user who
     * keeps the data does: it reads them into a fresh native buffer of the payload's size
     * (allocated per run, so its pages are new, as the Hurray receiver's tensor is), freed
     * after the run.
     */
    double rawSendKept() throws Exception {
        return overLoopback(this::sendIpcPayload, in -> {
            try (Arena arena = Arena.ofConfined()) {
                ByteBuffer b = arena.allocate(payloadBytes(), 64).asByteBuffer();
                while (b.hasRemaining()) {
                    if (in.read(b) < 0) {
                        break;
                    }
                }
                return b.position();
            }
        });
    }

    /**
     * Third baseline: as {@link #rawSendKept}, into fresh memory of the kind the Hurray reader
     * takes for a buffer of 32 MiB or more (an anonymous map aligned to 2 MiB, advised for
     * transparent huge pages, not touched before the read), unmapped after the run. It pays
     * the same fresh-page cost as the Hurray receiver, without zeroing the buffer first.
     */
    double rawSendKeptHuge() throws Exception {
        return overLoopback(this::sendIpcPayload, in -> {
            try (FreshPages p = new FreshPages(payloadBytes())) {
                ByteBuffer b = p.segment.asByteBuffer();
                while (b.hasRemaining()) {
                    if (in.read(b) < 0) {
                        break;
                    }
                }
                return b.position();
            }
        });
    }

    private MemorySegment keptDst;

    /**
     * Fourth baseline: as {@link #rawSendKept}, into one buffer of the payload's size reused
     * (and touched) across runs: what a receiver that keeps the bytes pays without fresh pages,
     * the baseline of a Hurray reader whose buffer pool hands it the previous tensor's memory.
     */
    double rawSendKeptReused() throws Exception {
        if (keptDst == null) {
            keptDst = Arena.global().allocate(payloadBytes(), 64);
            keptDst.fill((byte) 0);
        }
        return overLoopback(this::sendIpcPayload, in -> {
            ByteBuffer b = keptDst.asByteBuffer();
            while (b.hasRemaining()) {
                if (in.read(b) < 0) {
                    break;
                }
            }
            return b.position();
        });
    }

    /**
     * The baseline of a read into fresh memory ({@code HurrayFile.open}): the payload copied
     * into fresh memory of the kind the library reads a tensor of 32 MiB or more into (see
     * {@link #rawSendKeptHuge}).
     */
    double memcpyFresh() {
        memcpy();
        try (FreshPages p = new FreshPages(payloadBytes())) {
            MemorySegment.copy(copySrc, 0, p.segment, 0, payloadBytes());
            return p.segment.get(ValueLayout.JAVA_FLOAT, 0);
        }
    }

    /** An anonymous private map of at least {@code bytes}, 2 MiB aligned, advised MADV_HUGEPAGE (Linux). */
    static final class FreshPages implements AutoCloseable {
        private static final long HUGE = 2L << 20;
        private static final java.lang.foreign.Linker LINKER = java.lang.foreign.Linker.nativeLinker();
        private static final java.lang.invoke.MethodHandle MMAP = LINKER.downcallHandle(
                LINKER.defaultLookup().find("mmap").orElseThrow(), java.lang.foreign.FunctionDescriptor.of(ValueLayout.ADDRESS,
                        ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
        private static final java.lang.invoke.MethodHandle MADVISE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("madvise").orElseThrow(), java.lang.foreign.FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        private static final java.lang.invoke.MethodHandle MUNMAP = LINKER.downcallHandle(
                LINKER.defaultLookup().find("munmap").orElseThrow(), java.lang.foreign.FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
        final MemorySegment segment;
        private final MemorySegment map;
        private final long mapBytes;

        FreshPages(long bytes) {
            long rounded = (bytes + HUGE - 1) & -HUGE;
            mapBytes = rounded + HUGE;
            try {
                // PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS
                map = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, mapBytes, 3, 0x22, -1, 0L);
                if (map.address() == -1L) {
                    throw new IllegalStateException("mmap failed");
                }
                long aligned = (map.address() + HUGE - 1) & -HUGE;
                int rc = (int) MADVISE.invokeExact(MemorySegment.ofAddress(aligned), rounded, 14); // MADV_HUGEPAGE
                segment = MemorySegment.ofAddress(aligned).reinterpret(bytes);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        @Override
        public void close() {
            try {
                int rc = (int) MUNMAP.invokeExact(map, mapBytes);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }

    /**
     * An Arrow IPC file as a Hurray stream over loopback ({@code named}: the file of name and
     * tensor columns in 10,000-row batches, one tensor per row; else one batch, one tensor);
     * returns the payload bytes received. The receiver's buffer pool holds the largest tensor,
     * as the baseline reuses its buffer.
     */
    double ipcToStream(boolean named) throws Exception {
        return overLoopback(out -> {
            // The README's code: the file's path and a default writer (small tensors batched per 64 KiB).
            try (Writer w = Writer.of(out)) {
                ArrowTables.toHurray(named ? ipcNamed : ipc, w);
            }
        }, this::receive);
    }

    /**
     * The sender of {@link #ipcToStream} (one batch) alone: the stream's bytes drained by the
     * raw baseline's receiver (a reused 1 MiB buffer, bytes discarded), so that no fresh memory
     * is touched on either side ({@code reader}: through an {@code ArrowFileReader}).
     */
    double ipcToStreamDrained(boolean reader) throws Exception {
        return overLoopback(out -> {
            try (Writer w = Writer.of(out)) {
                if (!reader) {
                    ArrowTables.toHurray(ipc, w);
                    return;
                }
                try (FileChannel ch = FileChannel.open(ipc, StandardOpenOption.READ);
                     ArrowFileReader r = new ArrowFileReader(ch, allocator)) {
                    ArrowTables.toHurray(r, w);
                }
            }
        }, in -> {
            ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
            long got = 0;
            for (int n; (n = in.read(b.clear())) >= 0; ) {
                got += n;
            }
            return got;
        });
    }

    /** As {@link #ipcToStream} (one batch), through an {@code ArrowFileReader} the caller opens: Arrow loads the batch first. */
    double ipcReaderToStream() throws Exception {
        return overLoopback(out -> {
            try (FileChannel ch = FileChannel.open(ipc, StandardOpenOption.READ);
                 ArrowFileReader r = new ArrowFileReader(ch, allocator);
                 Writer w = Writer.of(out)) {
                ArrowTables.toHurray(r, w);
            }
        }, this::receive);
    }

    private Connection kept;

    /**
     * As {@link #ipcToStream} (one batch), over one connection kept across rounds: the sender
     * thread writes the file's tensor through the same {@code Writer} each round and the same
     * {@code Reader} receives it, its buffer pool holding the tensor, so from the second round on
     * the receiver reads into the memory the previous tensor released instead of fresh pages.
     */
    double ipcToStreamKeptConnection() throws Exception {
        if (kept == null) {
            kept = new Connection();
        }
        return kept.round();
    }

    /** A loopback connection, a sender thread answering each round with one tensor, and the receiving {@code Reader}. */
    private final class Connection implements AutoCloseable {
        private final java.util.concurrent.SynchronousQueue<Boolean> go = new java.util.concurrent.SynchronousQueue<>();
        private final ServerSocketChannel server;
        private final SocketChannel in;
        private final Reader reader;
        private final Thread sender;
        private volatile Exception failed;

        Connection() throws IOException {
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            sender = Thread.ofPlatform().daemon().start(() -> {
                try (SocketChannel out = SocketChannel.open(server.getLocalAddress()); Writer w = Writer.of(out)) {
                    while (go.take()) {
                        ArrowTables.toHurray(ipc, w);
                        w.flush();
                    }
                } catch (Exception e) {
                    failed = e;
                }
            });
            in = server.accept();
            reader = Reader.of(in, dev.hurray.ReaderOptions.defaults().withBufferPoolBytes(2 * payloadBytes() + (1 << 20)));
        }

        double round() throws Exception {
            go.put(true);
            try (Tensor t = reader.read()) {
                if (failed != null) {
                    throw failed;
                }
                return t.descriptor().totalBufferBytes();
            }
        }

        @Override
        public void close() throws Exception {
            go.put(false);
            sender.join();
            reader.close();
            in.close();
            server.close();
        }
    }

    /** The receiving side of every Hurray stream here: read and close each tensor; returns the payload bytes. */
    private long receive(SocketChannel in) throws IOException {
        long got = 0;
        try (Reader r = Reader.of(in, dev.hurray.ReaderOptions.defaults().withBufferPoolBytes(2 * payloadBytes() + (1 << 20)))) {
            for (Tensor t : r) {
                try (t) {
                    got += t.descriptor().totalBufferBytes();
                }
            }
        }
        return got;
    }

    private Tensor inMemory;
    private String[] rowNames;

    /**
     * Where the IPC figures go, part 1: the same stream from a Hurray tensor already in memory
     * (no Arrow involved), written and received as {@link #ipcToStream} does: one
     * {@code [N, 768]} tensor, or N named rows of it ({@code named}).
     */
    double hurrayToStream(boolean named) throws Exception {
        if (inMemory == null) {
            inMemory = Tensor.allocate(TensorDescriptor.of(ElementType.FLOAT32, rows, DIM), dev.hurray.TensorScope.SHARED);
            inMemory.buffer(0).fill((byte) 1);
            rowNames = new String[rows];
            for (int i = 0; i < rows; i++) {
                rowNames[i] = name(i);
            }
        }
        TensorDescriptor row = TensorDescriptor.of(ElementType.FLOAT32, DIM);
        return overLoopback(out -> {
            try (Writer w = Writer.of(out)) {
                if (!named) {
                    w.write(inMemory);
                    return;
                }
                MemorySegment all = inMemory.buffer(0);
                for (int i = 0; i < rows; i++) {
                    w.write(row.withName(rowNames[i]), all.asSlice((long) i * DIM * 4, DIM * 4L));
                }
            }
        }, in -> receive(in));
    }

    /** Where the IPC figures go, part 2: Arrow's reader loading every record batch of the file, nothing else. */
    double arrowLoad(boolean named) throws IOException {
        long n = 0;
        try (FileChannel ch = FileChannel.open(named ? ipcNamed : ipc, StandardOpenOption.READ);
             ArrowFileReader r = new ArrowFileReader(ch, allocator)) {
            while (r.loadNextBatch()) {
                n += r.getVectorSchemaRoot().getRowCount();
            }
        }
        return n;
    }

    interface Send {
        void run(SocketChannel out) throws Exception;
    }

    interface Receive {
        long run(SocketChannel in) throws Exception;
    }

    private static double overLoopback(Send send, Receive receive) throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Exception[] failed = {null};
            Thread sender = Thread.ofPlatform().start(() -> {
                try (SocketChannel out = SocketChannel.open(server.getLocalAddress())) {
                    send.run(out);
                } catch (Exception e) {
                    failed[0] = e;
                }
            });
            long got;
            try (SocketChannel in = server.accept()) {
                got = receive.run(in);
            }
            sender.join();
            if (failed[0] != null) {
                throw failed[0];
            }
            return got;
        }
    }

    // ---------------------------------------------------------------- 3. lookup

    /** One embedding by name from the HRRYFILE of named tensors; returns its first element. */
    double hurrayLookup(int i) throws IOException {
        try (HurrayFile f = HurrayFile.open(named); Tensor t = f.read(name(i))) {
            return t.buffer(0).get(ValueLayout.JAVA_FLOAT, 0);
        }
    }

    static final int LOOKUPS = 200;

    /** {@link #LOOKUPS} different embeddings by name in a row (each its own open, read, close): the warm cost. */
    double hurrayLookups(int first) throws IOException {
        double sum = 0;
        for (int k = 0; k < LOOKUPS; k++) {
            sum += hurrayLookup((int) ((first + 7919L * k) % rows));
        }
        return sum;
    }

    /** The same embedding found by scanning the Arrow IPC file's name column batch by batch. */
    double arrowLookup(int i) throws IOException {
        byte[] want = name(i).getBytes(StandardCharsets.UTF_8);
        try (FileChannel ch = FileChannel.open(ipcNamed, StandardOpenOption.READ);
             ArrowFileReader r = new ArrowFileReader(ch, allocator)) {
            for (ArrowBlock block : r.getRecordBlocks()) {
                r.loadRecordBatch(block);
                VectorSchemaRoot root = r.getVectorSchemaRoot();
                VarCharVector names = (VarCharVector) root.getVector("name");
                for (int row = 0; row < root.getRowCount(); row++) {
                    if (Arrays.equals(names.get(row), want)) {
                        try (Tensor t = ArrowTensors.row((FixedShapeTensorVector) root.getVector("tensor"), row)) {
                            return t.buffer(0).get(ValueLayout.JAVA_FLOAT, 0);
                        }
                    }
                }
            }
        }
        throw new IOException(name(i) + " not found");
    }

    // ---------------------------------------------------------------- harness

    /** Median seconds of {@code rounds} runs, interleaved with the others by the caller. */
    static double time(Callable<?> c) throws Exception {
        long t0 = System.nanoTime();
        c.call();
        return (System.nanoTime() - t0) / 1e9;
    }

    static double median(List<Double> v) {
        double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a[a.length / 2];
    }

    public static void main(String[] args) throws Exception {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 7;
        Path dir = args.length > 2 ? Path.of(args[2]) : Files.createTempDirectory("hurray-arrow-bench");
        List<String> only = args.length > 3 ? Arrays.asList(args[3].split(",")) : null;
        ArrowTensorsBench b = new ArrowTensorsBench(rows, dir);
        String[] names = {"memcpy", "column map", "column open", "raw loopback", "ipc -> stream", "hrry lookup", "arrow lookup",
            "named ipc -> stream", "tensor -> stream", "named rows -> stream", "arrow load", "named arrow load",
            "raw loopback kept", "raw loopback kept huge", "memcpy fresh", "ipc reader -> stream", "hrry lookups", "ipc -> drain", "ipc reader -> drain", "column open unchecked", "column open kept", "pread", "ipc -> stream kept", "raw loopback kept reused", "column open kept unchecked"};
        List<List<Double>> times = new ArrayList<>();
        for (String n : names) {
            times.add(new ArrayList<>());
        }
        int target = rows / 2 + 17 % Math.max(1, rows);
        for (int round = -1; round < rounds; round++) { // round -1 warms up
            List<Callable<?>> ops = List.of(b::memcpy, () -> b.columnRoundTrip(true), () -> b.columnRoundTrip(false),
                    b::rawSend, () -> b.ipcToStream(false), () -> b.hurrayLookup(target), () -> b.arrowLookup(target),
                    () -> b.ipcToStream(true), () -> b.hurrayToStream(false), () -> b.hurrayToStream(true),
                    () -> b.arrowLoad(false), () -> b.arrowLoad(true), b::rawSendKept, b::rawSendKeptHuge,
                    b::memcpyFresh,
                    b::ipcReaderToStream, () -> b.hurrayLookups(target), () -> b.ipcToStreamDrained(false),
                    () -> b.ipcToStreamDrained(true), b::columnOpenUnchecked, b::columnOpenKept, b::pread,
                    b::ipcToStreamKeptConnection, b::rawSendKeptReused,
                    b::columnOpenKeptUnchecked);
            for (int k = 0; k < ops.size(); k++) {
                int j = (k + Math.max(0, round)) % ops.size(); // rotating order
                if (only != null && !only.contains(names[j])) {
                    continue;
                }
                double s = time(ops.get(j));
                if (round >= 0) {
                    times.get(j).add(s);
                }
            }
        }
        double gb = b.payloadBytes() / 1e9;
        double[] m = new double[names.length];
        for (int i = 0; i < names.length; i++) {
            m[i] = times.get(i).isEmpty() ? Double.NaN : median(times.get(i));
        }
        System.out.printf(Locale.ROOT, "%,d float32[%d] embeddings (%.1f MB), %d rounds, medians%n%n", rows, DIM, gb * 1e3, rounds);
        System.out.println("| operation | ms | GB/s | vs baseline | baseline | vs raw loopback, kept in fresh huge-page memory |");
        System.out.println("|---|---:|---:|---:|---|---:|");
        row(names[0], m[0], gb, 1, "");
        row("memcpy into fresh huge-page memory (mapped per run)", m[14], gb, m[0] / m[14], "memcpy");
        row("HRRYFILE map -> Arrow column -> tensor", m[1], gb, m[0] / m[1], "memcpy");
        row("HRRYFILE open -> Arrow column -> tensor", m[2], gb, m[0] / m[2], "memcpy");
        row("HRRYFILE open -> Arrow column -> tensor, against the fresh-memory memcpy", m[2], gb, m[14] / m[2], "memcpy into fresh huge-page memory");
        row("HRRYFILE open, payload checksums not checked -> Arrow column -> tensor", m[19], gb, m[14] / m[19], "memcpy into fresh huge-page memory");
        row("pread of the payload into a reused buffer", m[21], gb, m[0] / m[21], "memcpy");
        row("HRRYFILE open once, read again into its pool's memory -> Arrow column -> tensor", m[20], gb, m[0] / m[20], "memcpy");
        row("  the same, against pread into a reused buffer", m[20], gb, m[21] / m[20], "pread");
        row("  the same, payload checksums not checked, against pread into a reused buffer", m[24], gb, m[21] / m[24], "pread");
        row("raw loopback (receiver reuses a 1 MiB buffer, discards)", m[3], gb, 1, "");
        row("raw loopback, kept (receiver reads into a fresh Arena.allocate buffer of the payload's size, zeroed first)", m[12], gb, m[3] / m[12], "raw loopback");
        row("raw loopback, kept in fresh huge-page memory (as the Hurray reader's buffer)", m[13], gb, m[3] / m[13], "raw loopback");
        row("Arrow IPC file (1 batch) -> one Hurray tensor, stream (loopback): ArrowTables.toHurray(path, writer)", m[4], gb, m[3] / m[4], "raw loopback", m[13] / m[4]);
        row("raw loopback, kept in one reused buffer of the payload's size", m[23], gb, m[3] / m[23], "raw loopback");
        row("  the same over one connection kept across rounds, the receiver's pool reused", m[22], gb, m[3] / m[22], "raw loopback", m[13] / m[22]);
        row("  the same, against raw loopback kept in one reused buffer", m[22], gb, m[23] / m[22], "raw loopback kept reused");
        row("  the same through an ArrowFileReader: ArrowTables.toHurray(reader, writer)", m[15], gb, m[3] / m[15], "raw loopback", m[13] / m[15]);
        row("  split: its sender alone, the stream drained as raw loopback's receiver drains", m[17], gb, m[3] / m[17], "raw loopback");
        row("  split: the ArrowFileReader sender alone, drained the same way", m[18], gb, m[3] / m[18], "raw loopback");
        row("Arrow IPC file (10,000-row batches, names) -> N tensors, stream (loopback)", m[7], gb, m[3] / m[7], "raw loopback", m[13] / m[7]);
        row("  split: Hurray tensor in memory -> stream (loopback), no Arrow", m[8], gb, m[3] / m[8], "raw loopback", m[13] / m[8]);
        row("  split: N named rows in memory -> stream (loopback), no Arrow", m[9], gb, m[3] / m[9], "raw loopback", m[13] / m[9]);
        row("  split: ArrowFileReader loads the file (1 batch)", m[10], gb, m[3] / m[10], "raw loopback");
        row("  split: ArrowFileReader loads the file (10,000-row batches)", m[11], gb, m[3] / m[11], "raw loopback");
        row("HRRYFILE open + read by name + close (one lookup per round)", m[5], 0, m[6] / m[5], "arrow lookup (x faster)");
        row("HRRYFILE open + read by name + close (mean of " + LOOKUPS + " names in a row)", m[16] / LOOKUPS, 0,
                m[6] / (m[16] / LOOKUPS), "arrow lookup (x faster)");
        row("Arrow IPC file: scan names + convert row", m[6], 0, 1, "");
        b.close();
    }

    private static void row(String name, double s, double gb, double ratio, String base) {
        row(name, s, gb, ratio, base, Double.NaN);
    }

    /** A table row; {@code kept} is the ratio against the kept raw baseline (blank when NaN). */
    private static void row(String name, double s, double gb, double ratio, String base, double kept) {
        if (Double.isNaN(s) || Double.isNaN(ratio)) {
            return;
        }
        System.out.printf(Locale.ROOT, "| %s | %.3f | %s | %s | %s | %s |%n", name, s * 1e3, gb > 0 ? String.format(Locale.ROOT, "%.2f", gb / s) : "",
                base.isEmpty() ? "" : String.format(Locale.ROOT, "%.2f", ratio), base,
                Double.isNaN(kept) ? "" : String.format(Locale.ROOT, "%.2f", kept));
    }

    /** Closes the allocator (every Arrow buffer must have been released). */
    void close() throws HurrayException {
        if (inMemory != null) {
            inMemory.close();
        }
        if (keptOpen != null) {
            keptOpen.close();
        }
        if (keptOpenUnchecked != null) {
            keptOpenUnchecked.close();
        }
        if (kept != null) {
            try {
                kept.close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        allocator.close();
    }
}
