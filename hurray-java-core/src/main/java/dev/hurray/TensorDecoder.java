package dev.hurray;

import dev.hurray.internal.Native;
import dev.hurray.internal.NativeReader;
import dev.hurray.internal.SharedBatch;
import dev.hurray.internal.TensorAdopters;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;

/**
 * Decodes a Hurray stream from bytes its caller hands in, doing no I/O of its own (the native
 * decoder {@code hurray_decoder_*}, docs/spec/c-abi.md §Decoders and encoders; the format is
 * docs/spec/stream.md). It is what an event loop, a selector loop over non-blocking channels,
 * Netty or gRPC needs where {@link Reader} would block on its source.
 *
 * <pre>{@code
 * try (TensorDecoder decoder = TensorDecoder.create()) {
 *     // whenever bytes arrive (a ByteBuffer or a MemorySegment, heap or native):
 *     decoder.feed(bytes);
 *     for (Tensor next; (next = decoder.next()) != null; ) {
 *         try (Tensor t = next) {
 *             use(t);
 *         }
 *     }
 *     // when the input ends:
 *     decoder.endOfInput();
 *     decoder.next(); // Status.TRUNCATED if it ended inside an item or before the end marker
 * }
 * }</pre>
 *
 * <h2>Two ways in</h2>
 * <ul>
 * <li>{@link #feed(ByteBuffer)} / {@link #feed(MemorySegment)} take every byte they are given,
 *     copying it once: into the decoder's 64 KiB read-ahead, or, for the rest of a payload of
 *     64 KiB or more, straight into the tensor's own aligned allocation. Items completed by the
 *     bytes wait in the decoder until {@link #next()} (or {@link #nextItem()}) takes them.</li>
 * <li>The zero-copy form: {@link #inputRegion()} is the native memory the next bytes go to (the
 *     read-ahead, or the tensor's own buffer for a large payload); the caller reads into it (a
 *     {@code SocketChannel.read(region.asByteBuffer())}) and reports the count with
 *     {@link #filled(long)}.</li>
 * </ul>
 * The two may be mixed. A decoder yields either the flat view ({@link #create}: every tensor,
 * a composite as its head followed by its members, as {@link Reader#read()}) or the assembled
 * view ({@link #createForItems}: a tensor or a whole composite, as {@link Reader#nextItem()}).
 * {@link #metadata()} gives the stream metadata once the stream header is in.
 *
 * <h2>Selector loops</h2>
 * Non-blocking {@code SocketChannel}s use this class, not {@link Reader} (which refuses them):
 * on {@code OP_READ}, read into {@code inputRegion().asByteBuffer()} until the channel returns
 * 0, calling {@code filled(n)} after each read, then take items with {@code next()}; on -1 call
 * {@link #endOfInput()}. The writing side is {@link TensorEncoder}.
 *
 * <h2>Ownership</h2>
 * Each tensor or item returned is owned by the caller, who closes it; it stays valid after the
 * decoder is closed. Items decoded but not yet taken are closed by {@link #close()}.
 * {@link TensorScope#SHARED} tensors of at most 64 KiB share one shared arena per batch of up to
 * 64 tensors or 256 KiB (closing a shared arena costs a JVM-wide handshake); the batch is kept
 * across {@link #reset()}. Closing such a tensor ends it at once (its accessors throw), but a
 * segment taken from it before the close stays valid, and its memory is freed, only once every
 * tensor of its batch is closed and the batch is full or the decoder closed. The batch's arena
 * is then closed by a daemon thread of the library ({@code hurray-shared-arena-closer}), so
 * neither the decoder's thread nor the one closing the last tensor waits for the handshake
 * (while 64 batches already wait for that thread, the caller closes its own).
 *
 * <h2>Errors</h2>
 * Every stream failure is a {@link HurrayException} from the call that meets it, and it is
 * sticky: damaged bytes are {@link Status#CORRUPT} or {@link Status#INVALID_MAGIC}, a declared
 * size over the {@link ReaderOptions} limits is {@link Status#LIMIT_EXCEEDED}, and input that
 * ends ({@link #endOfInput()}) inside an item or before the end-of-stream marker is
 * {@link Status#TRUNCATED}. Bytes after the end-of-stream marker are {@link Status#CORRUPT},
 * however the input was cut: fed after the marker was decoded, the call that feeds them fails
 * (and {@link #inputRegion()} asked for then fails alike, taking no byte);
 * fed with the marker (in the same call, or before it was decoded), the call that decodes the
 * marker fails instead of reporting the end, once the tensors before it are taken. Either way
 * the failure is sticky and {@link #isEndOfStream()} is false. One input holds one stream:
 * {@link #reset()} starts the next.
 *
 * <h2>Threads</h2>
 * One thread at a time, any thread (a concurrent call fails with {@link IllegalStateException}).
 * Tensors follow {@link ReaderOptions#tensorScope()}; an {@link #inputRegion()} segment is
 * confined to the thread that asked for it.
 */
