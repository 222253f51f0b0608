package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.util.Arrays;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;

/**
 * Small tensors (1 KiB in the benchmarks) written and read in memory, one at a time, through
 * three set-ups that never end:
 * <ul>
 *   <li>{@link #write()}: a writer into a {@link MemoryChannels.RingSink} (bytes copied into one
 *       reused buffer);
 *   <li>{@link #read()}: a reader of a {@link MemoryChannels.CyclicSource} replaying one encoded
 *       tensor after the stream header, the tensor closed at once;
 *   <li>{@link #writeRead()}: a writer and a reader joined by a {@link MemoryChannels.Pipe}:
 *       write one tensor, read it back, close it.
 * </ul>
 * Each returns the payload bytes moved. The payload is a float32 vector of {@code size / 4}
 * elements holding {@link Payloads}' bytes.
 */
public abstract class InMemory implements AutoCloseable {
    /** Implementations, as named in benchmark parameters. */
    public static final String HURRAY = "hurray", RAW = "raw", ARROW = "arrow";
    static final int RING_BYTES = 1 << 20;

    protected final int size;

    protected InMemory(int size) {
        if (size <= 0 || size % 4 != 0 || size > RING_BYTES / 4) {
            throw new IllegalArgumentException("size must be a positive multiple of 4, at most " + RING_BYTES / 4);
        }
        this.size = size;
    }

    /** Makes an implementation by name: {@link #HURRAY}, {@link #RAW} or {@link #ARROW}. */
    public static InMemory open(String impl, int size) throws IOException {
        return switch (impl) {
            case HURRAY -> new HurrayInMemory(size);
            case RAW -> new RawInMemory(size);
            case ARROW -> new ArrowInMemory(size);
            default -> throw new IllegalArgumentException("unknown implementation " + impl);
        };
    }

    /** Writes one tensor; returns its payload bytes. */
    public abstract long write() throws IOException;

    /** Reads one tensor and releases it; returns its payload bytes. */
    public final long read() throws IOException {
        return read(false);
    }

    /** Writes one tensor, reads it back and releases it; returns its payload bytes. */
    public final long writeRead() throws IOException {
        return writeRead(false);
    }

    /** As {@link #read()}, checking every byte against {@link Payloads}. */
    public final long readAndCheck() throws IOException {
        return read(true);
    }

    /** As {@link #writeRead()}, checking every byte read against {@link Payloads}. */
    public final long writeReadAndCheck() throws IOException {
        return writeRead(true);
    }

    /** Bytes the write set-up has put into its sink so far (for checks). */
    public abstract long bytesWritten();

    protected abstract long read(boolean check) throws IOException;

    protected abstract long writeRead(boolean check) throws IOException;

    @Override
    public abstract void close() throws IOException;

    // ------------------------------------------------------------------ Hurray

    static final class HurrayInMemory extends InMemory {
        private final Arena arena = Arena.ofConfined();
        private final Tensor tensor;
        private final MemoryChannels.RingSink ring = new MemoryChannels.RingSink(RING_BYTES);
        private final Writer writer;
        private final Reader reader;
        private final Writer pipeWriter;
        private final Reader pipeReader;

        HurrayInMemory(int size) throws IOException {
            super(size);
            MemorySegment payload = arena.allocate(size, 64);
            Payloads.fill(payload);
            tensor = Tensor.wrap(payload, TensorDescriptor.of(ElementType.FLOAT32, size / 4));
            // Each operation moves one tensor through the channel, as the baseline moves one copy:
            // unbatched writers (a batching writer would only queue it).
            writer = Writer.of(ring, dev.hurray.WriterOptions.defaults().withBatchBytes(0));
            byte[] stream;
            try (Writer w = Writer.toMemory()) {
                w.write(tensor);
                w.finish();
                stream = w.toByteArray();
            }
            // header (16 bytes) + one item + end marker (24 bytes): docs/spec/stream.md §Layout
            reader = Reader.of(new MemoryChannels.CyclicSource(Arrays.copyOfRange(stream, 0, 16),
                    Arrays.copyOfRange(stream, 16, stream.length - 24)));
            MemoryChannels.Pipe pipe = new MemoryChannels.Pipe(RING_BYTES);
            pipeWriter = Writer.of(pipe.sink(), dev.hurray.WriterOptions.defaults().withBatchBytes(0));
            pipeReader = Reader.of(pipe.source());
        }

        @Override
        public long write() throws IOException {
            writer.write(tensor);
            return size;
        }

        @Override
        protected long read(boolean check) throws IOException {
            return take(reader, check);
        }

        @Override
        protected long writeRead(boolean check) throws IOException {
            pipeWriter.write(tensor);
            return take(pipeReader, check);
        }

