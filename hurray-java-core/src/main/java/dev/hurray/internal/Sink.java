package dev.hurray.internal;

import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.SelectableChannel;
import java.nio.channels.WritableByteChannel;
import java.util.Arrays;
import java.util.Objects;

/**
 * A byte sink for a {@link NativeWriter}. The writer calls {@link #write} from Java, outside
 * any native frame, with the bytes the native encoder staged: a blocking write here parks a
 * virtual thread without pinning its carrier.
 *
 * <p>Implementations take at least one and at most {@code src.byteSize()} bytes and return the
 * count (0 means the sink is closed: the writer reports {@code SINK_CLOSED}); they throw to
 * report a failure having taken nothing of this call's bytes.
 */
public abstract class Sink {
    private final Closeable onClose;
    private boolean closed;

    /** @param onClose closes the underlying sink when the writer closes, or null */
    protected Sink(Closeable onClose) {
        this.onClose = onClose;
    }

    /**
     * Writes up to {@code src.byteSize()} bytes of {@code src}.
     *
     * @param src native memory valid for this call only
     * @return bytes taken, ≥ 1
     * @throws IOException to fail having taken nothing of {@code src}
     */
    protected abstract long write(MemorySegment src) throws IOException;

    /**
     * True if {@link #write(ByteBuffer[])} sends several ranges in one call (a gathering
     * channel): the writer then lets the native encoder borrow payloads from 16 KiB up instead
     * of copying them, and sends an item's pieces together.
     */
    protected boolean gathers() {
        return false;
    }

    /**
     * Writes from several ranges in order, taking at least one byte (only called when
     * {@link #gathers()}).
     *
     * @return bytes taken, ≥ 1
     * @throws IOException to fail having taken nothing in this call
     */
    protected long write(ByteBuffer[] ranges) throws IOException {
        throw new UnsupportedOperationException();
    }

    /** Pushes buffered bytes to their destination (after an item, or on {@code flush()}). */
    public void flush() throws IOException {
    }

    /** Closes the underlying sink once (later calls do nothing). */
    final void close() throws IOException {
        if (!closed) {
            closed = true;
            if (onClose != null) {
                onClose.close();
            }
        }
    }

    /** A blocking channel written straight from native memory (no heap bounce). */
    public static Sink of(WritableByteChannel channel, Closeable onClose) {
        Objects.requireNonNull(channel, "channel");
        return new Sink(onClose) {
            @Override
            protected boolean gathers() {
                return channel instanceof GatheringByteChannel;
            }

            @Override
            protected long write(ByteBuffer[] ranges) throws IOException {
                long n = ((GatheringByteChannel) channel).write(ranges);
                if (n == 0 && channel instanceof SelectableChannel sc && !sc.isBlocking()) {
                    throw new IOException("the channel was switched to non-blocking mode; Hurray writers need a blocking channel");
                }
                // A blocking channel that takes no byte is closed: the writer reports SINK_CLOSED.
                return n;
            }

            @Override
            protected long write(MemorySegment src) throws IOException {
                ByteBuffer bb = src.asSlice(0, Math.min(src.byteSize(), Source.MAX_CHANNEL_TRANSFER)).asByteBuffer();
                int n = channel.write(bb);
                if (n == 0 && channel instanceof SelectableChannel sc && !sc.isBlocking()) {
                    throw new IOException("the channel was switched to non-blocking mode; Hurray writers need a blocking channel");
                }
                // A blocking channel that takes no byte is closed: the writer reports SINK_CLOSED.
                return n;
            }
        };
    }

    /**
     * An {@code OutputStream} written through one reusable 64 KiB chunk. A fault copying the
     * bytes into the chunk (the JVM's {@link InternalError} for a mapped file truncated under
     * the copy) is an {@link IOException} with that error as cause, as a channel's write from
     * such memory fails with one.
     */
    public static Sink of(OutputStream out, Closeable onClose) {
        Objects.requireNonNull(out, "out");
        byte[] chunk = new byte[Source.CHUNK_BYTES];
        return new Sink(onClose) {
            @Override
            protected long write(MemorySegment src) throws IOException {
                int n = (int) Math.min(src.byteSize(), chunk.length);
                try {
                    MemorySegment.copy(src, ValueLayout.JAVA_BYTE, 0, chunk, 0, n);
                } catch (InternalError e) {
                    // The JVM's report of a fault reading src (a page of a mapped file cut off
                    // by a truncation): an IOException, as the kernel gives a channel write
                    // from that memory (EFAULT). Nothing of this chunk was written.
                    throw new IOException("reading the payload's memory faulted (a mapped file truncated while written?): "
                            + e.getMessage(), e);
                }
                out.write(chunk, 0, n);
                return n;
            }

            @Override
            public void flush() throws IOException {
                out.flush();
            }
        };
    }

    /** A growable heap buffer (at most {@link #MEMORY_LIMIT} bytes). */
    public static Memory toMemory() {
        return new Memory();
    }

    /** Largest memory sink, in bytes (a Java array's limit). */
    public static final int MEMORY_LIMIT = Integer.MAX_VALUE - 8;

    /** The memory sink: bytes accumulate in a heap array; {@link #toByteArray()} copies them. */
    public static final class Memory extends Sink {
        private byte[] buf = new byte[1024];
        private int size;

        Memory() {
            super(null);
        }

        @Override
        protected long write(MemorySegment src) throws IOException {
            long room = MEMORY_LIMIT - (long) size;
            if (room <= 0) {
                throw new IOException("the in-memory sink is full (" + MEMORY_LIMIT + " bytes)");
            }
            int n = (int) Math.min(src.byteSize(), room);
            if (size + n > buf.length) {
                buf = Arrays.copyOf(buf, (int) Math.min(MEMORY_LIMIT, Math.max((long) size + n, 2L * buf.length)));
            }
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, 0, buf, size, n);
            size += n;
            return n;
        }

        /** Forgets the bytes written so far; a buffer grown past 4 MiB is given back. */
        void clear() {
            size = 0;
            if (buf.length > (4 << 20)) {
                buf = new byte[1024];
            }
        }

        /** A copy of the bytes written so far. */
        public byte[] toByteArray() {
            return Arrays.copyOf(buf, size);
        }

        /** Number of bytes written so far. */
        public int size() {
            return size;
        }
    }
}