public final class TensorDecoder implements AutoCloseable {
    /** The native decoder; replaced by {@link #reset(ReaderOptions)} for other limits; null if that failed twice. */
    private NativeReader reader;
    private final TensorScope scope;
    private final boolean items;
    private final long bufferPoolBytes;
    /** The limits {@link #reader} was opened with. */
    private int maxRank;
    private long maxDescriptorBytes;
    private long maxTensorBytes;
    private boolean requirePayloadChecksums;
    private final HandleGuard guard = new HandleGuard("decoder");
    /** Tensors or items decoded and not yet taken. */
    private final ArrayDeque<AutoCloseable> ready = new ArrayDeque<>();
    private Map<String, byte[]> metadata;
    private boolean ended;
    /** Bytes that followed the end-of-stream marker in the input (a sticky CORRUPT failure), or 0. */
    private long trailing;
    private boolean inputEnded;
    /** The decoder's last poll returned NEED_INPUT: {@link #region} is where bytes go. */
    private boolean haveRegion;
    private MemorySegment region;
    /** Bytes supplied at the front of {@link #region} since that poll. */
    private long regionUsed;
    /** A poll is due because input ended since the last one. */
    private boolean endPending;
    /** The arena of the segment {@link #inputRegion()} last gave out; closed at the next poll or feed. */
    private Arena regionArena;
    /** An {@link #inputRegion()} segment is out and no feed came since: {@link #filled} may report into it. */
    private boolean regionOut;
    /**
     * The descriptor of the last tensor returned, kept across {@link #reset()}: a message per
     * stream of same-shaped tensors then shares one immutable descriptor instead of reading each.
     */
    private TensorDescriptor previous;
    /**
     * The shared arena the small {@link TensorScope#SHARED} tensors share, kept across
     * {@link #reset()} (one message per stream then still shares); null until the first.
     */
    private SharedBatch batch;
    /** The native tensors this decoder handed out (batched release, one leak check). */
    private final dev.hurray.internal.TensorLedger ledger = dev.hurray.internal.TensorLedger.create();

    private TensorDecoder(NativeReader reader, ReaderOptions options, boolean items) {
        this.reader = reader;
        this.scope = options.tensorScope();
        this.items = items;
        this.bufferPoolBytes = options.bufferPoolBytes();
        limits(options);
        reader.watch(this, "TensorDecoder");
    }

    private void limits(ReaderOptions options) {
        maxRank = options.maxRank();
        maxDescriptorBytes = options.maxDescriptorBytes();
        maxTensorBytes = options.maxTensorBytes();
        requirePayloadChecksums = options.requirePayloadChecksums();
    }

    private boolean hasLimits(ReaderOptions options) {
        return maxRank == options.maxRank() && maxDescriptorBytes == options.maxDescriptorBytes()
                && maxTensorBytes == options.maxTensorBytes() && requirePayloadChecksums == options.requirePayloadChecksums();
    }

    private static NativeReader openNative(ReaderOptions o) throws HurrayException {
        return NativeReader.open(NativeReader.noSource(), o.maxRank(), o.maxDescriptorBytes(), o.maxTensorBytes(),
                o.requirePayloadChecksums(), o.bufferPoolBytes());
    }

    /** The native decoder, unless a {@link #reset(ReaderOptions)} could not replace it. */
    private NativeReader live() {
        NativeReader r = reader;
        if (r == null) {
            throw new IllegalStateException("the decoder lost its native decoder when a reset with new limits failed; close it");
        }
        return r;
    }

    /** A flat-view decoder ({@link #next()}) with default options. */
    public static TensorDecoder create() throws HurrayException {
        return create(ReaderOptions.defaults());
    }

