package dev.hurray;

import dev.hurray.internal.NativeWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Encodes a Hurray stream into pieces its caller sends, doing no I/O of its own (the native
 * encoder {@code hurray_encoder_*}, docs/spec/c-abi.md §Decoders and encoders; the format is
 * docs/spec/stream.md). The sending side of {@link TensorDecoder}: for event loops, selector
 * loops over non-blocking channels, Netty and gRPC.
 *
 * <pre>{@code
 * try (TensorEncoder encoder = TensorEncoder.create()) {
 *     encoder.encode(tensor);          // staged: small items wait to leave together
 *     encoder.finish();                // the end-of-stream marker
 *     for (TensorEncoder.Piece p : encoder.output()) {
 *         send(p.bytes());             // in order; count what left
 *     }
 *     encoder.consumed(sentBytes);
 * }
 * }</pre>
 *
 * <h2>Pieces and borrowed memory</h2>
 * {@link #encode(Tensor)} stages the stream header (before the first item), the frame, the
 * descriptor, and payloads up to the copy limit ({@link #create(WriterOptions, long)}; 16 KiB by
 * default) in the encoder's staging memory; a larger payload is <em>borrowed</em>: its piece is
 * a view of the tensor's own memory, not a copy. {@link #output()} lists the pending bytes as
 * {@link Piece}s in wire order, each saying whether it is borrowed. After sending some of them
 * the caller reports the count with {@link #consumed(long)}; the pieces are done when
 * {@link #pendingBytes()} is 0.
 * <ul>
 * <li>A staging piece is valid, on the thread that asked for it, until the next call that
 *     stages or consumes (then it throws {@link IllegalStateException}): send it, or copy it,
 *     before that.</li>
 * <li>While {@link #borrowsPayloads()} is true the tensor is pinned (it cannot be closed) and
 *     no other item can be encoded ({@link IllegalStateException}); once the borrowed bytes are
 *     consumed the pin is dropped and the tensor's memory may be reused or freed. A caller that
 *     consumes a borrowed piece before the bytes actually left (it handed them to a queue of its
 *     own) keeps the tensor open until they did.</li>
 * </ul>
 * Small tensors may stay pending: encode many, then send their pieces together (one system
 * call, or one Netty buffer). {@link WriterOptions#batchBytes()} is not used here: the caller
 * decides when to send, from {@link #pendingBytes()}.
 *
 * <h2>Batches</h2>
 * A tensor whose payloads are all within the copy limit, and 16 KiB or less in all, is copied
 * at once into the encoder's batch area and the tensor is free again when {@code encode}
 * returns, provided its descriptor fits the batch area too. One that does not (a name and
 * metadata over about 128 KiB) is staged at once on its own: its output borrows the payloads,
 * so the tensor stays pinned until they are consumed, like a large payload's
 * ({@link #borrowsPayloads()} says so). The
 * native encoder stages the queued tensors together, with one call
 * ({@code hurray_encoder_encode_batch}), at the next {@link #output()}, {@link #consumed},
 * {@link #pendingBytes()}, {@link #finish()}, composite or borrowed payload, or when the area
 * is full. The bytes are those of one call per tensor. A caller that encodes many small
 * tensors between sends should count their sizes itself rather than ask
 * {@link #pendingBytes()} after each one, which stages the queue every time.
 *
 * <h2>Selector loops</h2>
 * Non-blocking {@code SocketChannel}s use this class, not {@link Writer} (which refuses them):
 * write the pieces' {@code bytes()} with a gathering write when the channel is writable, call
 * {@code consumed(n)} with what it took, and keep {@code OP_WRITE} interest while
 * {@link #pendingBytes()} is above 0.
 *
 * <h2>Errors</h2>
 * Validation failures (a bad descriptor, payload sizes) are {@link HurrayException}s and stage
 * nothing. A queued tensor that the native encoder refuses when its batch is staged (its
 * descriptor was checked when it was built, so this is rare) is not staged, the other queued
 * tensors are, and the refusal, naming the tensor, is thrown by the call that staged the batch
 * (by the next {@code output}, {@code consumed}, {@code encode} or {@code finish} when that call
 * was {@link #pendingBytes()}); when that call was {@code encode}, its own tensor was not
 * staged either. The encoder cannot know about a failed send: a caller whose connection broke after
 * part of the output left closes the encoder (the stream on the wire is truncated, which the
 * peer reports as {@link Status#TRUNCATED}).
 *
 * <h2>Threads</h2>
 * One thread at a time, any thread (a concurrent call fails with {@link IllegalStateException}).
 * It may encode a tensor made on another thread if the tensor owns its memory (it is read by
 * address while pinned).
 */
public final class TensorEncoder implements AutoCloseable {
    /** Largest copy limit: the native encoder copies payloads of up to 64 KiB into its staging memory. */
    public static final long MAX_COPY_BYTES = 64 * 1024;
    /** The default copy limit: payloads above it are borrowed. */
    public static final long DEFAULT_COPY_BYTES = 16 * 1024;

    /**
     * One range of the pending output.
     *
     * @param bytes the bytes, from position to limit (do not modify them)
     * @param borrowed true for a view of a tensor's own memory (valid while that tensor is
     *     open), false for the encoder's staging memory (valid until the next staging or
     *     consuming call)
     */
    public record Piece(ByteBuffer bytes, boolean borrowed) {
    }

    private final NativeWriter writer;
    private final HandleGuard guard = new HandleGuard("encoder");
    /** The tensor whose payload the pending output borrows, pinned; or null. */
    private Tensor borrowedFrom;
    /** The arena of the staging pieces {@link #output()} gave out; closed at the next change. */
    private Arena piecesArena;
    /** A refusal met by {@link #pendingBytes()} staging the queue, thrown by the next call that can. */
    private HurrayException deferred;

    private TensorEncoder(NativeWriter writer) {
        this.writer = writer;
        writer.watch(this, "TensorEncoder");
    }

    /** An encoder with default options. */
    public static TensorEncoder create() throws HurrayException {
        return create(WriterOptions.defaults());
    }

    /** An encoder with {@code options} ({@link WriterOptions#payloadChecksums()}) and the default copy limit. */
    public static TensorEncoder create(WriterOptions options) throws HurrayException {
        return create(options, DEFAULT_COPY_BYTES);
    }

    /**
     * An encoder that copies payloads of up to {@code copyBytes} into its staging memory and
     * borrows larger ones. The bytes on the wire are the same whatever the limit.
     *
     * @param copyBytes 0 to {@link #MAX_COPY_BYTES}
     * @throws IllegalArgumentException for a limit outside that range
     */
    public static TensorEncoder create(WriterOptions options, long copyBytes) throws HurrayException {
        Objects.requireNonNull(options, "options");
        if (copyBytes < 0 || copyBytes > MAX_COPY_BYTES) {
            throw new IllegalArgumentException("copyBytes " + copyBytes + " is outside 0.." + MAX_COPY_BYTES);
        }
        return new TensorEncoder(NativeWriter.openDrained(options.payloadChecksums(), copyBytes));
    }

    /**
     * Sets the stream metadata sent with the stream header (docs/spec/stream.md §Stream
     * metadata; the rules of {@link Writer#metadata(Map)}): before the first item.
     *
     * @return this encoder
     * @throws HurrayException {@link Status#INVALID_STATE} after the first item, and the metadata rules
     */
    public TensorEncoder metadata(Map<String, byte[]> metadata) throws HurrayException {
        Objects.requireNonNull(metadata, "metadata");
        guard.enter();
        try {
            writer.setMetadata(metadata);
            return this;
        } finally {
            guard.exit();
        }
    }

    /**
     * Stages one tensor: its descriptor and all of its buffers (a tensor read from a stream is
     * relayed with its descriptor as is). See the class comment for which payloads are borrowed.
     *
     * @throws HurrayException validation failures (nothing staged); {@link Status#INVALID_STATE}
     *     after {@link #finish()}
     * @throws IllegalStateException while the pending output borrows a payload, if the tensor or
     *     the encoder is closed, or the encoder is in use by another thread
     */
    public void encode(Tensor tensor) throws HurrayException {
        Objects.requireNonNull(tensor, "tensor");
        guard.enter();
        try {
            beforeStaging();
            tensor.pin();
            boolean keep = false;
            try {
                Writer.write(writer, tensor);
                keep = writer.borrowsPayloads();
                if (keep) {
                    borrowedFrom = tensor;
                }
            } finally {
                if (!keep) {
                    tensor.unpin();
                }
            }
        } finally {
            guard.exit();
        }
    }

    /**
     * Stages a whole composite: its head, then every member in preorder (docs/spec/stream.md
     * §Composites). Its payloads are copied, so nothing stays borrowed.
     *
     * @throws HurrayException the failures of {@link Writer#write(Composite.Builder)}
     * @throws IllegalStateException as {@link #encode(Tensor)}
     */
    public void encode(Composite.Builder composite) throws HurrayException {
        Objects.requireNonNull(composite, "composite");
        guard.enter();
        try {
            beforeStaging();
            composite.writeWith(writer::writeComposite);
        } finally {
            guard.exit();
        }
    }

    /**
     * Stages the end-of-stream marker (and the stream header if nothing was encoded).
     * Idempotent.
     *
     * @throws IllegalStateException as {@link #encode(Tensor)}
     */
    public void finish() throws HurrayException {
        guard.enter();
        try {
            beforeStaging();
            writer.finish();
        } finally {
            guard.exit();
        }
    }

    private void beforeStaging() throws HurrayException {
        throwDeferred();
        if (borrowedFrom != null) {
            throw new IllegalStateException("the pending output borrows a tensor's payload: send it and call "
                    + "consumed() before encoding more");
        }
        closePieces();
    }

    /**
     * Bytes staged and not yet {@link #consumed}, staging queued tensors first (see the class
     * comment's Batches).
     *
     * @throws IllegalStateException if tensors are queued and the encoder is in use by another thread
     */
    public long pendingBytes() {
        if (writer.hasQueued() && !guard.isClosed()) {
            guard.enter();
            try {
                stageQueued();
            } catch (HurrayException e) {
                // Thrown by the next call that declares it; the rest of the queue is staged.
                if (deferred == null) {
                    deferred = e;
                } else {
                    deferred.addSuppressed(e);
                }
            } finally {
                guard.exit();
            }
        }
        return writer.pendingBytes();
    }

    /** Stages the queued tensors (and invalidates staging pieces given out: staging may move them). */
    private void stageQueued() throws HurrayException {
        if (writer.hasQueued()) {
            closePieces();
            writer.stageQueued();
        }
    }

    private void throwDeferred() throws HurrayException {
        HurrayException e = deferred;
        if (e != null) {
            deferred = null;
            throw e;
        }
    }

    /** True while the pending output includes a view of a tensor's payload. */
    public boolean borrowsPayloads() {
        return borrowedFrom != null;
    }

    /**
     * The pending output in wire order (at most 130 pieces: send them, consume, and ask again
     * when {@link #pendingBytes()} is still above 0). Empty when nothing is pending.
     *
     * @throws IllegalStateException if the encoder is closed or in use by another thread
     */
    public List<Piece> output() throws HurrayException {
        guard.enter();
        try {
            closePieces();
            throwDeferred();
            MemorySegment[] raw = writer.output();
            List<Piece> out = new ArrayList<>(raw.length);
            MemorySegment[] lent = borrowedFrom == null ? null : borrowedFrom.rawBuffers();
            for (MemorySegment p : raw) {
                MemorySegment own = lent == null ? null : within(lent, p);
                if (own != null) {
                    out.add(new Piece(own.asByteBuffer(), true));
                } else {
                    if (piecesArena == null) {
                        piecesArena = Arena.ofConfined();
                    }
                    out.add(new Piece(p.reinterpret(piecesArena, null).asByteBuffer(), false));
                }
            }
            return out;
        } finally {
            guard.exit();
        }
    }

    /** The part of one of {@code buffers} that {@code piece} covers (in that buffer's own scope), or null. */
    private static MemorySegment within(MemorySegment[] buffers, MemorySegment piece) {
        long a = piece.address();
        for (MemorySegment b : buffers) {
            if (b.byteSize() > 0 && a >= b.address() && a + piece.byteSize() <= b.address() + b.byteSize()) {
                return b.asSlice(a - b.address(), piece.byteSize());
            }
        }
        return null;
    }

    /**
     * Records that the first {@code n} pending bytes were sent; once the borrowed bytes are
     * among them the tensor is released (it may be closed).
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for more than {@link #pendingBytes()}
     * @throws IllegalStateException if the encoder is closed or in use by another thread
     */
    public void consumed(long n) throws HurrayException {
        guard.enter();
        try {
            closePieces();
            throwDeferred();
            writer.consume(n);
            if (borrowedFrom != null && !writer.borrowsPayloads()) {
                borrowedFrom.unpin();
                borrowedFrom = null;
            }
        } finally {
            guard.exit();
        }
    }

    private void closePieces() {
        if (piecesArena != null) {
            piecesArena.close();
            piecesArena = null;
        }
    }

    /**
     * Starts a new stream on the same encoder ({@code hurray_encoder_reset}): whatever is
     * pending or queued, the stream metadata and the finished state are dropped, a borrowed
     * tensor is released, and the next {@code encode} or {@code finish} stages a stream header
     * again, as on a new encoder with the same options. For one short stream per message (a
     * gRPC message, a datagram): one native encoder for all of them.
     *
     * @throws IllegalStateException if the encoder is closed or in use by another thread
     */
    public void reset() throws HurrayException {
        guard.enter();
        try {
            closePieces();
            deferred = null;
            if (borrowedFrom != null) {
                borrowedFrom.unpin();
                borrowedFrom = null;
            }
            writer.reset();
        } finally {
            guard.exit();
        }
    }

    /**
     * Drops whatever is pending (a stream not finished ends truncated on the wire), releases a
     * borrowed tensor, and frees the native encoder. Idempotent.
     *
     * @throws IllegalStateException if a call is in progress on another thread
     */
    @Override
    public void close() {
        try {
            if (guard.close()) {
                closePieces();
                if (borrowedFrom != null) {
                    borrowedFrom.unpin();
                    borrowedFrom = null;
                }
                try {
                    writer.close();
                } catch (HurrayException e) {
                    // Only a sink close can fail, and this encoder has none.
                    throw new IllegalStateException(e);
                }
            }
        } finally {
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }
}
