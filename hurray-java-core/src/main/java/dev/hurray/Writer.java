package dev.hurray;

import dev.hurray.internal.NativeDescriptor;
import dev.hurray.internal.NativeWriter;
import dev.hurray.internal.Sink;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Socket;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.WritableByteChannel;
import java.util.Objects;

/**
 * Writes a Hurray stream through the native encoder ({@code hurray_encoder_*}; docs/spec/stream.md,
 * docs/spec/c-abi.md §Decoders and encoders).
 *
 * <pre>{@code
 * try (Writer writer = Writer.of(socket); Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
 *     writer.write(t);
 * } // close() writes the end-of-stream marker
 * }</pre>
 *
 * <h2>Sinks</h2>
 * {@link #of(WritableByteChannel) channels} (written straight from native memory),
 * {@link #of(OutputStream) output streams} (through one reusable 64 KiB chunk, flushed when a
 * batch is sent), {@link #of(Socket) sockets} (the channel path when the socket has a channel)
 * and memory ({@link #toMemory()}, read back with {@link #toByteArray()}).
 *
 * <h2>Semantics: small tensors are batched</h2>
 * Like a {@code BufferedOutputStream}, a writer collects small tensors and sends them together:
 * a tensor whose payloads total at most 16 KiB is copied into the writer's native batch area
 * when {@link #write(Tensor)} returns (the tensor may be closed or changed at once), and the
 * batch is encoded and sent with one native call and one system call once
 * {@link WriterOptions#batchBytes()} (64 KiB by default) are queued, on {@link #flush()}, and on
 * {@link #finish()}/{@link #close()}. A larger tensor is sent, with everything queued before
 * it, before {@code write} returns, read in place from its own memory. Call {@link #flush()}
 * when the peer must see what was written so far (a request that waits for its answer);
 * {@code WriterOptions.defaults().withBatchBytes(0)} sends every tensor before {@code write}
 * returns. Payloads are never referenced after {@code write} returns either way.
 * {@link #finish()} writes the end-of-stream marker, and {@link #close()} does so if it was not
 * done, then closes the sink (a socket is only shut down for output).
 *
 * <p>Validation: a descriptor's rules are checked when it is built and again by the encoder.
 * Should the encoder refuse a queued tensor, the {@code write}, {@code flush} or {@code close}
 * that sends its batch throws a {@link HurrayException} naming it; that tensor is not written
 * and every other one is.
 *
 * <h2>Errors</h2>
 * Every failure is a {@link HurrayException}. When the sink throws, the status is
 * {@link Status#TRANSPORT} (or {@link Status#SINK_CLOSED} if it accepted 0 bytes) and the cause
 * is the sink's exception. If not one byte of the tensor had been written, the call can simply
 * be retried; if part of it was on the wire, the writer is <em>poisoned</em> (the stream holds a
 * truncated item that cannot be un-sent) and every later write or finish fails with
 * {@link Status#POISONED}. Output streams cannot report a partial write: a throwing
 * {@code OutputStream} is taken to have written nothing of that chunk.
 *
 * <h2>Threads</h2>
 * One writer, one thread at a time: a concurrent call, a call from inside the writer's own
 * sink, or a close during a call on another thread fails with {@link IllegalStateException}.
 * A writer may be made on one thread and used or closed on another, and it may write a tensor
 * made on another thread if the tensor owns its memory ({@link Tensor#of}, {@link
 * Tensor#allocate}, read tensors): it is read by address while pinned against closing.
 * No Java code runs inside a native call (the native encoder stages bytes; the writer sends
 * them), so a virtual thread blocked on the sink unmounts from its carrier.
 */
public final class Writer implements AutoCloseable {
    private final NativeWriter nativeWriter;
    private final Sink.Memory memory;
    private final HandleGuard guard = new HandleGuard("writer");
    private boolean finished;

    private Writer(NativeWriter nativeWriter, Sink.Memory memory) {
        this.nativeWriter = nativeWriter;
        this.memory = memory;
        nativeWriter.watch(this, "Writer");
    }

    private static Writer open(Sink transport, WriterOptions options) throws HurrayException {
        Objects.requireNonNull(options, "options");
        return new Writer(NativeWriter.open(transport, options.payloadChecksums(), options.batchBytes()),
                transport instanceof Sink.Memory m ? m : null);
    }

    /** A writer to {@code out} with default options; see {@link #of(OutputStream, WriterOptions)}. */
    public static Writer of(OutputStream out) throws HurrayException {
        return of(out, WriterOptions.defaults());
    }

