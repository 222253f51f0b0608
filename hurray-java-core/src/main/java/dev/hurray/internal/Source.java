package dev.hurray.internal;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.util.Objects;

/**
 * A byte source for a {@link NativeReader}. The reader calls {@link #read} from Java, outside
 * any native frame, to fill the region the native decoder asked for: a blocking read here
 * parks a virtual thread without pinning its carrier.
 *
 * <p>Implementations move at most {@code dst.byteSize()} bytes into the front of {@code dst}
 * and return the count ({@code -1} at end of input, never 0 for a non-empty {@code dst}); they
 * throw to report a failure having moved nothing, so that the next read resumes where this
 * one stopped (docs/spec/stream.md §Transport rules).
 */
public abstract class Source {
    /** Largest transfer asked of a channel in one call (a {@code ByteBuffer} holds at most 2 GiB). */
    static final long MAX_CHANNEL_TRANSFER = 1L << 30;
    /** Size of the one reusable chunk a stream source bounces through. */
    public static final int CHUNK_BYTES = 64 * 1024;

    private final Closeable onClose;
    private boolean closed;

    /** @param onClose closes the underlying source when the reader closes, or null */
    protected Source(Closeable onClose) {
        this.onClose = onClose;
    }

    /**
     * Reads up to {@code dst.byteSize()} bytes into {@code dst}, blocking until at least one
     * byte is there or the input ended.
     *
     * @param dst native memory the decoder owns, valid for this call only
     * @return bytes moved (≥ 1), or -1 at end of input
     * @throws IOException to fail having moved nothing
     */
    protected abstract int read(MemorySegment dst) throws IOException;

    /** Closes the underlying source once (later calls do nothing). */
    final void close() throws IOException {
        if (!closed) {
            closed = true;
            if (onClose != null) {
                onClose.close();
            }
        }
    }

    /**
     * A channel read straight into the native region (no heap bounce). A blocking channel
     * blocks in {@code read}; a channel returning 0 is asked again after a spin (a
     * non-blocking channel is refused when the reader is made).
     */
    public static Source of(ReadableByteChannel channel, Closeable onClose) {
        Objects.requireNonNull(channel, "channel");
        return new Source(onClose) {
            @Override
            protected int read(MemorySegment dst) throws IOException {
                ByteBuffer bb = dst.asSlice(0, Math.min(dst.byteSize(), MAX_CHANNEL_TRANSFER)).asByteBuffer();
                for (int zeros = 0; ; zeros++) {
                    int n = channel.read(bb);
                    if (n != 0) {
                        return n < 0 ? -1 : n;
                    }
                    if (channel instanceof SelectableChannel sc && !sc.isBlocking()) {
                        throw new IOException("the channel was switched to non-blocking mode; Hurray readers need a "
                                + "blocking channel");
                    }
                    // 0 is not end of input: ask again, backing off so that a channel that keeps
                    // returning 0 does not hold a core (an interrupt ends the wait).
                    backOff(zeros, "channel");
                }
            }
        };
    }

    /**
     * The wait before asking a {@code what} ("channel", "stream") again after its
     * {@code zeros}-th read in a row that returned no bytes: a spin hint for the first 1,000,
     * then 1 ms sleeps.
     *
     * @throws java.io.InterruptedIOException if the thread is interrupted while it sleeps (the
     *     interrupt status is kept)
     */
    private static void backOff(int zeros, String what) throws java.io.InterruptedIOException {
        if (zeros < 1000) {
            Thread.onSpinWait();
            return;
        }
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while the " + what + " returned no bytes");
        }
    }

    /** An {@code InputStream} read through one reusable 64 KiB chunk. */
    public static Source of(InputStream in, Closeable onClose) {
        Objects.requireNonNull(in, "in");
        byte[] chunk = new byte[CHUNK_BYTES];
        return new Source(onClose) {
            @Override
            protected int read(MemorySegment dst) throws IOException {
                int want = (int) Math.min(dst.byteSize(), chunk.length);
                for (int zeros = 0; ; zeros++) {
                    int n = in.read(chunk, 0, want);
                    if (n < 0) {
                        return -1;
                    }
                    if (n > 0) {
                        MemorySegment.copy(chunk, 0, dst, ValueLayout.JAVA_BYTE, 0, n);
                        return n;
                    }
                    // InputStream.read returns 0 only for a 0-byte request; ask again rather
                    // than report end of input, backing off as for a channel so that a stream
                    // that keeps returning 0 does not hold a core (an interrupt ends the wait).
                    backOff(zeros, "stream");
                }
            }
        };
    }

    /** Bytes of a segment (native or heap), read once from start to end. */
    public static Source of(MemorySegment src) {
        Objects.requireNonNull(src, "src");
        return new Source(null) {
            private long pos;

            @Override
            protected int read(MemorySegment dst) {
                long n = Math.min(Math.min(dst.byteSize(), src.byteSize() - pos), Integer.MAX_VALUE);
                if (n == 0) {
                    return -1;
                }
                MemorySegment.copy(src, pos, dst, 0, n);
                pos += n;
                return (int) n;
            }
        };
    }
}