    /**
     * A flat-view decoder: {@link #next()} yields every tensor in stream order.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for options the library refuses
     */
    public static TensorDecoder create(ReaderOptions options) throws HurrayException {
        return open(options, false);
    }

    /**
     * An assembled-view decoder: {@link #nextItem()} yields a tensor or a whole composite with
     * its members (docs/spec/stream.md §Composites).
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for options the library refuses
     */
    public static TensorDecoder createForItems(ReaderOptions options) throws HurrayException {
        return open(options, true);
    }

    private static TensorDecoder open(ReaderOptions options, boolean items) throws HurrayException {
        Objects.requireNonNull(options, "options");
        return new TensorDecoder(openNative(options), options, items);
    }

    /**
     * Hands in every remaining byte of {@code src} (heap or direct), advancing its position to
     * its limit. The bytes are copied (see the class comment); {@code src} may be reused at once.
     *
     * @throws HurrayException a stream failure the bytes revealed (items completed before it
     *     are still returned by {@link #next()}); {@link Status#CORRUPT} for bytes after the end
     * @throws IllegalStateException after {@link #endOfInput()}, or if the decoder is closed or
     *     in use by another thread
     */
    public void feed(ByteBuffer src) throws HurrayException {
        Objects.requireNonNull(src, "src");
        guard.enter();
        try {
            MemorySegment s = MemorySegment.ofBuffer(src);
            long taken = 0;
            try {
                taken = take(s);
            } finally {
                src.position(src.position() + (int) taken);
            }
        } finally {
            guard.exit();
        }
    }

    /**
     * Hands in every byte of {@code src} (heap or native), copied as {@link #feed(ByteBuffer)}
     * copies.
     *
     * @throws HurrayException as {@link #feed(ByteBuffer)}
     * @throws IllegalStateException as {@link #feed(ByteBuffer)}, or if {@code src}'s arena is closed
     */
    public void feed(MemorySegment src) throws HurrayException {
        Objects.requireNonNull(src, "src");
        guard.enter();
        try {
            take(src);
        } finally {
            guard.exit();
        }
    }

    /** Copies {@code src} into the decoder's regions; returns the bytes taken. */
    private long take(MemorySegment src) throws HurrayException {
        if (inputEnded) {
            throw new IllegalStateException("the input was ended (endOfInput); nothing more can be fed");
        }
        // Bytes fed go where an outstanding region's would: that region is no longer valid.
        if (regionArena != null) {
            regionArena.close();
            regionArena = null;
        }
        regionOut = false;
        long at = 0;
        long size = src.byteSize();
        while (at < size) {
            if (ended || trailing > 0) {
                trailing += size - at;
                throw trailingBytes();
            }
            if (!haveRegion || regionUsed == region.byteSize()) {
                poll();
                continue;
            }
            long n = Math.min(size - at, region.byteSize() - regionUsed);
            MemorySegment.copy(src, at, region, regionUsed, n);
            at += n;
            regionUsed += n;
            live().supply(n);
        }
        return at;
    }

    /**
     * The native memory the next bytes go to: write up to its size at its start, then report
     * the count with {@link #filled(long)}. Valid, on this thread, until the decoder next
     * decodes ({@code next}, {@code feed}, another {@code inputRegion} once this one is full, or
     * {@code close}); after that it throws {@link IllegalStateException}, never touching freed
     * memory or bytes already fed, and {@link #filled(long)} refuses to report into it after a
     * {@code feed}. Decodes items already complete first (they wait for {@link #next()}).
     *
     * <p>After the end-of-stream marker, and after a stream failure, it reports what
     * {@link #feed(ByteBuffer)} of more bytes reports: the stream takes no byte after its end
     * marker, so a region asked for then is {@link Status#CORRUPT} (every call, as no byte was
     * taken: {@link #isEndOfStream()} stays true and {@link #next()} returns the items before
     * the marker, then {@code null}); a sticky failure is thrown again as it is.
     *
     * @return at least one byte of room
     * @throws HurrayException a stream failure (sticky, as every call reports it); after the
     *     end-of-stream marker, {@link Status#CORRUPT}
     * @throws IllegalStateException after {@link #endOfInput()} (as {@code feed}), or if the
     *     decoder is closed or in use by another thread
     */
    public MemorySegment inputRegion() throws HurrayException {
        guard.enter();
        try {
            if (inputEnded) {
                throw new IllegalStateException("the input was ended (endOfInput)");
            }
            while (!haveRegion || regionUsed == region.byteSize()) {
                if (ended && trailing == 0) {
                    throw new HurrayException(Status.CORRUPT, "the end-of-stream marker was decoded: the stream takes no"
                            + " byte after it (bytes after the end-of-stream marker are CORRUPT)", null);
                }
                poll();
            }
            if (regionArena == null) {
                regionArena = Arena.ofConfined();
            }
            regionOut = true;
            return region.asSlice(regionUsed).reinterpret(regionArena, null);
        } finally {
            guard.exit();
        }
    }