        private static long take(Reader r, boolean check) throws IOException {
            try (Tensor t = r.read()) {
                if (t == null) {
                    throw new EOFException("the stream ended");
                }
                MemorySegment b = t.buffer(0);
                if (check) {
                    Loopback.check(b);
                }
                return b.byteSize();
            }
        }

        @Override
        public long bytesWritten() {
            return ring.total();
        }

        @Override
        public void close() throws IOException {
            try (arena; tensor; writer; reader; pipeWriter; pipeReader) {
                // closes each, in reverse order
            }
        }
    }

    // ------------------------------------------------------------------ raw copies

    /**
     * The floor: the payload bytes copied with no framing at all, by the same channels (a write
     * is one {@code RingSink.write}, a read one {@code CyclicSource.read} into a reused buffer).
     */
    static final class RawInMemory extends InMemory {
        private final ByteBuffer payload;
        private final ByteBuffer in;
        private final MemoryChannels.RingSink ring = new MemoryChannels.RingSink(RING_BYTES);
        private final MemoryChannels.CyclicSource source;
        private final MemoryChannels.Pipe pipe = new MemoryChannels.Pipe(RING_BYTES);

        RawInMemory(int size) {
            super(size);
            payload = ByteBuffer.allocateDirect(size);
            Payloads.fill(payload);
            in = ByteBuffer.allocateDirect(size);
            byte[] bytes = new byte[size];
            payload.get(0, bytes);
            source = new MemoryChannels.CyclicSource(new byte[0], bytes);
        }

        @Override
        public long write() throws IOException {
            ring.write(payload.clear());
            return size;
        }

        @Override
        protected long read(boolean check) throws IOException {
            in.clear();
            source.read(in);
            return done(check);
        }

        @Override
        protected long writeRead(boolean check) throws IOException {
            pipe.sink().write(payload.clear());
            in.clear();
            while (in.hasRemaining()) {
                pipe.source().read(in);
            }
            return done(check);
        }

        private long done(boolean check) {
            if (check) {
                Loopback.check(MemorySegment.ofBuffer(in.flip()));
            }
            return size;
        }

        @Override
        public long bytesWritten() {
            return ring.total();
        }

        @Override
        public void close() {
        }
    }

    // ------------------------------------------------------------------ Arrow IPC

    /** Arrow Java IPC: {@code ArrowStreamWriter.writeBatch} and {@code ArrowStreamReader.loadNextBatch}. */
    static final class ArrowInMemory extends InMemory {
        private final BufferAllocator allocator = new RootAllocator();
        private final VectorSchemaRoot root;
        private final MemoryChannels.RingSink ring = new MemoryChannels.RingSink(RING_BYTES);
        private final ArrowStreamWriter writer;
        private final ArrowStreamReader reader;
        private final ArrowStreamWriter pipeWriter;
        private final ArrowStreamReader pipeReader;

        ArrowInMemory(int size) throws IOException {
            super(size);
            root = ArrowSupport.patternRoot(allocator, size);
            writer = new ArrowStreamWriter(root, null, ring);
            writer.start();
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            byte[] head;
            try (ArrowStreamWriter w = new ArrowStreamWriter(root, null, Channels.newChannel(bytes))) {
                w.start();
                head = bytes.toByteArray();
                w.writeBatch();
            }
            byte[] all = bytes.toByteArray();
            // schema message, one record batch message, then the 8-byte end-of-stream marker
            byte[] item = Arrays.copyOfRange(all, head.length, all.length - 8);
            reader = new ArrowStreamReader(new MemoryChannels.CyclicSource(head, item), allocator);
            MemoryChannels.Pipe pipe = new MemoryChannels.Pipe(RING_BYTES);
            pipeWriter = new ArrowStreamWriter(root, null, pipe.sink());
            pipeWriter.start();
            pipeReader = new ArrowStreamReader(pipe.source(), allocator);
        }

        @Override
        public long write() throws IOException {
            writer.writeBatch();
            return size;
        }

        @Override
        protected long read(boolean check) throws IOException {
            return take(reader, check);
        }

        @Override
        protected long writeRead(boolean check) throws IOException {
            pipeWriter.writeBatch();
            return take(pipeReader, check);
        }

        private static long take(ArrowStreamReader r, boolean check) throws IOException {
            if (!r.loadNextBatch()) {
                throw new EOFException("the stream ended");
            }
            MemorySegment data = ArrowSupport.data(r.getVectorSchemaRoot());
            if (check) {
                Loopback.check(data);
            }
            return data.byteSize();
        }

        @Override
        public long bytesWritten() {
            return ring.total();
        }

        @Override
        public void close() throws IOException {
            try {
                reader.close(false);
                pipeReader.close(false);
                writer.close();
                pipeWriter.close();
            } finally {
                root.close();
                allocator.close();
            }
        }
    }
}
