package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayBufferSpec;
import dev.hurray.ffm.HurrayDecodeResult;
import dev.hurray.ffm.HurrayDecodedBuffer;
import dev.hurray.ffm.HurrayDescriptorFields;
import dev.hurray.ffm.HurrayMetadataView;
import dev.hurray.ffm.HurrayReaderOptions;
import dev.hurray.ffm.hurray_h;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native stream decoder ({@code HurrayDecoder*}, docs/spec/c-abi.md §Decoders and encoders)
 * fed from a {@link Source}.
 *
 * <p><b>No upcalls.</b> {@link #next()} calls {@code hurray_decoder_next}, which decodes from
 * the bytes it holds; when it needs more it returns {@code HURRAY_NEED_INPUT} with the region
 * to fill (its read-ahead, or the rest of a large payload in the tensor's own allocation), and
 * this class fills it with {@link Source#read} in Java, outside any native frame. So a virtual
 * thread blocked on the source unmounts from its carrier, a source that throws cannot unwind
 * through native code, and a small tensor costs one downcall: the result carries the tensor,
 * its descriptor fields, buffer pointers and metadata.
 *
 * <p><b>Memory.</b> The result struct lives in an automatic arena owned by this object; nothing
 * is allocated per call. Not thread-safe: the public {@code Reader} serialises access; any
 * thread may use it, one at a time.
 */
public final class NativeReader {
    /** {@code HURRAY_NEED_INPUT}, as {@link #poll} returns it. */
    public static final int NEED_INPUT = hurray_h.HURRAY_NEED_INPUT();
    private static final int END_OF_INPUT = hurray_h.HURRAY_DECODE_END_OF_INPUT();
    private static final int SAME_EXCEPT_NAME = hurray_h.HURRAY_FIELDS_SAME_EXCEPT_NAME();

    /** Tensors decoded per {@code hurray_decoder_next_batch} call at most. */
    static final int BATCH = 64;
    private static final long RESULT_BYTES = HurrayDecodeResult.sizeof();
    private static final int RESULT_WORDS = StructWords.index(RESULT_BYTES);
    private static final long FIELDS = HurrayDecodeResult.fields$offset();
    private static final int W_TENSOR = StructWords.index(HurrayDecodeResult.tensor$offset());
    private static final int W_BUFFERS = StructWords.index(HurrayDecodeResult.buffers$offset());
    private static final int W_BUFFER_COUNT = StructWords.index(FIELDS + HurrayDescriptorFields.buffer_count$offset());
    private static final int W_METADATA_COUNT = StructWords.index(FIELDS + HurrayDescriptorFields.metadata_count$offset());
    private static final int W_NAME = StructWords.index(FIELDS + HurrayDescriptorFields.name$offset());
    private static final int W_NAME_LEN = StructWords.index(FIELDS + HurrayDescriptorFields.name_len$offset());
    private static final int W_ENCODED = StructWords.index(FIELDS + HurrayDescriptorFields.encoded$offset());
    private static final int W_ENCODED_LEN = StructWords.index(FIELDS + HurrayDescriptorFields.encoded_len$offset());
    /** The version (16 bits) and flags (32 bits) share a word with the element type and layout. */
    private static final long VERSION_AT = FIELDS + HurrayDescriptorFields.version$offset();
    private static final long FLAGS_AT = FIELDS + HurrayDescriptorFields.flags$offset();

    private final Source source;
    /** {@link #BATCH} results of the last batch call, then one for the item, header and composite calls. */
    private final MemorySegment results;
    /** The single-call result ({@code hurray_decoder_next_item}, {@code _next_header}). */
    private final MemorySegment single;
    /** The area ({@link #results} or {@link #single}) and offset of the result of the tensor returned last. */
    private MemorySegment resultArea;
    private long resultOffset;
    /** That result as a segment of its own, made when first asked for ({@link #result()}); null until then. */
    private MemorySegment result;
    /**
     * The current result as words, copied out once ({@link #words()}) and read with array
     * loads: the per-tensor accessors then cost no segment read each, which a fresh JVM
     * interprets slowly and the compiled code checks one by one.
     */
    private final long[] words = new long[RESULT_WORDS];
    private boolean snapped;
    /**
     * Every result of the last batch as words, copied out with one call when the batch arrives
     * ({@link #snapBatch}), so that a tensor of the batch costs no native read for its result
     * or, when the batch's buffer records lie in one run, for its buffer table.
     */
    private final long[] batchWords = new long[BATCH * RESULT_WORDS];
    /** The index of the current result in {@link #batchWords}, or -1 when it is not in them. */
    private int batchIndex = -1;
    /** The batch's buffer records in one run, as words (valid while {@link #batchTableValid}). */
    private long[] batchTable = new long[BATCH * BUF_WORDS];
    /** Where result {@code i}'s records start in {@link #batchTable}, in words. */
    private final int[] batchTableAt = new int[BATCH];
    private boolean batchTableValid;
    /** Results of the last batch not yet returned: {@code pendingAt..pendingCount-1}. */
    private int pendingAt;
    private int pendingCount;
    /** The result whose {@code input}/{@code input_len} the source must fill before the next call, or null. */
    private MemorySegment toFill;
    private final MemorySegment compositeSlot;
    private final MemorySegment countSlot;
    private MemorySegment handle;
    private Leaks.Resource resource;
    /** Bytes the source put at the last input region, not yet reported to the decoder. */
    private long filled;
    private boolean inputEnded;
    /** Tensors and composites the decoder has returned so far. */
    private long emitted;
    /** The fields of the tensor returned as number {@link #lastFieldsAt}, or null. */
    private DescriptorFields lastFields;
    private long lastFieldsAt = -1;
    /** The source's first fatal failure (a reset connection), reported on every later read. */
    private Throwable dead;

    /** This reader's limits and pool cap: its decoder goes back to {@link IdleDecoders} with them. */
    private final Limits limits;
    private final long bufferPoolBytes;

    private NativeReader(Source source, MemorySegment result, MemorySegment compositeSlot, MemorySegment handle,
            Limits limits, long bufferPoolBytes) {
        this.source = source;
        this.results = result;
        this.single = result.asSlice(BATCH * RESULT_BYTES, RESULT_BYTES);
        this.resultArea = single;
        this.result = single;
        this.compositeSlot = compositeSlot;
        this.countSlot = Results.countSlot(result);
        this.handle = handle;
        this.limits = limits;
        this.bufferPoolBytes = bufferPoolBytes;
    }

    /**
     * A decoder's reader options ({@code HurrayReaderOptions} less {@code struct_size}); {@code null}
     * stands for the library's defaults, which need no options struct.
     */
    record Limits(int maxRank, long maxDescriptorBytes, long maxTensorBytes, boolean requirePayloadChecksums) {
        /** {@code null} when these are the library's defaults. */
        static Limits of(int maxRank, long maxDescriptorBytes, long maxTensorBytes, boolean requirePayloadChecksums) {
            long[] d = cachedDefaultLimits();
            if (!requirePayloadChecksums && maxRank == d[0] && maxDescriptorBytes == d[1] && maxTensorBytes == d[2]) {
                return null;
            }
            return new Limits(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums);
        }

        /** Writes these options into {@code opts} (a {@code HurrayReaderOptions}), as {@code _init} and setters would. */
        void fill(MemorySegment opts) {
            HurrayReaderOptions.struct_size(opts, (int) HurrayReaderOptions.sizeof());
            HurrayReaderOptions.max_rank(opts, maxRank);
            HurrayReaderOptions.max_descriptor_bytes(opts, maxDescriptorBytes);
            HurrayReaderOptions.max_tensor_bytes(opts, maxTensorBytes);
            HurrayReaderOptions.flags(opts, requirePayloadChecksums ? hurray_h.HURRAY_READER_REQUIRE_PAYLOAD_CHECKSUMS() : 0);
            HurrayReaderOptions.reserved(opts, 0);
        }
    }

    /** Native decoders this process has made ({@code hurray_decoder_new}), for tests and diagnostics. */
    private static final java.util.concurrent.atomic.AtomicLong DECODERS_MADE = new java.util.concurrent.atomic.AtomicLong();

    /**
     * How many native decoders readers of this process have made so far. A reader that takes an
     * idle decoder (see {@link IdleDecoders}) makes none, so readers opened and closed one after
     * another, whatever their limits, leave it unchanged after the first; for tests and
     * diagnostics.
     */
    public static long decodersMade() {
        return DECODERS_MADE.get();
    }

    /**
     * Makes a native decoder reading {@code source}, or takes an idle one (a closed reader's,
     * reset) and gives it these limits ({@code hurray_decoder_set_options}). On failure nothing is
     * kept and the source is not closed.
     *
     * @param maxRank largest accepted rank
     * @param maxDescriptorBytes largest accepted encoded descriptor, bytes
     * @param maxTensorBytes largest accepted sum of a tensor's buffer sizes, bytes
     * @param requirePayloadChecksums fail streams written without payload checksums
     * @param bufferPoolBytes cap in bytes of the decoder's buffer pool; 0 for none
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for options the library refuses
     */
    public static NativeReader open(Source source, int maxRank, long maxDescriptorBytes,
            long maxTensorBytes, boolean requirePayloadChecksums, long bufferPoolBytes) throws HurrayException {
        MemorySegment result = Results.take();
        try {
            Limits limits = Limits.of(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums);
            // The options struct, when one is needed, lives in the recycled area: no arena per reader.
            MemorySegment opts = MemorySegment.NULL;
            if (limits != null) {
                opts = Results.options(result);
                limits.fill(opts);
            }
            IdleDecoders.Idle idle = IdleDecoders.take();
            if (idle != null) {
                // A reset decoder keeps the limits it was last given: set ours unless they are those.
                if (!java.util.Objects.equals(idle.limits(), limits)) {
                    int rc = hurray_h.hurray_decoder_set_options(idle.handle(), opts);
                    if (rc != Native.OK) {
                        // Unchanged on failure: it stays idle with its own limits.
                        if (!IdleDecoders.offer(idle)) {
                            destroy(idle.handle());
                        }
                        throw Native.error(rc, null);
                    }
                }
                if (idle.bufferPoolBytes() != bufferPoolBytes) {
                    // A reset decoder's pool is empty: only its cap changes.
                    int rc = hurray_h.hurray_decoder_set_buffer_pool_bytes(idle.handle(), bufferPoolBytes);
                    if (rc != Native.OK) {
                        destroy(idle.handle());
                        throw Native.error(rc, null);
                    }
                }
                return new NativeReader(source, result, Results.compositeSlot(result), idle.handle(), limits,
                        bufferPoolBytes);
            }
            MemorySegment slot = Results.compositeSlot(result); // free until the first nextItem
            Native.check(hurray_h.hurray_decoder_new$raw(opts.address(), bufferPoolBytes, slot.address()));
            DECODERS_MADE.incrementAndGet();
            MemorySegment h = MemorySegment.ofAddress(Native.pointer(slot, 0));
            Native.setPointer(slot, 0, 0);
            return new NativeReader(source, result, Results.compositeSlot(result), h, limits, bufferPoolBytes);
        } catch (HurrayException | RuntimeException | Error e) {
            Results.give(result);
            throw e;
        }
    }

    /**
     * The library's default limits, read once they are asked for (not in a static initializer,
     * which a missing library function would turn into a NoClassDefFoundError on every later use).
     */
    private static volatile long[] defaultLimits;

    /** {@link #defaultLimits()}, read once (do not modify the array). */
    public static long[] cachedDefaultLimits() {
        long[] d = defaultLimits;
        if (d == null) {
            d = defaultLimits();
            defaultLimits = d;
        }
        return d;
    }

    /**
     * Recycled native areas for a reader's decode result ({@code HurrayDecodeResult}) plus its
     * composite out-slot and the options struct it is opened with: a reader per message (Kafka
     * records, request bodies) then makes no arena. An area goes back when its reader closes;
     * at most {@link #MAX_IDLE} wait idle, and one beyond that, or one of a reader never closed,
     * is freed by the garbage collector (the areas come from automatic arenas).
     */
    static final class Results {
        private static final long RESULTS_BYTES = (BATCH + 1) * HurrayDecodeResult.sizeof();
        private static final long SLOT_BYTES = ADDRESS.byteSize();
        private static final long BYTES = RESULTS_BYTES + 2 * SLOT_BYTES + HurrayReaderOptions.sizeof();
        static final int MAX_IDLE = 256;
        private static final java.util.concurrent.ConcurrentLinkedQueue<MemorySegment> IDLE =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        private static final java.util.concurrent.atomic.AtomicInteger IDLE_COUNT =
                new java.util.concurrent.atomic.AtomicInteger();

        private Results() {
        }

        static MemorySegment take() {
            MemorySegment m = IDLE.poll();
            if (m != null) {
                IDLE_COUNT.decrementAndGet();
                return m;
            }
            // Automatic: an area beyond MAX_IDLE that is dropped is freed by the GC.
            return Arena.ofAuto().allocate(BYTES, 8);
        }

        static MemorySegment compositeSlot(MemorySegment area) {
            return area.asSlice(RESULTS_BYTES, SLOT_BYTES);
        }

        static MemorySegment countSlot(MemorySegment area) {
            return area.asSlice(RESULTS_BYTES + SLOT_BYTES, SLOT_BYTES);
        }

        /** Room for a {@code HurrayReaderOptions}, read by the native side only during the call it is passed to. */
        static MemorySegment options(MemorySegment area) {
            return area.asSlice(RESULTS_BYTES + 2 * SLOT_BYTES, HurrayReaderOptions.sizeof());
        }

        static void give(MemorySegment area) {
            if (IDLE_COUNT.incrementAndGet() <= MAX_IDLE) {
                area.fill((byte) 0);
                IDLE.offer(area);
            } else {
                IDLE_COUNT.decrementAndGet();
            }
        }
    }

    /**
     * Decoders of closed readers, reset ({@code hurray_decoder_reset}) and kept for the next
     * reader, whatever its limits and pool cap: the taker gives the decoder its own limits
     * ({@code hurray_decoder_set_options}, NULL for the defaults) unless the decoder already has
     * them, and its own pool cap ({@code hurray_decoder_set_buffer_pool_bytes}; a reset
     * decoder's pool is empty). So a reader per message (Kafka records with per-record limits, request bodies)
     * creates no native decoder, read-ahead or pool. Each idle decoder is kept with the limits it
     * was last given, so one never reaches a reader that wants other limits with those. At most
     * {@link #MAX_IDLE} wait (each holds its 64 KiB read-ahead, no payload memory); more are
     * destroyed.
     */
    static final class IdleDecoders {
        static final int MAX_IDLE = 16;

        /** A reset decoder, its pool cap, and the limits it has now ({@code null}: the defaults). */
        record Idle(MemorySegment handle, long bufferPoolBytes, Limits limits) {
        }

        private static final java.util.concurrent.ConcurrentLinkedQueue<Idle> IDLE =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        private static final java.util.concurrent.atomic.AtomicInteger COUNT =
                new java.util.concurrent.atomic.AtomicInteger();

        private IdleDecoders() {
        }

        /**
         * An idle decoder, or null. Any pool cap will do: a reset decoder's pool is empty, so the
         * taker sets its own cap ({@code hurray_decoder_set_buffer_pool_bytes}) when it differs.
         */
        static Idle take() {
            Idle i = IDLE.poll();
            if (i != null) {
                COUNT.decrementAndGet();
            }
            return i;
        }

        /** Keeps a reset decoder; false when enough are kept (the caller destroys it). */
        static boolean offer(Idle idle) {
            if (COUNT.incrementAndGet() > MAX_IDLE) {
                COUNT.decrementAndGet();
                return false;
            }
            IDLE.offer(idle);
            return true;
        }

        /** How many decoders wait now (tests). */
        static int count() {
            return COUNT.get();
        }

        /** Destroys every idle decoder (tests: a known start whatever earlier tests left). */
        static void destroyAll() {
            for (Idle i; (i = IDLE.poll()) != null;) {
                COUNT.decrementAndGet();
                destroy(i.handle());
            }
        }
    }

    /** The default reader options of the native library: {max_rank, max_descriptor_bytes, max_tensor_bytes}. */
    public static long[] defaultLimits() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment opts = HurrayReaderOptions.allocate(a);
            hurray_h.hurray_reader_options_init$raw(opts.address());
            return new long[] {
                Integer.toUnsignedLong(HurrayReaderOptions.max_rank(opts)),
                HurrayReaderOptions.max_descriptor_bytes(opts),
                HurrayReaderOptions.max_tensor_bytes(opts)
            };
        }
    }

    /** Makes {@code r} the current result; its words are copied out when first read. */
    private void at(MemorySegment r) {
        resultArea = r;
        resultOffset = 0;
        result = r;
        snapped = false;
        tableSnapped = false;
        batchIndex = -1;
    }

    /** Makes result {@code i} of the last batch the current one, with no segment made for it. */
    private void atBatch(int i) {
        resultArea = results;
        resultOffset = i * RESULT_BYTES;
        result = null;
        snapped = false;
        tableSnapped = false;
        batchIndex = i < batchCount ? i : -1;
    }

    /** Results in {@link #batchWords} (0 when the last batch call returned none). */
    private int batchCount;

    /**
     * Copies the {@code count} results a batch call just wrote, and their buffer records when
     * they lie in one run in result order (as the library lays them out; checked here, else
     * each tensor reads its own), with one native read each.
     */
    private void snapBatch(int count) {
        int n = Math.min(count, BATCH);
        Native.words(results.address(), batchWords, n * RESULT_WORDS);
        batchCount = n;
        batchTableValid = false;
        long first = 0;
        long words = 0;
        for (int i = 0; i < n; i++) {
            int at = i * RESULT_WORDS;
            long c = batchWords[at + W_BUFFER_COUNT];
            if (c < 0 || c > MAX_TABLE_WORDS / BUF_WORDS) {
                return;
            }
            if (c > 0) {
                long p = batchWords[at + W_BUFFERS];
                if (words == 0) {
                    first = p;
                } else if (p != first + words * Long.BYTES) {
                    return;
                }
            }
            batchTableAt[i] = (int) words;
            words += c * BUF_WORDS;
            if (words > MAX_TABLE_WORDS) {
                return;
            }
        }
        if (words > batchTable.length) {
            batchTable = new long[(int) words];
        }
        if (words > 0) {
            Native.words(first, batchTable, (int) words);
        }
        batchTableValid = true;
    }

    /** Buffer records per batch copied in one run at most, in words (larger batches read per tensor). */
    private static final int MAX_TABLE_WORDS = 64 * 1024;

    /** The current result as a segment. */
    private MemorySegment result() {
        MemorySegment r = result;
        if (r == null) {
            r = resultArea.asSlice(resultOffset, RESULT_BYTES);
            result = r;
        }
        return r;
    }

    private long[] words() {
        if (!snapped) {
            if (batchIndex >= 0) {
                System.arraycopy(batchWords, batchIndex * RESULT_WORDS, words, 0, RESULT_WORDS);
            } else {
                Native.words(resultArea.address() + resultOffset, words, RESULT_WORDS);
            }
            snapped = true;
        }
        return words;
    }

    /**
     * Decodes the next tensor, reading the source (in Java) as often as the decoder asks.
     *
     * @return true with a tensor described by {@link #tensor()},
     *     {@link #encodedView()}, {@link #readFields()} and {@link #buffers(Arena)} until the next call; false at
     *     the end-of-stream marker
     * @throws HurrayException for a failure. {@link Status#TRANSPORT} carries the source's
     *     exception as its cause; nothing was consumed, so calling again resumes mid-tensor
     */
    public boolean next() throws HurrayException {
        if (pendingAt < pendingCount) {
            atBatch(pendingAt++);
            emitted++;
            return true;
        }
        return nextBatch();
    }

    /** {@link #next()} once the last batch is used up: decodes the next batch, reading the source as asked. */
    private boolean nextBatch() throws HurrayException {
        while (true) {
            fillIfAsked();
            long f = filled;
            filled = 0;
            int rc = hurray_h.hurray_decoder_next_batch$raw(handle.address(), f, inputEnded ? END_OF_INPUT : 0, results.address(),
                    BATCH, countSlot.address());
            java.lang.ref.Reference.reachabilityFence(this); // the areas above are passed by address
            if (rc == Native.OK) {
                pendingCount = (int) countSlot.get(JAVA_LONG, 0);
                pendingAt = 1;
                snapBatch(pendingCount);
                atBatch(0);
                if (HurrayDecodeResult.input_len(result()) > 0) {
                    // The decoder already said where the next bytes go: no call just to ask.
                    toFill = result();
                }
                emitted++;
                return true;
            }
            if (rc == NEED_INPUT) {
                toFill = results;
                continue;
            }
            if (rc == Native.END_OF_STREAM) {
                return false;
            }
            throw Native.error(rc, null);
        }
    }

    /** Fills the region the decoder last offered, if it offered one that is not filled yet. */
    private void fillIfAsked() throws HurrayException {
        if (toFill != null) {
            fill(toFill);
            toFill = null;
        }
    }

    /**
     * Destroys the tensors the last batch decoded ahead that nobody took (a reader closed, or a
     * push decoder reset, after the first tensors of a batch): each result owns its tensor.
     */
    public void dropPending() {
        while (pendingAt < pendingCount) {
            MemorySegment t = HurrayDecodeResult.tensor(results.asSlice(pendingAt++ * RESULT_BYTES, RESULT_BYTES));
            if (t.address() != 0) {
                NativeTensor.destroy(t);
            }
        }
    }

    /** True while tensors of the last batch are still to be returned by {@link #next()}. */
    public boolean hasPending() {
        return pendingAt < pendingCount;
    }

    /**
     * Reads the next item in the assembled view ({@code hurray_decoder_next_item}): a tensor,
     * or a whole composite read to its last member. Like {@link #next()}, the source is read in
     * Java whenever the decoder needs bytes; a {@code TRANSPORT} failure keeps the partial
     * composite and the next call resumes.
     *
     * @return {@code {tensor, null}} or {@code {null, composite}} (owned {@code HurrayTensor*}
     *     or {@code HurrayComposite*}), or {@code null} at the end-of-stream marker
     */
    public MemorySegment[] nextItem() throws HurrayException {
        if (pendingAt < pendingCount) {
            // A tensor the last batch read ahead: an item of its own.
            atBatch(pendingAt++);
            emitted++;
            return new MemorySegment[] {HurrayDecodeResult.tensor(result()), null};
        }
        while (true) {
            fillIfAsked();
            long f = filled;
            filled = 0;
            at(single);
            int rc = hurray_h.hurray_decoder_next_item(handle, f, inputEnded ? END_OF_INPUT : 0, result(), compositeSlot);
            if (rc == Native.OK) {
                emitted++;
                MemorySegment t = HurrayDecodeResult.tensor(result());
                MemorySegment c = compositeSlot.get(ADDRESS, 0);
                return new MemorySegment[] {t.equals(MemorySegment.NULL) ? null : t, c.equals(MemorySegment.NULL) ? null : c};
            }
            if (rc == NEED_INPUT) {
                toFill = single;
                continue;
            }
            if (rc == Native.END_OF_STREAM) {
                return null;
            }
            throw Native.error(rc, null);
        }
    }

    /** Fills the input region the decoder named in {@code offer} from the source (in Java, outside any native frame). */
    private void fill(MemorySegment offer) throws HurrayException {
        MemorySegment dst = Native.view(Native.pointer(offer, HurrayDecodeResult.input$offset()), HurrayDecodeResult.input_len(offer));
        int n;
        if (dead != null) {
            // A dead connection reports its failure again, never a later end of input.
            throw new HurrayException(Status.TRANSPORT, "reading the source failed", dead);
        }
        try {
            n = source.read(dst);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            // Whatever the source threw (checked, unchecked or an Error of its own) is the
            // cause; nothing was consumed, so the next call resumes here, unless the
            // connection itself is gone (HurrayException.isRetryableCause).
            if (!HurrayException.isRetryableCause(e)) {
                dead = e;
            }
            throw new HurrayException(Status.TRANSPORT, "reading the source failed", e);
        }
        if (n < 0) {
            inputEnded = true;
        } else {
            filled = n;
        }
    }

    /**
     * The stream's metadata ({@code hurray_decoder_next_header}; docs/spec/stream.md §Stream
     * metadata), reading the stream header first if needed: entries in order, copied; empty
     * when the stream has none.
     *
     * @throws HurrayException as {@link #next()}
     */
    public java.util.Map<String, byte[]> metadata() throws HurrayException {
        while (true) {
            fillIfAsked();
            long f = filled;
            filled = 0;
            int rc = hurray_h.hurray_decoder_next_header(handle, f, inputEnded ? END_OF_INPUT : 0, single);
            if (rc == Native.OK) {
                int n = (int) HurrayDescriptorFields.metadata_count(HurrayDecodeResult.fields(single));
                return NativeDescriptor.metadataOf(HurrayDecodeResult.metadata(single)
                        .reinterpret(n * HurrayMetadataView.sizeof()), n);
            }
            if (rc == NEED_INPUT) {
                toFill = single;
                continue;
            }
            throw Native.error(rc, null);
        }
    }

    // ------------------------------------------------------------ push decoding (TensorDecoder)
    // The caller does the I/O: it hands bytes in with supply/endInput and steps the decoder with
    // poll, which returns NEED_INPUT instead of reading a Source. The same result accessors
    // (tensor, readFields, buffers, item, headerMetadata) describe what poll decoded.

    /** {@link #poll} kinds: the flat view, the assembled view, the stream header. */
    public static final int POLL_TENSOR = 0;
    public static final int POLL_ITEM = 1;
    public static final int POLL_HEADER = 2;

    /** A source for a reader whose caller supplies the bytes; reading it is a bug. */
    public static Source noSource() {
        return new Source(null) {
            @Override
            protected int read(MemorySegment dst) throws IOException {
                throw new IOException("this decoder is fed by its caller");
            }
        };
    }

    /**
     * One decode step with the bytes supplied since the last one, reading nothing.
     *
     * @param kind {@link #POLL_TENSOR} ({@code hurray_decoder_next}), {@link #POLL_ITEM}
     *     ({@code _next_item}) or {@link #POLL_HEADER} ({@code _next_header})
     * @return {@link Native#OK} (a result: {@link #tensor()} and the field accessors, {@link #item()},
     *     or {@link #headerMetadata()}), {@link Status#NEED_INPUT}'s code (fill {@link #inputRegion()}),
     *     or {@link Native#END_OF_STREAM}
     * @throws HurrayException the decoder's failure (sticky), e.g. {@link Status#TRUNCATED}
     *     after {@link #endInput()} inside an item
     */
    public int poll(int kind) throws HurrayException {
        if (kind == POLL_TENSOR && pendingAt < pendingCount) {
            atBatch(pendingAt++);
            emitted++;
            return Native.OK;
        }
        long f = filled;
        filled = 0;
        int flags = inputEnded ? END_OF_INPUT : 0;
        int rc;
        if (kind == POLL_TENSOR) {
            // The flat view decodes every buffered tensor at once, as next() does.
            rc = hurray_h.hurray_decoder_next_batch$raw(handle.address(), f, flags, results.address(), BATCH, countSlot.address());
            java.lang.ref.Reference.reachabilityFence(this); // the areas above are passed by address
            batchCount = 0;
            if (rc == Native.OK) {
                pendingCount = (int) countSlot.get(JAVA_LONG, 0);
                pendingAt = 1;
                snapBatch(pendingCount);
            }
            atBatch(0);
        } else {
            at(single);
            rc = kind == POLL_ITEM ? hurray_h.hurray_decoder_next_item(handle, f, flags, single, compositeSlot)
                    : hurray_h.hurray_decoder_next_header(handle, f, flags, single);
        }
        if (rc == Native.OK && kind != POLL_HEADER) {
            emitted++;
        }
        if (rc == Native.OK || rc == NEED_INPUT || (rc == Native.END_OF_STREAM && kind != POLL_HEADER)) {
            return rc;
        }
        throw Native.error(rc, null);
    }

    /**
     * Makes the decoder ready for a new stream from its first byte ({@code hurray_decoder_reset}):
     * buffered input, a partial item, the header and a sticky failure are dropped; tensors
     * already returned stay valid. For push decoding (a caller that decodes one short stream per
     * message keeps one decoder).
     */
    public void reset() throws HurrayException {
        Native.check(hurray_h.hurray_decoder_reset(handle));
        pendingAt = 0;
        pendingCount = 0;
        batchCount = 0;
        toFill = null;
        filled = 0;
        inputEnded = false;
        at(single);
    }

    /**
     * The input bytes the decoder took and has not decoded ({@code hurray_decoder_buffered}):
     * after the end-of-stream marker, the bytes that followed it.
     */
    public long buffered() throws HurrayException {
        Native.check(hurray_h.hurray_decoder_buffered(handle, countSlot));
        return countSlot.get(JAVA_LONG, 0);
    }

    /** Where the next bytes go after {@link #poll} returned NEED_INPUT: native memory valid until the next poll. */
    public MemorySegment inputRegion() {
        return Native.view(Native.pointer(result(), HurrayDecodeResult.input$offset()), HurrayDecodeResult.input_len(result()));
    }

    /** Reports {@code n} bytes put at the front of {@link #inputRegion()}, for the next poll. */
    public void supply(long n) {
        filled += n;
    }

    /** Reports the end of the input: the next poll says whether the stream ended cleanly. */
    public void endInput() {
        inputEnded = true;
    }

    /** After a {@link #POLL_ITEM} poll returned OK: as {@link #nextItem()} returns it. */
    public MemorySegment[] item() {
        MemorySegment t = HurrayDecodeResult.tensor(result());
        MemorySegment c = compositeSlot.get(ADDRESS, 0);
        return new MemorySegment[] {t.equals(MemorySegment.NULL) ? null : t, c.equals(MemorySegment.NULL) ? null : c};
    }

    /** After a {@link #POLL_HEADER} poll returned OK: the stream metadata, as {@link #metadata()} returns it. */
    public java.util.Map<String, byte[]> headerMetadata() {
        int n = (int) HurrayDescriptorFields.metadata_count(HurrayDecodeResult.fields(result()));
        return NativeDescriptor.metadataOf(HurrayDecodeResult.metadata(result())
                .reinterpret(n * HurrayMetadataView.sizeof()), n);
    }

    /** The decoded tensor ({@code HurrayTensor*}), now owned by the caller (destroy it). */
    public MemorySegment tensor() {
        return MemorySegment.ofAddress(tensorAddress());
    }

    /** The address of {@link #tensor()}, with no segment made for it. */
    public long tensorAddress() {
        return words()[W_TENSOR];
    }

    /** The decoded tensor's encoded descriptor, as a view valid while the tensor lives. */
    public MemorySegment encodedView() {
        long[] w = words();
        return Native.view(w[W_ENCODED], w[W_ENCODED_LEN]);
    }

    /** The decoded tensor's descriptor fields, read from the result with no downcall. */
    public DescriptorFields readFields() throws HurrayException {
        long[] w = words();
        DescriptorFields fields;
        if (lastFieldsAt == emitted - 1 && (StructWords.get(w, FLAGS_AT, 4) & SAME_EXCEPT_NAME) != 0) {
            // The decoder says only the name differs from the previous tensor's descriptor.
            DescriptorFields p = lastFields;
            String name = name(w[W_NAME], w[W_NAME_LEN]);
            fields = java.util.Objects.equals(name, p.name()) ? p : new DescriptorFields(p.elementType(), p.shape(),
                    p.layout(), p.byteOffset(), p.buffers(), p.quantization(), name, p.metadata());
        } else {
            fields = decodedFields(w);
        }
        remember(fields);
        return fields;
    }

    /** Room for a name's bytes on their way into a {@code String} (one copy less than a fresh array each). */
    private byte[] nameBytes = new byte[64];

    /** The name at {@code address} ({@code length} UTF-8 bytes), or null when the address is 0 (unnamed). */
    private String name(long address, long length) {
        if (address == 0 || length > 4096) {
            return NativeDescriptor.name(address, length);
        }
        int n = (int) length;
        if (n > nameBytes.length) {
            nameBytes = new byte[Math.max(n, 2 * nameBytes.length)];
        }
        Native.copyIn(address, nameBytes, n);
        return new String(nameBytes, 0, n, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** {@link #readFields()} for a descriptor that is not the previous one but for its name: read whole. */
    private DescriptorFields decodedFields(long[] w) throws HurrayException {
        MemorySegment f = HurrayDecodeResult.fields(result());
        long buffers = w[W_BUFFER_COUNT];
        long entries = w[W_METADATA_COUNT];
        return NativeDescriptor.readDecoded(f,
                Native.view(Native.pointer(result(), HurrayDecodeResult.buffers$offset()), buffers * HurrayDecodedBuffer.sizeof()),
                Native.view(Native.pointer(result(), HurrayDecodeResult.metadata$offset()), entries * HurrayMetadataView.sizeof()),
                MemorySegment.ofAddress(Native.pointer(result(), HurrayDecodeResult.tensor$offset())));
    }

    /**
     * Notes the fields of the tensor just returned, when the caller got them without
     * {@link #readFields()} (its descriptor was byte-identical to one it already had), so that
     * the next tensor can reuse them.
     */
    public void remember(DescriptorFields fields) {
        lastFields = fields;
        lastFieldsAt = emitted;
    }

    public MemorySegment[] buffers(Arena arena) {
        return buffers(arena, null);
    }

    /**
     * The decoded tensor's buffers as segments of {@code arena}; {@code release}, if not null,
     * runs when the arena closes (and keeps what it refers to reachable while any segment of
     * the arena is).
     */
    public MemorySegment[] buffers(Arena arena, java.util.function.Consumer<MemorySegment> release) {
        long[] w = words();
        int count = (int) w[W_BUFFER_COUNT];
        MemorySegment[] out = new MemorySegment[count];
        if (count == 0) {
            if (release != null) {
                MemorySegment.NULL.reinterpret(0, arena, release);
            }
            return out;
        }
        long[] t = table(count);
        for (int i = 0; i < count; i++) {
            out[i] = MemorySegment.ofAddress(t[i * BUF_WORDS + W_DATA]).reinterpret(t[i * BUF_WORDS + W_SIZE], arena,
                    i == 0 ? release : null);
        }
        return out;
    }

    private static final int BUF_WORDS = StructWords.index(HurrayDecodedBuffer.sizeof());
    private static final int W_DATA = StructWords.index(HurrayDecodedBuffer.data$offset());
    private static final int W_SIZE = StructWords.index(HurrayDecodedBuffer.spec$offset() + HurrayBufferSpec.byte_size$offset());
    /** The current result's buffer table as words ({@link #table}); valid while {@code tableSnapped}. */
    private long[] tableWords = new long[4 * BUF_WORDS];
    private boolean tableSnapped;

    /** The current result's {@code count} buffer records as words, copied out once per tensor. */
    private long[] table(int count) {
        if (!tableSnapped) {
            int n = count * BUF_WORDS;
            if (n > tableWords.length) {
                tableWords = new long[n];
            }
            if (batchIndex >= 0 && batchTableValid) {
                System.arraycopy(batchTable, batchTableAt[batchIndex], tableWords, 0, n);
            } else {
                Native.words(words()[W_BUFFERS], tableWords, n);
            }
            tableSnapped = true;
        }
        return tableWords;
    }

    /** The decoded tensor's payload bytes in all (the sum of its buffer sizes). */
    public long payloadBytes() {
        int count = (int) words()[W_BUFFER_COUNT];
        long[] t = table(count);
        long sum = 0;
        for (int i = 0; i < count; i++) {
            sum += t[i * BUF_WORDS + W_SIZE];
        }
        return sum;
    }

    /** The decoded tensor's descriptor format version, as the decoder reports it in its fields. */
    public int descriptorVersion() {
        return (int) StructWords.get(words(), VERSION_AT, 2);
    }

    /**
     * Destroys the native decoder, then closes the source. Idempotent. Tensors already read
     * stay valid.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the source threw (the cause)
     */
    public void close() throws HurrayException {
        if (handle == null) {
            return;
        }
        dropPending();
        MemorySegment h = handle;
        handle = null;
        // The leak cleaner's registration goes first: a decoder handed to the next reader must
        // be one the cleaner can no longer destroy. If the cleaner got there first (the owner
        // was unreachable), the decoder is gone and nothing more is done with it.
        if (resource == null || resource.disarm()) {
            if (hurray_h.hurray_decoder_reset$raw(h.address()) != Native.OK
                    || !IdleDecoders.offer(new IdleDecoders.Idle(h, bufferPoolBytes, limits))) {
                destroy(h);
            }
        }
        Results.give(results);
        try {
            source.close();
        } catch (IOException | RuntimeException e) {
            throw new HurrayException(Status.TRANSPORT, "closing the source failed", e);
        }
    }

    /**
     * Lets the leak cleaner destroy the native decoder once {@code owner} (the public handle)
     * is unreachable without having been closed (see {@link Leaks}).
     */
    public void watch(Object owner, String what) {
        MemorySegment h = handle;
        resource = Leaks.track(owner, what, () -> destroy(h));
    }

    private static void destroy(MemorySegment h) {
        // The destroy never calls back into Java, so a pooled scratch area may hold the slot
        // (ScratchPool's rule); the leak cleaner's thread borrows one too.
        MemorySegment slot = ScratchPool.borrow();
        try {
            Native.setPointer(slot, 0, h.address());
            hurray_h.hurray_decoder_destroy$raw(slot.address());
        } finally {
            ScratchPool.giveBack(slot);
        }
    }
}