    /**
     * Reports {@code n} bytes written at the start of the last {@link #inputRegion()}.
     *
     * @throws IllegalArgumentException if {@code n} is negative or more than that region's size
     * @throws IllegalStateException if no region is outstanding, or the decoder is closed or in use
     */
    public void filled(long n) {
        guard.enter();
        try {
            if (!haveRegion || !regionOut) {
                throw new IllegalStateException("no input region is outstanding (call inputRegion() first; a feed"
                        + " since the last one ends it)");
            }
            if (n < 0 || n > region.byteSize() - regionUsed) {
                throw new IllegalArgumentException(n + " bytes filled, the region holds " + (region.byteSize() - regionUsed));
            }
            regionUsed += n;
            live().supply(n);
        } finally {
            guard.exit();
        }
    }

    /**
     * Reports that the input ended (a peer closed its side). The next {@link #next()} or
     * {@link #nextItem()} returns what is left, then {@code null} if the stream ended with its
     * end-of-stream marker, or throws {@link Status#TRUNCATED} if it did not. Idempotent.
     *
     * @throws IllegalStateException if the decoder is closed or in use by another thread
     */
    public void endOfInput() {
        guard.enter();
        try {
            if (!inputEnded) {
                inputEnded = true;
                endPending = true;
                live().endInput();
            }
        } finally {
            guard.exit();
        }
    }

    /**
     * The next tensor of the flat view, or {@code null} when more input is needed or the stream
     * ended ({@link #isEndOfStream()} tells which).
     *
     * @return a tensor owned by the caller (close it)
     * @throws HurrayException a stream failure (see the class comment)
     * @throws IllegalStateException on a {@link #createForItems} decoder, or if the decoder is
     *     closed or in use by another thread
     */
    public Tensor next() throws HurrayException {
        if (items) {
            throw new IllegalStateException("this decoder yields items (createForItems): use nextItem()");
        }
        return (Tensor) take();
    }

    /**
     * The next item of the assembled view, or {@code null} when more input is needed or the
     * stream ended.
     *
     * @return an item owned by the caller (close it)
     * @throws HurrayException a stream failure, plus the composite failures of {@link Reader#nextItem()}
     * @throws IllegalStateException on a {@link #create} decoder, or if the decoder is closed or in use
     */
    public Item nextItem() throws HurrayException {
        if (!items) {
            throw new IllegalStateException("this decoder yields tensors (create): use next()");
        }
        return (Item) take();
    }

    /**
     * Moves every tensor of the flat view that the bytes given so far complete into {@code out},
     * in stream order, and returns how many: {@link #next()} until it returns {@code null}, for
     * a caller that takes tensors faster than one call each (the native decoder decodes them in
     * batches either way). 0 when more input is needed or the stream ended.
     *
     * @return the number of tensors added, each owned by the caller (close it)
     * @throws HurrayException a stream failure; the tensors added to {@code out} before it stay
     *     there, owned by the caller. An exception from {@code out.add} propagates and leaves
     *     the tensor it was given with the decoder (the next call returns it)
     * @throws IllegalStateException as {@link #next()}
     */
    public int drainTo(java.util.Collection<? super Tensor> out) throws HurrayException {
        Objects.requireNonNull(out, "out");
        if (items) {
            throw new IllegalStateException("this decoder yields items (createForItems): use nextItem()");
        }
        guard.enter();
        try {
            if (trailing > 0) {
                throw trailingBytes();
            }
            int n = 0;
            while (true) {
                while (ready.isEmpty() && !ended && (!haveRegion || regionUsed > 0 || endPending)) {
                    poll();
                }
                // Taken from the queue once the collection has it: a collection that refuses it
                // (throws) leaves it for the next call, not lost and never closed.
                Tensor t = (Tensor) ready.peek();
                if (t == null) {
                    return n;
                }
                out.add(t);
                ready.poll();
                n++;
            }
        } finally {
            guard.exit();
        }
    }

