package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.ffm.HurrayTransportWriteFn;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.WritableByteChannel;
import java.util.Objects;

/**
 * A byte sink behind a native writer's {@code write} callback. Implementations take at least
 * one and at most {@code src.byteSize()} bytes from {@code src} and return the count (0 would
 * mean the sink is closed); they throw to report a failure having taken nothing.
 */
public abstract class WriteTransport extends Transport {
    /** The shared {@code write} stub (see {@link Transport} on upcall stubs). */
    static final MemorySegment WRITE_STUB = HurrayTransportWriteFn.allocate(WriteTransport::dispatch, Arena.global());

    /** @param onClose closes the sink when the native writer releases the transport, or null */
    protected WriteTransport(Closeable onClose) {
        super(onClose);
    }

    /**
     * Writes up to {@code src.byteSize()} bytes from {@code src}.
     *
     * @return bytes taken, at least 1 unless the sink is closed
     * @throws Exception to fail having taken nothing
     */
    protected abstract long write(MemorySegment src) throws Exception;

    /** Pushes buffered bytes to their destination after an item; called by Java, not by an upcall. */
    public void flush() throws IOException {
    }

    /** The shared stub's target: finds the transport by {@code ctx}. Never throws. */
    private static int dispatch(MemorySegment ctx, MemorySegment src, long len, MemorySegment outWritten) {
        try {
            if (lookup(ctx) instanceof WriteTransport t) {
                return t.upcall(ctx, src, len, outWritten);
            }
            outWritten.reinterpret(8).set(JAVA_LONG, 0, 0L);
        } catch (Throwable ignored) {
            // upcall catches everything itself; only reinterpret could get here
        }
        return Native.ERR_TRANSPORT;
    }

    /** The {@code HurrayTransportWriteFn} upcall: never throws. */
    final int upcall(MemorySegment ctx, MemorySegment src, long len, MemorySegment outWritten) {
        try {
            if (deadFailure() != null) {
                outWritten.reinterpret(8).set(JAVA_LONG, 0, 0L);
                return Native.ERR_TRANSPORT;
            }
            long n = write(src.reinterpret(len));
            outWritten.reinterpret(8).set(JAVA_LONG, 0, n);
            return Native.OK;
        } catch (Throwable t) {
            record(t);
            try {
                outWritten.reinterpret(8).set(JAVA_LONG, 0, 0L);
            } catch (Throwable ignored) {
                // nothing more can be done without throwing into native code
            }
            return Native.ERR_TRANSPORT;
        }
    }

    /**
     * A {@link Sink} behind the callback (the container writer): its writes and flushes are the
     * transport's, so streams and containers share one implementation of each sink kind.
     */
    public static WriteTransport of(Sink sink, Closeable onClose) {
        Objects.requireNonNull(sink, "sink");
        return new WriteTransport(onClose) {
            @Override
            protected long write(MemorySegment src) throws IOException {
                return sink.write(src);
            }

            @Override
            public void flush() throws IOException {
                sink.flush();
            }
        };
    }

    /** A blocking channel written straight from native memory ({@link Sink#of(WritableByteChannel, Closeable)}). */
    public static WriteTransport of(WritableByteChannel channel, Closeable onClose) {
        return of(Sink.of(channel, null), onClose);
    }

    /** An {@code OutputStream} through one reusable 64 KiB chunk ({@link Sink#of(OutputStream, Closeable)}). */
    public static WriteTransport of(OutputStream out, Closeable onClose) {
        return of(Sink.of(out, null), onClose);
    }
}
