package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.ffm.HurrayTransportReadAtFn;
import dev.hurray.ffm.HurrayTransportSizeFn;
import java.io.Closeable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Objects;

/**
 * A random-access byte source behind a native container reader's {@code read_at} and
 * {@code size} callbacks (a container is addressed rather than consumed: docs/spec/c-abi.md
 * §Transports, docs/spec/hrryfile.md §4). Implementations move at most {@code dst.byteSize()} bytes
 * read at an absolute offset and return the count (fewer is normal; 0 only at or past the end);
 * they throw to report a failure having moved nothing, which the upcall turns into
 * {@code HURRAY_ERR_TRANSPORT} with the exception recorded for the Java caller.
 */
public abstract class ReadAtTransport extends Transport {
    /** The shared {@code read_at} stub (see {@link Transport} on upcall stubs). */
    static final MemorySegment READ_AT_STUB =
            HurrayTransportReadAtFn.allocate(ReadAtTransport::dispatchReadAt, Arena.global());
    /** The shared {@code size} stub (see {@link Transport} on upcall stubs). */
    static final MemorySegment SIZE_STUB =
            HurrayTransportSizeFn.allocate(ReadAtTransport::dispatchSize, Arena.global());

    /** @param onClose closes the source when the native reader releases the transport, or null */
    protected ReadAtTransport(Closeable onClose) {
        super(onClose);
    }

    /**
     * Reads up to {@code dst.byteSize()} bytes starting at byte {@code offset}.
     *
     * @return bytes moved; 0 only when {@code offset} is at or past the end
     * @throws Exception to fail having moved nothing
     */
    protected abstract long readAt(long offset, MemorySegment dst) throws Exception;

    /**
     * The source's total size in bytes.
     *
     * @throws Exception to fail
     */
    protected abstract long size() throws Exception;

    /** The shared {@code read_at} stub's target: finds the transport by {@code ctx}. Never throws. */
    private static int dispatchReadAt(MemorySegment ctx, long offset, MemorySegment dst, long len, MemorySegment outFilled) {
        try {
            if (lookup(ctx) instanceof ReadAtTransport t) {
                return t.upcallReadAt(ctx, offset, dst, len, outFilled);
            }
            outFilled.reinterpret(8).set(JAVA_LONG, 0, 0L);
        } catch (Throwable ignored) {
            // upcallReadAt catches everything itself; only reinterpret could get here
        }
        return Native.ERR_TRANSPORT;
    }

    /** The shared {@code size} stub's target: finds the transport by {@code ctx}. Never throws. */
    private static int dispatchSize(MemorySegment ctx, MemorySegment outSize) {
        try {
            if (lookup(ctx) instanceof ReadAtTransport t) {
                return t.upcallSize(ctx, outSize);
            }
        } catch (Throwable ignored) {
            // upcallSize catches everything itself
        }
        return Native.ERR_TRANSPORT;
    }

    /** The {@code HurrayTransportReadAtFn} upcall: never throws. */
    final int upcallReadAt(MemorySegment ctx, long offset, MemorySegment dst, long len, MemorySegment outFilled) {
        try {
            if (offset < 0 || len < 0) {
                // Beyond Long.MAX_VALUE: no Java source is that large (its size came from us).
                throw new IOException("read_at beyond 2^63 bytes (offset " + Long.toUnsignedString(offset)
                        + ", length " + Long.toUnsignedString(len) + ")");
            }
            long n = readAt(offset, dst.reinterpret(len));
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

    /** The {@code HurrayTransportSizeFn} upcall: never throws. */
    final int upcallSize(MemorySegment ctx, MemorySegment outSize) {
        try {
            long n = size();
            if (n < 0) {
                throw new IOException("the source reported a negative size " + n);
            }
            outSize.reinterpret(8).set(JAVA_LONG, 0, n);
            return Native.OK;
        } catch (Throwable t) {
            record(t);
            return Native.ERR_TRANSPORT;
        }
    }

    /**
     * Positional reads of a {@link FileChannel} ({@link FileChannel#read(ByteBuffer, long)}),
     * straight into the native destination: no heap copy, no shared position (so the channel
     * may be used by others meanwhile). Each call moves at most 1 GiB, since a
     * {@code ByteBuffer} view holds at most 2^31 − 1 bytes; the native reader loops on short
     * counts, so tensors and files over 2 GiB work.
     */
    public static ReadAtTransport of(FileChannel channel, Closeable onClose) {
        Objects.requireNonNull(channel, "channel");
        return new ReadAtTransport(onClose) {
            @Override
            protected long readAt(long offset, MemorySegment dst) throws IOException {
                long want = Math.min(dst.byteSize(), Source.MAX_CHANNEL_TRANSFER);
                if (want == 0) {
                    return 0;
                }
                ByteBuffer bb = dst.asSlice(0, want).asByteBuffer();
                int n = channel.read(bb, offset);
                return n < 0 ? 0 : n;
            }

            @Override
            protected long size() throws IOException {
                return channel.size();
            }
        };
    }
}