    /**
     * A writer to an output stream, through one reusable 64 KiB chunk; the stream is flushed
     * after each tensor and at finish. {@link #close()} closes the stream.
     *
     * <p>A payload larger than 64 KiB is copied from its own memory into the chunk. If that
     * memory maps a file that another process truncated, the copy faults; the JVM reports the
     * fault as an {@link InternalError}, which this sink turns into an {@link IOException}
     * ("reading the payload's memory faulted …", the error as its cause), as a channel's write
     * from such memory fails with one: the write throws {@link Status#TRANSPORT} with that
     * cause, the writer is poisoned (part of the stream left), and {@link #close()} succeeds.
     * This covers only the sink's copy: payloads of at most 64 KiB are copied into the
     * writer's own buffers when they are staged, and with payload checksums on the native
     * library reads every payload to checksum it; a fault there is not turned into an
     * {@code IOException} (in native code it kills the JVM, see {@link HurrayFile#map}). Do not write a
     * mapping of a file that others may truncate.
     */
    public static Writer of(OutputStream out, WriterOptions options) throws HurrayException {
        return open(Sink.of(out, out), options);
    }

    /** A writer to {@code channel} with default options; see {@link #of(WritableByteChannel, WriterOptions)}. */
    public static Writer of(WritableByteChannel channel) throws HurrayException {
        return of(channel, WriterOptions.defaults());
    }

    /**
     * A writer to a blocking channel, written straight from the payloads' native memory.
     * {@link #close()} closes the channel.
     *
     * @throws IllegalArgumentException for a non-blocking {@link SelectableChannel}
     */
    public static Writer of(WritableByteChannel channel, WriterOptions options) throws HurrayException {
        requireBlocking(channel);
        return open(Sink.of(channel, channel), options);
    }

    /** A writer to {@code socket} with default options; see {@link #of(Socket, WriterOptions)}. */
    public static Writer of(Socket socket) throws IOException {
        return of(socket, WriterOptions.defaults());
    }

    /**
     * A writer to a connected socket: through its {@link SocketChannel} when it has one, else its
     * output stream. {@link #close()} shuts the socket down for output only
     * ({@link Socket#shutdownOutput()}: the peer sees end of input), so it can still be read;
     * closing the socket is the caller's.
     *
     * @throws IllegalArgumentException if the socket's channel is non-blocking
     * @throws IOException if the socket is not connected
     */
    public static Writer of(Socket socket, WriterOptions options) throws IOException {
        Objects.requireNonNull(socket, "socket");
        Closeable shutdown = () -> {
            if (!socket.isClosed() && !socket.isOutputShutdown()) {
                socket.shutdownOutput();
            }
        };
        SocketChannel ch = socket.getChannel();
        if (ch != null) {
            requireBlocking(ch);
            return open(Sink.of(ch, shutdown), options);
        }
        return open(Sink.of(socket.getOutputStream(), shutdown), options);
    }

    /** A writer into a growable heap buffer, with default options; read it with {@link #toByteArray()}. */
    public static Writer toMemory() throws HurrayException {
        return toMemory(WriterOptions.defaults());
    }

    /** A writer into a growable heap buffer (at most 2 GiB); read it with {@link #toByteArray()}. */
    public static Writer toMemory(WriterOptions options) throws HurrayException {
        return open(Sink.toMemory(), options);
    }

    private static void requireBlocking(Object channel) {
        Objects.requireNonNull(channel, "channel");
        if (channel instanceof SelectableChannel sc && !sc.isBlocking()) {
            throw new IllegalArgumentException("the channel is in non-blocking mode; Hurray writers need a blocking "
                    + "channel (configureBlocking(true)), because a write of 0 bytes would mean a closed sink");
        }
    }

    /**
     * Writes one tensor: its descriptor and all of its buffers. A tensor read from a stream is
     * relayed with its native descriptor as is. While the write runs, the tensor cannot be
     * closed.
     *
     * @throws HurrayException see the class comment ({@link Status#TRANSPORT},
     *     {@link Status#SINK_CLOSED}, {@link Status#POISONED}, {@link Status#INVALID_STATE} after
     *     {@link #finish()})
     * @throws IllegalStateException if the tensor or the writer is closed, or the writer is in use
     * @throws WrongThreadException if the tensor wraps caller segments ({@code Tensor.wrap})
     *     confined to another thread. Memory the tensor owns (allocated, copied, read) is written
     *     from any thread: the tensor is pinned for the call and its memory read by address, so
     *     a tensor read on one thread can be relayed by a writer on another
     */
    public void write(Tensor tensor) throws HurrayException {
        Objects.requireNonNull(tensor, "tensor");
        guard.enter();
        try {
            write(nativeWriter, tensor);
        } finally {
            guard.exit();
        }
    }

