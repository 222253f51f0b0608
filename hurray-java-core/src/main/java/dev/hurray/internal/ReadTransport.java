package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.ffm.HurrayTransportReadFn;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.util.Objects;

/**
 * A byte source behind a native reader's {@code read} callback. Implementations move at most
 * {@code dst.byteSize()} bytes into {@code dst} and return the count, 0 meaning end of input
 * (seed 000 rules 1 and 2); they throw to report a failure having moved nothing (rule 3).
 */
public abstract class ReadTransport extends Transport {
    /** Largest transfer asked of a channel in one call (a {@code ByteBuffer} holds at most 2 GiB). */
    static final long MAX_CHANNEL_TRANSFER = 1L << 30;
    /** Size of the one reusable chunk a stream source bounces through. */
    public static final int CHUNK_BYTES = 64 * 1024;
    /** The shared {@code read} stub (see {@link Transport} on upcall stubs). */
    static final MemorySegment READ_STUB = HurrayTransportReadFn.allocate(ReadTransport::dispatch, Arena.global());

    /** @param onClose closes the source when the native reader releases the transport, or null */
    protected ReadTransport(Closeable onClose) {
        super(onClose);
    }

    /**
     * Reads up to {@code dst.byteSize()} bytes into {@code dst}.
     *
     * @return the number of bytes moved, {@code 0} only at end of input
     * @throws Exception to fail having moved nothing
     */
    protected abstract long read(MemorySegment dst) throws Exception;

    /** The shared stub's target: finds the transport by {@code ctx}. Never throws. */
    private static int dispatch(MemorySegment ctx, MemorySegment dst, long len, MemorySegment outFilled) {
        try {
            if (lookup(ctx) instanceof ReadTransport t) {
                return t.upcall(ctx, dst, len, outFilled);
            }
            outFilled.reinterpret(8).set(JAVA_LONG, 0, 0L);
        } catch (Throwable ignored) {
            // upcall catches everything itself; only reinterpret could get here
        }
        return Native.ERR_TRANSPORT;
    }

    /** The {@code HurrayTransportReadFn} upcall: never throws. */
    final int upcall(MemorySegment ctx, MemorySegment dst, long len, MemorySegment outFilled) {
        try {
            if (deadFailure() != null) {
                outFilled.reinterpret(8).set(JAVA_LONG, 0, 0L);
                return Native.ERR_TRANSPORT;
            }
            long n = read(dst.reinterpret(len));
            outFilled.reinterpret(8).set(JAVA_LONG, 0, n);
            return Native.OK;
        } catch (Throwable t) {
            record(t);
            try {
                outFilled.reinterpret(8).set(JAVA_LONG, 0, 0L);
            } catch (Throwable ignored) {
                // nothing more can be done without throwing into native code
            }
            return Native.ERR_TRANSPORT;
        }
    }

    /**
     * A blocking channel read straight into the native buffer (no heap bounce). A channel that
     * returns 0 is asked again: 0 is not end of input (seed 000 rule 2); -1 is.
     */
    public static ReadTransport of(ReadableByteChannel channel, Closeable onClose) {
        Objects.requireNonNull(channel, "channel");
        return new ReadTransport(onClose) {
            @Override
            protected long read(MemorySegment dst) throws IOException {
                ByteBuffer bb = dst.asSlice(0, Math.min(dst.byteSize(), MAX_CHANNEL_TRANSFER)).asByteBuffer();
                while (true) {
                    int n = channel.read(bb);
                    if (n > 0) {
                        return n;
                    }
                    if (n < 0) {
                        return 0;
                    }
                    if (channel instanceof SelectableChannel sc && !sc.isBlocking()) {
                        throw new IOException("the channel was switched to non-blocking mode; Hurray needs a blocking channel");
                    }
                    Thread.onSpinWait();
                }
            }
        };
    }

    /** An {@code InputStream} read through one reusable 64 KiB chunk. */
    public static ReadTransport of(InputStream in, Closeable onClose) {
        Objects.requireNonNull(in, "in");
        byte[] chunk = new byte[CHUNK_BYTES];
        return new ReadTransport(onClose) {
            @Override
            protected long read(MemorySegment dst) throws IOException {
                int want = (int) Math.min(dst.byteSize(), chunk.length);
                while (true) {
                    int n = in.read(chunk, 0, want);
                    if (n < 0) {
                        return 0;
                    }
                    if (n > 0) {
                        MemorySegment.copy(chunk, 0, dst, ValueLayout.JAVA_BYTE, 0, n);
                        return n;
                    }
                    // InputStream.read returns 0 only for a 0-byte request; ask again rather
                    // than report end of input.
                    Thread.onSpinWait();
                }
            }
        };
    }

    /** Bytes of a segment (native or heap), read once from start to end. */
    public static ReadTransport of(MemorySegment src) {
        Objects.requireNonNull(src, "src");
        return new ReadTransport(null) {
            private long pos;

            @Override
            protected long read(MemorySegment dst) {
                long n = Math.min(dst.byteSize(), src.byteSize() - pos);
                MemorySegment.copy(src, pos, dst, 0, n);
                pos += n;
                return n;
            }
        };
    }
}