    /**
     * Starts a new stream on the same decoder ({@code hurray_decoder_reset}): buffered input,
     * a partly decoded item, the stream metadata, the end of the input and a sticky failure are
     * dropped, and items decoded but not taken are closed, as on a new decoder with the same
     * options. Tensors already returned stay valid. For one short stream per message (a gRPC
     * message, a datagram): one native decoder for all of them. The last tensor's descriptor is
     * kept, so the next stream's tensor shares it when its encoded descriptor is the same.
     *
     * @throws IllegalStateException if the decoder is closed or in use by another thread
     */
    public void reset() throws HurrayException {
        guard.enter();
        try {
            dropStream();
            live().reset();
        } finally {
            guard.exit();
        }
    }

    /**
     * {@link #reset()} with new limits for the next stream: {@code options}' rank, descriptor
     * and tensor limits and payload checksum requirement apply from the next byte on, as on a
     * new decoder made with them. For one message per stream whose limits follow the message
     * (a record of {@code n} bytes may declare at most {@code n} bytes). With the limits the
     * decoder already has, this is {@link #reset()}; with others, the native decoder is reset
     * and given them (it is handed back to the library's idle decoders and taken again,
     * {@code hurray_decoder_set_options}), which makes no new native decoder.
     *
     * @param options the new limits; its tensor scope and buffer pool cap must be this decoder's
     * @throws IllegalArgumentException if {@code options} has another tensor scope or pool cap
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for limits the library refuses
     *     (the decoder keeps its old limits, reset)
     * @throws IllegalStateException if the decoder is closed or in use by another thread
     */
    public void reset(ReaderOptions options) throws HurrayException {
        Objects.requireNonNull(options, "options");
        if (options.tensorScope() != scope || options.bufferPoolBytes() != bufferPoolBytes) {
            throw new IllegalArgumentException("reset(options) changes limits only: the decoder's tensor scope "
                    + scope + " and buffer pool cap " + bufferPoolBytes + " stay (got " + options.tensorScope() + ", "
                    + options.bufferPoolBytes() + ")");
        }
        guard.enter();
        try {
            dropStream();
            NativeReader old = live();
            if (hasLimits(options)) {
                old.reset();
                return;
            }
            // Close resets the native decoder and makes it idle; opening with the new limits
            // takes it again and sets them. The ledger, and the tensors it tracks, stay.
            reader = null;
            old.close();
            NativeReader fresh;
            try {
                fresh = openNative(options);
            } catch (HurrayException | RuntimeException | Error e) {
                // Refused: back to the old limits, which a decoder was opened with before.
                ReaderOptions was = options.withMaxRank(maxRank).withMaxDescriptorBytes(maxDescriptorBytes)
                        .withMaxTensorBytes(maxTensorBytes).withRequirePayloadChecksums(requirePayloadChecksums);
                try {
                    reader = openNative(was);
                    reader.watch(this, "TensorDecoder");
                } catch (HurrayException | RuntimeException | Error again) {
                    e.addSuppressed(again);
                }
                throw e;
            }
            reader = fresh;
            fresh.watch(this, "TensorDecoder");
            limits(options);
        } finally {
            guard.exit();
        }
    }

    /** Forgets the current stream on the Java side: waiting and read-ahead tensors closed, state cleared. */
    private void dropStream() {
        closeReady();
        closePending();
        if (regionArena != null) {
            regionArena.close();
            regionArena = null;
        }
        metadata = null;
        ended = false;
        trailing = 0;
        inputEnded = false;
        haveRegion = false;
        region = null;
        regionUsed = 0;
        endPending = false;
    }

    /**
     * Destroys the tensors the native decoder's last batch decoded ahead and nobody took (a
     * stream reset or closed after its first tensors): each result owns its native tensor.
     */
    private void closePending() {
        NativeReader r = reader;
        if (r == null) {
            return;
        }
        r.dropPending();
    }

    private void closeReady() {
        for (AutoCloseable c; (c = ready.poll()) != null;) {
            try {
                c.close();
            } catch (Exception e) {
                // Tensor and Item close throw only unchecked exceptions on misuse; keep closing.
            }
        }
    }

