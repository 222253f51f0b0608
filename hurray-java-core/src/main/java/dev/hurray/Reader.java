package dev.hurray;

import dev.hurray.internal.NativeReader;
import dev.hurray.internal.Source;
import dev.hurray.internal.TensorAdopters;
import dev.hurray.internal.TensorLedger;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.Socket;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SocketChannel;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * Reads a Hurray stream tensor by tensor through the native decoder ({@code hurray_decoder_*};
 * docs/spec/stream.md, docs/spec/c-abi.md §Decoders and encoders).
 *
 * <pre>{@code
 * try (Reader reader = Reader.of(socket)) {
 *     for (Tensor t : reader) {
 *         try (t) {
 *             float[] values = t.toFloatArray();
 *         }
 *     }
 * }
 * }</pre>
 *
 * <h2>Sources</h2>
 * {@link #of(ReadableByteChannel) channels} (read straight into the native buffer the reader
 * allocated, no heap copy), {@link #of(InputStream) input streams} (through one reusable 64 KiB
 * chunk), {@link #of(Socket) sockets} (the channel path when the socket has a channel), and
 * memory ({@link #of(MemorySegment)}, {@link #of(byte[])}). The reader allocates each buffer at
 * its declared alignment (64 bytes or more) and the source's bytes land directly in it. The
 * memory of closed tensors is reused for later ones (the buffer pool, up to
 * {@link ReaderOptions#bufferPoolBytes()}; see {@link ReaderOptions}).
 *
 * <h2>Ownership</h2>
 * The reader owns its source: {@link #close()} closes the stream or channel (a socket is only
 * shut down for input, so it can still be written). Every {@link Tensor} returned is owned by
 * the caller, who must close it; tensors stay valid after the reader is closed. Closing a tensor
 * promptly lets the reader reuse its memory; the reader's pool is freed when the reader closes.
 *
 * <h2>Errors and resumption</h2>
 * Every failure is a {@link HurrayException}. When the source throws, the status is
 * {@link Status#TRANSPORT} and the cause is the source's exception; nothing was consumed, so
 * calling {@link #read()} again resumes mid-tensor exactly where it stopped (docs/spec/stream.md
 * §Transport rules, rule 3).
 * Input ending inside an item or before the end-of-stream marker is {@link Status#TRUNCATED};
 * damaged bytes are {@link Status#CORRUPT} or {@link Status#INVALID_MAGIC}; these are sticky.
 *
 * <h2>Threads</h2>
 * One reader, one thread at a time (docs/spec/c-abi.md §Threads): a call while another thread
 * is inside the reader fails with {@link IllegalStateException}, as does calling the reader from
 * its own source. A reader may be made on one thread and used or closed on another.
 * {@link #close()} from another thread while a read is blocked is refused with
 * {@link IllegalStateException}; close the underlying source instead (the blocked read then fails
 * with {@link Status#TRANSPORT}). The tensors' thread rules follow
 * {@link ReaderOptions#tensorScope()}.
 *
 * <h2>Virtual threads and cost</h2>
 * No Java code runs inside a native call: the native decoder ({@code hurray_decoder_next_batch},
 * docs/spec/c-abi.md §Decoders and encoders) returns either tensors or the memory region the
 * next bytes must go to, and the reader fills that region from the source in Java. A virtual
 * thread blocked on the source therefore unmounts from its carrier, and interrupting it closes
 * an interruptible channel and fails the read with {@link Status#TRANSPORT}. Tensors whose
 * bytes are already buffered come back up to 64 per native call, each with its descriptor
 * fields and buffer addresses.
 */
public final class Reader implements AutoCloseable, Iterable<Tensor> {
    private final NativeReader nativeReader;
    private final TensorScope scope;
    private final HandleGuard guard = new HandleGuard("reader");
    private boolean ended;
    private java.util.Map<String, byte[]> metadata;
    /** The previous tensor's descriptor, shared when the next one encodes identically. */
    private TensorDescriptor previous;
    /** The native tensors this reader handed out (batched release, one leak check). */
    private final TensorLedger ledger = TensorLedger.create();

    private Reader(NativeReader nativeReader, TensorScope scope) {
        this.nativeReader = nativeReader;
        this.scope = scope;
        nativeReader.watch(this, "Reader");
    }

    private static Reader open(Source transport, ReaderOptions options) throws HurrayException {
        Objects.requireNonNull(options, "options");
        NativeReader r = NativeReader.open(transport, options.maxRank(), options.maxDescriptorBytes(),
                options.maxTensorBytes(), options.requirePayloadChecksums(), options.bufferPoolBytes());
        return new Reader(r, options.tensorScope());
    }

    /** A reader of {@code in} with default options; see {@link #of(InputStream, ReaderOptions)}. */
    public static Reader of(InputStream in) throws HurrayException {
        return of(in, ReaderOptions.defaults());
    }

    /**
     * A reader of an input stream, through one reusable 64 KiB chunk. {@link #close()} closes
     * the stream. If making the reader fails, the stream is not closed.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for options the library refuses
     */
    public static Reader of(InputStream in, ReaderOptions options) throws HurrayException {
        return open(Source.of(in, in), options);
    }

    /** A reader of {@code channel} with default options; see {@link #of(ReadableByteChannel, ReaderOptions)}. */
    public static Reader of(ReadableByteChannel channel) throws HurrayException {
        return of(channel, ReaderOptions.defaults());
    }

    /**
     * A reader of a blocking channel, which reads straight into the tensors' native buffers.
     * {@link #close()} closes the channel. A read that returns 0 bytes is retried, never taken
     * as end of input; -1 is end of input.
     *
     * @throws IllegalArgumentException for a non-blocking {@link SelectableChannel} (its reads
     *     return 0 when no data is ready, which a blocking reader cannot wait for)
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for options the library refuses
     */
    public static Reader of(ReadableByteChannel channel, ReaderOptions options) throws HurrayException {
        requireBlocking(channel);
        return open(Source.of(channel, channel), options);
    }

    /** A reader of {@code socket} with default options; see {@link #of(Socket, ReaderOptions)}. */
    public static Reader of(Socket socket) throws IOException {
        return of(socket, ReaderOptions.defaults());
    }

    /**
     * A reader of a connected socket: through its {@link SocketChannel} (no heap copy) when it
     * has one, else through its input stream. {@link #close()} shuts the socket down for input
     * only ({@link Socket#shutdownInput()}), so the socket stays open for writing; closing the
     * socket is the caller's.
     *
     * @throws IllegalArgumentException if the socket's channel is non-blocking
     * @throws IOException if the socket is not connected, or making the reader fails
     */
    public static Reader of(Socket socket, ReaderOptions options) throws IOException {
        Objects.requireNonNull(socket, "socket");
        Closeable shutdown = () -> {
            if (!socket.isClosed() && !socket.isInputShutdown()) {
                socket.shutdownInput();
            }
        };
        SocketChannel ch = socket.getChannel();
        if (ch != null) {
            requireBlocking(ch);
            return open(Source.of(ch, shutdown), options);
        }
        return open(Source.of(socket.getInputStream(), shutdown), options);
    }

    /** A reader of the bytes of {@code segment} with default options. */
    public static Reader of(MemorySegment segment) throws HurrayException {
        return of(segment, ReaderOptions.defaults());
    }

    /**
     * A reader of the bytes of a segment (native or heap), from offset 0 to its end. The segment
     * is not copied up front: it must stay alive and unchanged, and accessible from the reading
     * thread, until the reader is closed.
     */
    public static Reader of(MemorySegment segment, ReaderOptions options) throws HurrayException {
        return open(Source.of(segment), options);
    }

    /** A reader of {@code bytes} with default options. */
    public static Reader of(byte[] bytes) throws HurrayException {
        return of(bytes, ReaderOptions.defaults());
    }

    /** A reader of an array's bytes; the array is not copied and must not change while reading. */
    public static Reader of(byte[] bytes, ReaderOptions options) throws HurrayException {
        return open(Source.of(MemorySegment.ofArray(bytes)), options);
    }

    private static void requireBlocking(Object channel) {
        Objects.requireNonNull(channel, "channel");
        if (channel instanceof SelectableChannel sc && !sc.isBlocking()) {
            throw new IllegalArgumentException("the channel is in non-blocking mode; Hurray readers and writers need "
                    + "a blocking channel (configureBlocking(true)), because a transfer of 0 bytes would be taken "
                    + "as the end of input or a closed sink");
        }
    }

    /**
     * Reads the next tensor.
     *
     * @return a new tensor owned by the caller (close it), or {@code null} once the
     *     end-of-stream marker was read (and on every call after)
     * @throws HurrayException on failure; with {@link Status#TRANSPORT} the cause is the source's
     *     exception, and if {@link HurrayException#isRetryable()} calling again resumes
     *     mid-tensor (a dead connection is not retryable: every later call reports it again)
     * @throws IllegalStateException if the reader is closed or in use by another thread
     */
    public Tensor read() throws HurrayException {
        guard.enter();
        try {
            if (ended) {
                return null;
            }
            if (!nativeReader.next()) {
                ended = true;
                return null;
            }
            Tensor tensor = TensorAdopters.fromDecoded(nativeReader, scope, previous, ledger);
            previous = tensor.descriptor();
            return tensor;
        } finally {
            guard.exit();
        }
    }

    /**
     * Reads the next item of the assembled view: a tensor, or a whole composite with its
     * members (docs/spec/stream.md §Composites). {@link #read()} is the flat view of the same
     * stream (a head arrives as a tensor without buffers, then each member); do not mix the
     * two inside one composite.
     *
     * @return a new item owned by the caller (close it), or {@code null} at the end of stream
     * @throws HurrayException as {@link #read()}, plus {@link Status#CORRUPT} (a member count
     *     that disagrees with the members that follow), {@link Status#TRUNCATED} (the stream
     *     ends inside a composite), {@link Status#LIMIT_EXCEEDED} (nesting deeper than 16); a
     *     {@link Status#TRANSPORT} failure keeps the partial composite and calling again resumes
     * @throws IllegalStateException if the reader is closed or in use by another thread
     */
    public Item nextItem() throws HurrayException {
        guard.enter();
        try {
            if (ended) {
                return null;
            }
            MemorySegment[] it = nativeReader.nextItem();
            if (it == null) {
                ended = true;
                return null;
            }
            return item(it, scope);
        } finally {
            guard.exit();
        }
    }

    /** Takes ownership of what {@link NativeReader#nextItem()} returned (shared with TensorDecoder). */
    static Item item(MemorySegment[] it, TensorScope scope) throws HurrayException {
        return it[0] != null ? new Item(TensorAdopters.fromNative(it[0], scope, null), null)
                : new Item(null, Composite.fromNative(it[1], scope));
    }

    /**
     * A single-pass iterator over the remaining tensors. {@code hasNext()} reads ahead one
     * tensor; a failure is thrown from {@code hasNext()}/{@code next()} as an
     * {@link UncheckedIOException} whose cause is the {@link HurrayException}, and calling
     * {@code hasNext()} again retries (resuming mid-tensor after a {@link Status#TRANSPORT}
     * failure). The caller closes each tensor; iteration does not close the reader.
     */
    @Override
    public Iterator<Tensor> iterator() {
        return new Iterator<>() {
            private Tensor pending;

            @Override
            public boolean hasNext() {
                if (pending != null) {
                    return true;
                }
                try {
                    pending = read();
                } catch (HurrayException e) {
                    throw new UncheckedIOException(e);
                }
                return pending != null;
            }

            @Override
            public Tensor next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("end of stream");
                }
                Tensor t = pending;
                pending = null;
                return t;
            }
        };
    }

    /**
     * The remaining tensors as a sequential, ordered stream (failures as in {@link #iterator()}).
     * The caller closes each tensor; closing the stream does not close the reader.
     */
    public Stream<Tensor> stream() {
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(iterator(),
                Spliterator.ORDERED | Spliterator.NONNULL), false);
    }

    /**
     * The stream's metadata (docs/spec/stream.md §Stream metadata): key/value entries the writer
     * set with {@link Writer#metadata(java.util.Map)}, in order; empty when the stream has none. Reads the
     * stream header first if no tensor was read yet (so it may block, and fail, like
     * {@link #read()}).
     *
     * @return an unmodifiable map of copies
     * @throws HurrayException as {@link #read()}
     * @throws IllegalStateException if the reader is closed or in use by another thread
     */
    public java.util.Map<String, byte[]> metadata() throws HurrayException {
        guard.enter();
        try {
            if (metadata == null) {
                metadata = java.util.Collections.unmodifiableMap(nativeReader.metadata());
            }
            return metadata;
        } finally {
            guard.exit();
        }
    }

    /** True once the end-of-stream marker was read. */
    public boolean isEndOfStream() {
        return ended;
    }

    /**
     * Destroys the native reader and closes the source (see {@link #of(Socket)} for sockets).
     * Idempotent. Tensors already read stay valid.
     *
     * @throws HurrayException {@link Status#TRANSPORT} with the source's exception as cause if
     *     closing the source threw (the reader is closed regardless)
     * @throws IllegalStateException if a read is in progress on another thread (the reader
     *     stays open)
     */
    @Override
    public void close() throws HurrayException {
        try {
            if (guard.close()) {
                ledger.readerClosed();
                nativeReader.close();
            }
        } finally {
            // The leak cleaner acts once this reader is unreachable; until its decoder is handed
            // on or destroyed, this reader must not become so (it is not used after the guard).
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }
}