    /** Stages one tensor on {@code nativeWriter}, pinned for the call (shared with TensorEncoder). */
    static void write(NativeWriter nativeWriter, Tensor tensor) throws HurrayException {
        tensor.pin();
        try {
            MemorySegment[] bufs = tensor.writeBuffers();
            if (tensor.borrowsMemory()) {
                // The caller's segments: their arena may be closed by its owner at any time.
                for (int i = 0; i < bufs.length; i++) {
                    requireUsable(bufs[i], i);
                }
            }
            // Memory the tensor owns cannot be freed while it is pinned, so any thread may
            // write it (the writer reads it by address).
            TensorDescriptor desc = tensor.descriptor();
            if (desc.isPlain()) {
                nativeWriter.writeFields(desc.fields(), desc.nameUtf8(), desc.keysUtf8(), bufs);
            } else {
                MemorySegment d = tensor.nativeDescriptor();
                if (d != null) {
                    nativeWriter.write(d, bufs);
                } else {
                    write(nativeWriter, desc.nativeTwin(), bufs);
                }
            }
        } finally {
            tensor.unpin();
        }
    }

    /**
     * Writes a composite: its head, then every member in preorder, each an ordinary tensor
     * frame (docs/spec/stream.md §Composites). Everything (roles, payloads, sparse indices) is
     * checked before the first byte; a transport failure after it poisons the writer.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (a bad role),
     *     {@link Status#DUPLICATE_NAME} (a role twice), {@link Status#CORRUPT} (bad indices),
     *     {@link Status#LIMIT_EXCEEDED} (deeper than 16, more than 1024 members), and the
     *     failures of {@link #write(Tensor)}
     * @throws IllegalStateException if a tensor or the writer is closed, or the writer is in use
     */
    public void write(Composite.Builder composite) throws HurrayException {
        Objects.requireNonNull(composite, "composite");
        guard.enter();
        try {
            composite.writeWith(nativeWriter::writeComposite);
        } finally {
            guard.exit();
        }
    }

    /**
     * Writes one tensor from a descriptor and its payloads: {@code payloads[i]} is buffer
     * {@code i} of the descriptor's buffer table and must be exactly its byte size. Native
     * segments are written in place (they must stay alive, and must not be closed by another
     * thread, until the call returns); heap segments are first copied to native memory.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (payload count differs from the
     *     buffer count, or a payload is too long), {@link Status#BUFFER_TOO_SMALL} (too short),
     *     and the failures of {@link #write(Tensor)}
     * @throws IllegalArgumentException for more than 64 payloads
     * @throws IllegalStateException if a payload's arena is closed, or the writer is closed or in use
     * @throws WrongThreadException if a payload is confined to another thread
     */
    public void write(TensorDescriptor descriptor, MemorySegment... payloads) throws HurrayException {
        Objects.requireNonNull(descriptor, "descriptor");
        if (payloads.length > NativeWriter.MAX_PAYLOADS) {
            throw new IllegalArgumentException(payloads.length + " payloads; a tensor has at most "
                    + NativeWriter.MAX_PAYLOADS + " buffers");
        }
        guard.enter();
        try {
            MemorySegment[] bufs = payloads.clone();
            long heapBytes = 0;
            for (int i = 0; i < bufs.length; i++) {
                requireUsable(bufs[i], i);
                if (!bufs[i].isNative()) {
                    heapBytes += bufs[i].byteSize();
                }
            }
            if (descriptor.isPlain() && heapBytes <= NativeWriter.STAGE_MAX_BYTES) {
                // Small heap payloads are copied once, into the writer's batch area.
                nativeWriter.writeFields(descriptor.fields(), descriptor.nameUtf8(), descriptor.keysUtf8(), bufs);
                return;
            }
            Arena copies = null;
            try {
                for (int i = 0; i < bufs.length; i++) {
                    if (!bufs[i].isNative()) {
                        if (copies == null) {
                            copies = Arena.ofConfined();
                        }
                        MemorySegment c = copies.allocate(Math.max(1, bufs[i].byteSize()), 64)
                                .asSlice(0, bufs[i].byteSize());
                        MemorySegment.copy(bufs[i], 0, c, 0, bufs[i].byteSize());
                        bufs[i] = c;
                    }
                }
                if (descriptor.isPlain()) {
                    nativeWriter.writeFields(descriptor.fields(), descriptor.nameUtf8(), descriptor.keysUtf8(), bufs);
                } else {
                    write(nativeWriter, descriptor.nativeTwin(), bufs);
                }
            } finally {
                if (copies != null) {
                    copies.close();
                }
            }
        } finally {
            guard.exit();
        }
    }