    private AutoCloseable take() throws HurrayException {
        guard.enter();
        try {
            if (trailing > 0) {
                throw trailingBytes();
            }
            while (ready.isEmpty() && !ended && (!haveRegion || regionUsed > 0 || endPending)) {
                poll();
            }
            return ready.poll();
        } finally {
            guard.exit();
        }
    }

    /**
     * The stream metadata (docs/spec/stream.md §Stream metadata), or {@code null} while the
     * stream header is not complete. Empty when the stream has none.
     *
     * @return an unmodifiable map of copies, or null
     * @throws HurrayException a stream failure
     * @throws IllegalStateException if the decoder is closed or in use by another thread
     */
    public Map<String, byte[]> metadata() throws HurrayException {
        guard.enter();
        try {
            while (metadata == null && (!haveRegion || regionUsed > 0 || endPending)) {
                poll();
            }
            return metadata;
        } finally {
            guard.exit();
        }
    }

    /**
     * True when the decoder has used every byte it was given and needs more to make progress:
     * nothing waits to be taken and the stream has not ended.
     */
    public boolean needsInput() {
        return ready.isEmpty() && !ended && !endPending && trailing == 0 && (!haveRegion || regionUsed == 0);
    }

    /**
     * True once the end-of-stream marker was decoded and no byte followed it. Items decoded
     * before it may still wait for {@link #next()}.
     */
    public boolean isEndOfStream() {
        return ended && trailing == 0;
    }

    /**
     * One step of the native decoder with the bytes supplied so far: the header first, then
     * items into {@link #ready}; NEED_INPUT leaves the new region in {@link #region}.
     */
    private void poll() throws HurrayException {
        if (trailing > 0) {
            throw trailingBytes();
        }
        haveRegion = false;
        regionUsed = 0;
        endPending = false;
        if (regionArena != null) {
            regionArena.close();
            regionArena = null;
        }
        int rc;
        NativeReader reader = live();
        if (metadata == null) {
            rc = reader.poll(NativeReader.POLL_HEADER);
            if (rc == Native.OK) {
                metadata = Collections.unmodifiableMap(reader.headerMetadata());
                return;
            }
        } else if (items) {
            rc = reader.poll(NativeReader.POLL_ITEM);
            if (rc == Native.OK) {
                ready.add(Reader.item(reader.item(), scope));
                return;
            }
        } else {
            rc = reader.poll(NativeReader.POLL_TENSOR);
            if (rc == Native.OK) {
                Tensor t;
                long payload;
                if (scope == TensorScope.SHARED && (payload = reader.payloadBytes()) <= SharedBatch.MAX_TENSOR_BYTES) {
                    if (batch == null || !batch.fits(payload)) {
                        releaseBatch();
                        batch = new SharedBatch();
                    }
                    t = TensorAdopters.fromDecodedShared(reader, batch, payload, previous, ledger);
                } else {
                    t = TensorAdopters.fromDecoded(reader, scope, previous, ledger);
                }
                previous = t.descriptor();
                ready.add(t);
                return;
            }
        }
        if (rc == NativeReader.NEED_INPUT) {
            region = reader.inputRegion();
            haveRegion = true;
        } else if ((trailing = reader.buffered()) > 0) {
            throw trailingBytes();
        } else {
            ended = true;
        }
    }

    private HurrayException trailingBytes() {
        return new HurrayException(Status.CORRUPT, trailing + " bytes after the end-of-stream marker", null);
    }

    /** Lets go of the current shared batch: its memory is freed once its tensors are closed. */
    private void releaseBatch() {
        if (batch != null) {
            SharedBatch b = batch;
            batch = null;
            b.release();
        }
    }

    /**
     * Closes the items decoded and not taken, and frees the native decoder. Idempotent. Tensors
     * already returned stay valid.
     *
     * @throws IllegalStateException if a call is in progress on another thread
     */
    @Override
    public void close() {
        try {
            if (guard.close()) {
                closeReady();
                closePending();
                if (regionArena != null) {
                    regionArena.close();
                    regionArena = null;
                }
                releaseBatch();
                try {
                    ledger.readerClosed();
                    if (reader != null) {
                        reader.close();
                    }
                } catch (HurrayException e) {
                    // Only a source close can fail, and this decoder has none.
                    throw new IllegalStateException(e);
                }
            }
        } finally {
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }
}
