package dev.hurray;

import dev.hurray.internal.NativeFileWriter;
import dev.hurray.internal.NativeWriter;
import dev.hurray.internal.Sink;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.SelectableChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * Writes an HRRYFILE container (docs/spec/hrryfile.md §5) through the native writer
 * ({@code hurray_file_writer_*}): tensors are appended one by one, each payload padded to its
 * alignment in the file, and {@link #finish()} writes the index, the file metadata and the
 * trailer. The writer only appends and never seeks, and needs no size up front, so it writes
 * into files ({@link HurrayFile#create}), pipes and sockets ({@link #of(WritableByteChannel)},
 * {@link #of(OutputStream)}) alike.
 *
 * <pre>{@code
 * try (HurrayFileWriter w = HurrayFile.create(path)) {
 *     w.add("layer0/weights", weights);            // a Tensor; named in the container
 *     w.metadata("framework", "example");
 *     w.finish();                                  // index + trailer, then rename into place
 * }
 * }</pre>
 *
 * <h2>Finish, or nothing</h2>
 * Only {@link #finish()} makes the output a container. {@link #close()} without a successful
 * finish <em>abandons</em> it: a {@link HurrayFile#create create()} writer deletes its
 * temporary file (the target path is untouched; a JVM shutdown by signal or
 * {@code System.exit} before finish or close deletes it too, through a shutdown hook), and a stream or channel is left without a
 * trailer, which every reader rejects ({@link Status#INVALID_MAGIC} or
 * {@link Status#TRUNCATED}). So a try-with-resources block that fails half way cannot leave
 * something that looks like a complete container. (This differs from the stream
 * {@link Writer}, whose close ends the stream.)
 *
 * <h2>Names</h2>
 * Names are the container's keys: every tensor needs one (1–4096 UTF-8 bytes), taken from its
 * descriptor or given to {@link #add(String, Tensor)}, and names are unique: a repeated name
 * fails at add time with {@link Status#DUPLICATE_NAME} (the writer stays usable). Readers see
 * the entries sorted by name bytes; payloads stay in add order.
 *
 * <h2>Progress</h2>
 * {@link #onProgress(ProgressListener)} registers a listener called after each tensor is added
 * and after finish, with the bytes the sink has accepted so far ({@code
 * hurray_file_writer_bytes_written}) and the number of tensors added. Payloads up to 64 KiB are
 * gathered into one staging buffer before they are written, so the byte count can lag the
 * tensors by up to that much; after finish it equals the file size.
 *
 * <h2>Errors</h2>
 * Every native failure is a {@link HurrayException}. When the sink throws, the status is
 * {@link Status#TRANSPORT} (or {@link Status#SINK_CLOSED}) with the sink's exception as cause;
 * if none of the tensor's bytes had reached the sink the tensor was not added and the call can
 * be retried, otherwise the writer is <em>poisoned</em> and every later call fails with
 * {@link Status#POISONED}. A failed {@link #finish()} can be called again and continues where it
 * stopped. An {@link OutputStream} cannot report a partial write: a throwing stream is taken to
 * have written nothing of that chunk.
 *
 * <h2>Ownership and threads</h2>
 * Nothing of a tensor or payload is retained after the call that added it; a tensor cannot be
 * closed while it is being added. The writer owns its sink and closes it in {@link #close()}.
 * One writer, one thread at a time: a concurrent call, a call from inside the writer's own
 * sink, or a close during a call on another thread fails with {@link IllegalStateException}.
 */
public final class HurrayFileWriter implements AutoCloseable {

    /** Set by {@link #abandon()}: the caller discards on purpose. */
    private boolean abandoning;

    /** Set when one of this writer's own calls failed: the caller already has that exception. */
    private boolean failed;

    /**
     * Receives write progress: called on the writing thread after each tensor is added and
     * after {@link #finish()}, outside the writer (it may call the writer's accessors). An
     * exception it throws propagates from {@code add}/{@code finish}, whose work was done
     * already; the writer stays usable.
     */
    @FunctionalInterface
    public interface ProgressListener {
        /**
         * @param bytesWritten bytes the sink has accepted so far
         * @param tensors tensors added so far
         */
        void progress(long bytesWritten, long tensors);
    }

    private final NativeFileWriter nativeWriter;
    private final HandleGuard guard = new HandleGuard("file writer");
    /** For create(): the target and the atomic output behind it; both null otherwise. */
    private final Path target;
    private final AtomicOutput output;
    private final boolean syncOnFinish;
    private volatile ProgressListener listener;
    private boolean finished;
    private boolean committed;
    private long fileSize = -1;
    private long tensors;

    private HurrayFileWriter(NativeFileWriter nativeWriter, Path target, AtomicOutput output, boolean syncOnFinish) {
        this.nativeWriter = nativeWriter;
        this.target = target;
        this.output = output;
        this.syncOnFinish = syncOnFinish;
    }

    /** A writer to {@code out} with default options; see {@link #of(OutputStream, FileWriterOptions)}. */
    public static HurrayFileWriter of(OutputStream out) throws HurrayException {
        return of(out, FileWriterOptions.defaults());
    }

    /**
     * A writer to an output stream, through one reusable 64 KiB chunk; the stream is flushed at
     * {@link #finish()} and {@link #flush()}, and closed by {@link #close()}. If making the
     * writer fails, the stream is not closed.
     *
     * @throws HurrayException {@link Status#INVALID_ALIGNMENT} for a bad minimum payload alignment
     */
    public static HurrayFileWriter of(OutputStream out, FileWriterOptions options) throws HurrayException {
        Objects.requireNonNull(out, "out");
        return open(Sink.of(out, out), options);
    }

    /** A writer to {@code channel} with default options; see {@link #of(WritableByteChannel, FileWriterOptions)}. */
    public static HurrayFileWriter of(WritableByteChannel channel) throws HurrayException {
        return of(channel, FileWriterOptions.defaults());
    }

    /**
     * A writer to a blocking channel (a pipe, a socket, a file), written straight from the
     * payloads' native memory, sequentially from the channel's current position. Offsets in
     * the container count from its first byte, so a reader needs those bytes as a file (or
     * region) of their own.
     * {@link #close()} closes the channel. If making the writer fails, the channel is not
     * closed.
     *
     * @throws IllegalArgumentException for a non-blocking {@link SelectableChannel}
     * @throws HurrayException {@link Status#INVALID_ALIGNMENT} for a bad minimum payload alignment
     */
    public static HurrayFileWriter of(WritableByteChannel channel, FileWriterOptions options) throws HurrayException {
        Objects.requireNonNull(channel, "channel");
        if (channel instanceof SelectableChannel sc && !sc.isBlocking()) {
            throw new IllegalArgumentException("the channel is in non-blocking mode; Hurray writers need a blocking "
                    + "channel (configureBlocking(true)), because a write of 0 bytes would mean a closed sink");
        }
        return open(Sink.of(channel, channel), options);
    }

    private static HurrayFileWriter open(Sink sink, FileWriterOptions options) throws HurrayException {
        Objects.requireNonNull(options, "options");
        NativeFileWriter w = NativeFileWriter.open(sink, options.payloadChecksums(), options.minPayloadAlignment());
        return new HurrayFileWriter(w, null, null, false);
    }

    /**
     * The writer behind {@link HurrayFile#create(Path, FileWriterOptions)}.
     *
     * @param wrap wraps the temporary file's channel before the writer uses it (tests inject
     *     failures this way), or null
     */
    static HurrayFileWriter create(Path path, FileWriterOptions options, UnaryOperator<WritableByteChannel> wrap)
            throws IOException {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(options, "options");
        Path target = path.toAbsolutePath();
        Path dir = target.getParent();
        if (dir == null || target.getFileName() == null) {
            throw new IOException("not a file path: " + path);
        }
        // The temporary file, its shutdown-hook registration, the refusal of directories and
        // devices and the final rename: one mechanism for every output of the library.
        AtomicOutput out = AtomicOutput.create(target);
        try {
            WritableByteChannel sink = wrap == null ? out.channel() : wrap.apply(out.channel());
            NativeFileWriter w = NativeFileWriter.open(Sink.of(sink, sink), options.payloadChecksums(),
                    options.minPayloadAlignment());
            return new HurrayFileWriter(w, target, out, options.syncOnFinish());
        } catch (IOException | RuntimeException | Error e) {
            try {
                out.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * Sets the progress listener (null removes it); see the class comment. Returns this writer.
     */
    public HurrayFileWriter onProgress(ProgressListener listener) {
        this.listener = listener;
        return this;
    }

    // ---------------------------------------------------------------- adding

    /**
     * Appends {@code tensor} under the name its descriptor carries.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for a tensor without a name,
     *     {@link Status#DUPLICATE_NAME}, {@link Status#INVALID_STATE} after {@link #finish()},
     *     and the sink failures of the class comment
     * @throws IllegalStateException if the tensor or the writer is closed, or the writer is in use
     * @throws WrongThreadException if the tensor's buffers are confined to another thread
     */
    public void add(Tensor tensor) throws HurrayException {
        Objects.requireNonNull(tensor, "tensor");
        addTensor(null, tensor);
    }

    /**
     * Appends {@code tensor} under {@code name}: its descriptor with the name replaced (the
     * tensor itself is not changed; its payloads are written as they are).
     *
     * @throws HurrayException as {@link #add(Tensor)}, and {@link Status#INVALID_ARGUMENT} or
     *     {@link Status#LIMIT_EXCEEDED} for a name the format refuses (empty, over 4096 UTF-8
     *     bytes, containing NUL)
     * @throws IllegalStateException as {@link #add(Tensor)}
     */
    public void add(String name, Tensor tensor) throws HurrayException {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(tensor, "tensor");
        addTensor(name, tensor);
    }

    private void addTensor(String name, Tensor tensor) throws HurrayException {
        long[] progress;
        guard.enter();
        try {
            requireOpen();
            tensor.pin();
            try {
                MemorySegment[] bufs = tensor.rawBuffers();
                for (int i = 0; i < bufs.length; i++) {
                    Writer.requireUsable(bufs[i], i);
                }
                MemorySegment d;
                TensorDescriptor desc = tensor.descriptor();
                if (name != null && !name.equals(desc.name().orElse(null))) {
                    d = desc.toBuilder().name(name).buildChecked().nativeHandle();
                } else {
                    d = tensor.nativeDescriptor();
                    if (d == null) {
                        d = desc.nativeHandle();
                    }
                }
                try {
                    nativeWriter.add(d, bufs);
                } catch (IOException | RuntimeException e) {
                    failed = true; // reported to the caller: close() adds nothing
                    throw e;
                }
            } finally {
                tensor.unpin();
            }
            progress = added();
        } finally {
            guard.exit();
        }
        report(progress);
    }

    /**
     * Appends one tensor from a descriptor (which carries the name) and its payloads:
     * {@code payloads[i]} is buffer {@code i} of the descriptor's buffer table and must be
     * exactly its byte size. Native segments are written in place (they must stay alive until
     * the call returns); heap segments are first copied to native memory.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (no name, payload count differs
     *     from the buffer count, a payload too long), {@link Status#BUFFER_TOO_SMALL} (too
     *     short), and the failures of {@link #add(Tensor)}
     * @throws IllegalArgumentException for more than 64 payloads
     * @throws IllegalStateException if a payload's arena is closed, or the writer is closed or in use
     * @throws WrongThreadException if a payload is confined to another thread
     */
    public void add(TensorDescriptor descriptor, MemorySegment... payloads) throws HurrayException {
        Objects.requireNonNull(descriptor, "descriptor");
        if (payloads.length > NativeWriter.MAX_PAYLOADS) {
            throw new IllegalArgumentException(payloads.length + " payloads; a tensor has at most "
                    + NativeWriter.MAX_PAYLOADS + " buffers");
        }
        long[] progress;
        guard.enter();
        try {
            requireOpen();
            MemorySegment[] bufs = payloads.clone();
            Arena copies = null;
            try {
                for (int i = 0; i < bufs.length; i++) {
                    Writer.requireUsable(bufs[i], i);
                    if (!bufs[i].isNative()) {
                        if (copies == null) {
                            copies = Arena.ofConfined();
                        }
                        MemorySegment c = copies.allocate(Math.max(1, bufs[i].byteSize()), 64).asSlice(0, bufs[i].byteSize());
                        MemorySegment.copy(bufs[i], 0, c, 0, bufs[i].byteSize());
                        bufs[i] = c;
                    }
                }
                try {
                    nativeWriter.add(descriptor.nativeHandle(), bufs);
                } catch (IOException | RuntimeException e) {
                    failed = true; // reported to the caller: close() adds nothing
                    throw e;
                }
            } finally {
                if (copies != null) {
                    copies.close();
                }
            }
            progress = added();
        } finally {
            guard.exit();
        }
        report(progress);
    }

    private void requireOpen() throws HurrayException {
        if (finished) {
            throw new HurrayException(Status.INVALID_STATE, "the container is finished; nothing more can be added", null);
        }
        if (nativeWriter.isClosed()) {
            throw new IllegalStateException("the file writer failed while committing and is closed");
        }
    }

    /** Counts a successful add and returns {bytesWritten, tensors} for the listener, or null. */
    private long[] added() throws HurrayException {
        tensors++;
        return listener == null ? null : new long[] {nativeWriter.bytesWritten(), tensors};
    }

    private void report(long[] progress) {
        ProgressListener l = listener;
        if (l != null && progress != null) {
            l.progress(progress[0], progress[1]);
        }
    }

    // ---------------------------------------------------------------- metadata, flush, finish

    /**
     * Adds a composite: the head under the builder's name (required), member {@code i} under
     * {@code name/role_i}, recursively (docs/spec/hrryfile.md). Everything is checked first;
     * a failure part-way leaves the members already added.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (no name, a bad role),
     *     {@link Status#DUPLICATE_NAME}, {@link Status#CORRUPT} (bad indices), and the failures
     *     of {@link #add(Tensor)}
     */
    public void add(Composite.Builder composite) throws HurrayException {
        java.util.Objects.requireNonNull(composite, "composite");
        guard.enter();
        try {
            requireOpen();
            try {
                composite.writeWith(nativeWriter::addComposite);
            } catch (IOException | RuntimeException e) {
                failed = true; // reported to the caller: close() adds nothing
                throw e;
            }
        } finally {
            guard.exit();
        }
    }

    /**
     * Sets a file-level metadata entry, replacing the key's previous value; the bytes are
     * copied. Readers see the entries sorted by key ({@link HurrayFile#metadata()}).
     *
     * @param key 1–4096 UTF-8 bytes
     * @param value at most 16 MiB (at most 65,536 entries and 64 MiB in all)
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (key empty or too long),
     *     {@link Status#LIMIT_EXCEEDED}, {@link Status#INVALID_STATE} after finish,
     *     {@link Status#POISONED}
     */
    public void metadata(String key, byte[] value) throws HurrayException {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        guard.enter();
        try {
            requireOpen();
            nativeWriter.setMetadata(dev.hurray.internal.Utf8.encode(key, "metadata key"), value);
        } finally {
            guard.exit();
        }
    }

    /** Sets a file-level metadata entry whose value is {@code value} in UTF-8; see {@link #metadata(String, byte[])}. */
    public void metadata(String key, String value) throws HurrayException {
        Objects.requireNonNull(value, "value");
        metadata(key, dev.hurray.internal.Utf8.encode(value, "metadata value"));
    }

    /**
     * Pushes staged bytes (header, padding, payloads up to 64 KiB) to the sink now and flushes
     * an output stream, e.g. to bound latency into a pipe. Optional: {@link #finish()} does it.
     *
     * @throws HurrayException {@link Status#TRANSPORT} / {@link Status#SINK_CLOSED}
     *     (retryable: unsent bytes stay staged), {@link Status#POISONED}
     * @throws IOException if flushing the output stream failed
     */
    public void flush() throws IOException {
        guard.enter();
        try {
            requireOpen();
            try {
                nativeWriter.flush();
            } catch (IOException | RuntimeException e) {
                failed = true; // reported to the caller: close() adds nothing
                throw e;
            }
            nativeWriter.sink().flush();
        } finally {
            guard.exit();
        }
    }

    /**
     * Completes the container: writes the index, the file metadata and the trailer
     * (docs/spec/hrryfile.md §5) and flushes the sink. For a {@link HurrayFile#create create()}
     * writer it then forces the bytes to storage (see {@link FileWriterOptions#syncOnFinish()}),
     * closes the temporary file and atomically renames it to the target path; the writer is
     * then closed. Idempotent once it succeeded.
     *
     * @return the container's size in bytes
     * @throws HurrayException {@link Status#POISONED}, {@link Status#LIMIT_EXCEEDED}, or a sink
     *     failure ({@link Status#TRANSPORT}, {@link Status#SINK_CLOSED}: call finish again to
     *     continue where it stopped)
     * @throws IOException if forcing, closing or renaming the temporary file failed; the
     *     temporary file is then deleted, the target path untouched, and the writer closed
     */
    public long finish() throws IOException {
        long[] progress;
        guard.enter();
        try {
            if (finished) {
                return fileSize;
            }
            if (nativeWriter.isClosed()) {
                throw new IllegalStateException("the file writer failed while committing and is closed");
            }
            long size;
            try {
                size = nativeWriter.finish();
                nativeWriter.sink().flush();
                if (output != null) {
                    commit();
                }
            } catch (IOException | RuntimeException e) {
                failed = true; // reported to the caller: close() adds nothing
                throw e;
            }
            finished = true;
            fileSize = size;
            progress = listener == null ? null : new long[] {size, tensors};
        } finally {
            guard.exit();
        }
        report(progress);
        return fileSize;
    }

    /** Forces, closes and renames the temporary file into place; on failure deletes it. */
    private void commit() throws IOException {
        try {
            if (syncOnFinish) {
                output.channel().force(true);
            }
            nativeWriter.close();
            output.commit(false);
            committed = true;
        } catch (IOException | RuntimeException | Error e) {
            try {
                nativeWriter.close();
            } catch (HurrayException suppressed) {
                e.addSuppressed(suppressed);
            }
            try {
                output.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** True once {@link #finish()} succeeded. */
    public boolean isFinished() {
        return finished;
    }

    /**
     * Bytes the sink has accepted so far (staged bytes not included); the file size after
     * {@link #finish()}.
     *
     * @throws IllegalStateException if the writer is closed (before finishing) or in use
     */
    public long bytesWritten() throws HurrayException {
        guard.enter();
        try {
            if (finished) {
                return fileSize;
            }
            return nativeWriter.bytesWritten();
        } finally {
            guard.exit();
        }
    }

    /** The number of tensors added so far. */
    public long count() {
        return tensors;
    }

    // ---------------------------------------------------------------- close

    /**
     * Discards everything added and closes, on purpose: as {@link #close()}, without the
     * exception {@code close()} throws for tensors that were never {@link #finish() finished}.
     * Idempotent.
     *
     * @throws IOException as {@link #close()} for a failing sink or temporary file
     */
    public void abandon() throws IOException {
        abandoning = true;
        close();
    }

    /**
     * Closes the writer and its sink. Without a successful {@link #finish()} the output is
     * abandoned (see the class comment): a {@link HurrayFile#create create()} writer deletes its
     * temporary file. Idempotent. Throws {@link IOException}s as they are, never wrapped.
     *
     * <p><b>Closing without finish() loses data, and says so.</b> When tensors were added but
     * {@code finish()} never succeeded and none of this writer's own calls failed (a failure
     * was already reported by the exception that call threw), the output is abandoned as above and then this throws
     * {@link Status#INVALID_STATE} naming how many tensors were discarded (and logs it at WARN
     * on logger {@code dev.hurray}). In a try-with-resources block whose body already threw,
     * that exception is added to the body's exception as suppressed, as Java does for every
     * failing close, so the original error stays the one thrown. Call {@link #abandon()} to
     * discard on purpose without the exception.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the sink threw (the writer is
     *     closed regardless); {@link Status#INVALID_STATE} when added tensors were discarded
     * @throws IOException if the temporary file could not be deleted
     * @throws IllegalStateException if a call is in progress on another thread (the writer
     *     stays open)
     */
    @Override
    public void close() throws IOException {
        if (!guard.close()) {
            return;
        }
        IOException failure = null;
        if (!finished && tensors > 0 && !abandoning && !failed) {
            dev.hurray.internal.Log.core().warn("hurray: file writer closed without finish(): {} tensors discarded", tensors);
            failure = new HurrayException(Status.INVALID_STATE, "the file writer was closed without finish(): " + tensors
                    + (tensors == 1 ? " tensor was" : " tensors were") + " discarded and no container was written "
                    + "(call finish() to write them, or abandon() to discard them on purpose)", null);
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
        if (output != null && !committed) {
            try {
                output.close();
            } catch (IOException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