    /** Writes with the descriptor's handle if it has one, else with its encoding (no handle made). */
    private static void write(NativeWriter nativeWriter, NativeDescriptor d, MemorySegment[] bufs) throws HurrayException {
        MemorySegment h = d.handleIfPresent();
        if (h != null) {
            nativeWriter.write(h, bufs);
        } else {
            nativeWriter.writeEncoded(d.encodedBytes(), bufs);
        }
    }

    /** Checks a caller's payload segment is alive and usable from this thread (shared with HurrayFileWriter). */
    static void requireUsable(MemorySegment s, int index) {
        Objects.requireNonNull(s, "payload");
        if (!s.scope().isAlive()) {
            throw new IllegalStateException("payload " + index + ": its arena is closed");
        }
        if (!s.isAccessibleBy(Thread.currentThread())) {
            throw new WrongThreadException("payload " + index + " is confined to another thread");
        }
    }

    /**
     * Sets the stream's metadata (docs/spec/stream.md §Stream metadata): up to 256 key/value
     * entries (keys 1–256 bytes of UTF-8 without NUL, values up to 64 KiB), sent once with the
     * stream header; readers get them from {@link Reader#metadata()}. Call it before the first
     * write.
     *
     * @return this writer
     * @throws HurrayException {@link Status#INVALID_STATE} after the first write or finish;
     *     {@link Status#INVALID_ARGUMENT} (no entries, a bad key), {@link Status#LIMIT_EXCEEDED},
     *     {@link Status#DUPLICATE_NAME}
     * @throws IllegalStateException if the writer is closed or in use by another thread
     */
    public Writer metadata(java.util.Map<String, byte[]> metadata) throws HurrayException {
        Objects.requireNonNull(metadata, "metadata");
        guard.enter();
        try {
            nativeWriter.setMetadata(metadata);
            return this;
        } finally {
            guard.exit();
        }
    }

    /**
     * Sends the tensors a batching writer ({@link WriterOptions#batchBytes()} above 0) still
     * holds, and flushes the sink (an {@code OutputStream}'s {@code flush()}). A no-op for
     * bytes already sent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} with the sink's exception as cause; if
     *     part of the pending bytes had left, the writer is poisoned (the message says so)
     * @throws IllegalStateException if the writer is closed or in use by another thread
     */
    public void flush() throws HurrayException {
        guard.enter();
        try {
            nativeWriter.flush();
        } finally {
            guard.exit();
        }
    }

    /**
     * Writes the end-of-stream marker (and the stream header if nothing was written yet); a
     * reader then sees the end of the stream. Idempotent once it succeeded.
     *
     * @throws HurrayException as for {@link #write(Tensor)}
     */
    public void finish() throws HurrayException {
        guard.enter();
        try {
            if (!finished) {
                nativeWriter.finish();
                finished = true;
            }
        } finally {
            guard.exit();
        }
    }

    /**
     * Starts a new stream on the same writer: the next {@link #write} or {@link #finish()}
     * begins with a stream header, as on a new writer with the same options. The current
     * stream is forgotten, not ended: tensors a batching writer had not sent yet, the
     * finished or poisoned state, the {@link #metadata stream metadata} and, for a
     * {@link #toMemory()} writer, the bytes written so far; call {@link #finish()} first to end
     * it. For writers that produce one short stream per message (a Kafka record, a datagram):
     * one native encoder for all of them, instead of one per message. A sink that failed for
     * good (a reset connection) keeps failing.
     *
     * @throws IllegalStateException if the writer is closed or in use by another thread
     */
    public void reset() throws HurrayException {
        guard.enter();
        try {
            nativeWriter.reset();
            finished = false;
        } finally {
            guard.exit();
        }
    }

    /**
     * The bytes written so far by a {@link #toMemory()} writer (a copy; queued tensors are sent
     * first); usable before and after close.
     *
     * @throws IllegalStateException if this writer does not write to memory
     */
    public byte[] toByteArray() {
        if (memory == null) {
            throw new IllegalStateException("toByteArray() needs a writer made by Writer.toMemory()");
        }
        if (!guard.isClosed()) {
            try {
                flush();
            } catch (HurrayException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        return memory.toByteArray();
    }

    @Override
    public void close() throws HurrayException {
        if (!guard.close()) {
            return;
        }
        HurrayException failure = null;
        if (!finished) {
            try {
                nativeWriter.finish();
                finished = true;
            } catch (HurrayException e) {
                if (e.status() != Status.POISONED) {
                    failure = e;
                }
            }
        }
        try {
            nativeWriter.close();
        } catch (HurrayException e) {
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
