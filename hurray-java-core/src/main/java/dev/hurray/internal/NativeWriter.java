package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayEncoderState;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.HurrayWriterOptions;
import dev.hurray.ffm.hurray_h;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native stream encoder ({@code HurrayEncoder*}, docs/spec/c-abi.md §Decoders and encoders)
 * drained into a {@link Sink}.
 *
 * <p><b>No upcalls.</b> {@link #write} stages the item with one {@code hurray_encoder_encode}
 * call; when the output must leave (it borrows a large payload, the batch is full, or batching
 * is off) this class asks the encoder for the pending ranges and writes them with
 * {@link Sink#write} in Java, outside any native frame, then reports the count. A virtual
 * thread blocked on the sink unmounts from its carrier, and a sink that throws cannot unwind
 * through native code. Transport rule 4 holds: a send that fails after part of the pending
 * output left poisons the writer; one that fails before takes the item back, so the call can
 * be retried.
 *
 * <p><b>Memory.</b> The slice, piece and state structs live in an automatic arena owned by
 * this object; nothing is allocated per call. Not thread-safe: the public {@code Writer}
 * serialises access; any thread may use it, one at a time.
 */
public final class NativeWriter {
    /** Most payloads one tensor can have (the format's buffer-table limit). */
    public static final int MAX_PAYLOADS = 64;
    /** Largest payload copied into the staging buffer when the sink gathers (16 KiB). */
    private static final long GATHER_COALESCE_BYTES = 16 * 1024;
    /** Pieces listed per {@code hurray_encoder_output} call. */
    private static final int MAX_PIECES = 2 * MAX_PAYLOADS + 2;

    private final Sink sink;
    /** The sink's first fatal failure (a reset connection), reported on every later write. */
    private Throwable dead;
    private final long batchBytes;
    private final MemorySegment slices;
    private final MemorySegment pieces;
    private final MemorySegment state;
    private final MemorySegment count;
    private MemorySegment descriptorScratch;
    private MemorySegment handle;
    private Leaks.Resource resource;

    // Batch staging (docs/spec/c-abi.md, hurray_encoder_encode_batch): tensors queued as
    // HurrayTensorSpec records with their small payloads copied into `aux`, encoded and sent
    // with one downcall per batch.
    /** Most tensors queued for one batch call. */
    static final int MAX_QUEUED = 256;
    /** Largest payload (and payload total) copied into the batch area; larger ones are sent from the tensor's memory. */
    public static final long STAGE_MAX_BYTES = 16 * 1024;
    private final MemorySegment batchArea;
    private final MemorySegment specs;
    private final MemorySegment aux;
    /** Batch bytes below this share the default area size. */
    private static final long DEFAULT_AUX_BATCH = 64 * 1024;
    /** Room beyond the batch for the tensor that fills it. */
    private static final long AUX_SLACK = 64 * 1024;
    private static final long DEFAULT_AUX_BYTES = DEFAULT_AUX_BATCH + AUX_SLACK;

    /**
     * Batch areas of closed writers, kept for the next writer (a writer per Kafka record or
     * request then allocates none); at most {@link #MAX_IDLE} wait, and one never given back
     * is freed by the garbage collector (automatic arenas).
     */
    static final class BatchAreas {
        static final int MAX_IDLE = 16;
        private static final java.util.concurrent.ConcurrentLinkedQueue<MemorySegment> IDLE =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        private static final java.util.concurrent.atomic.AtomicInteger COUNT =
                new java.util.concurrent.atomic.AtomicInteger();

        private BatchAreas() {
        }

        static MemorySegment take() {
            MemorySegment m = IDLE.poll();
            if (m != null) {
                COUNT.decrementAndGet();
            }
            return m;
        }

        static void give(MemorySegment area) {
            if (COUNT.incrementAndGet() <= MAX_IDLE) {
                IDLE.offer(area);
            } else {
                COUNT.decrementAndGet();
            }
        }
    }
    private final MemorySegment batchResult;
    private long auxUsed;
    private int queued;
    private final String[] queuedNames = new String[MAX_QUEUED];
    /**
     * The queued tensors' specs as words, copied to {@link #specs} with one call when the encoder
     * is called ({@link #specsOut}); grown as the queue grows, up to {@link #MAX_QUEUED} specs.
     */
    private long[] specWords = new long[16 * SpecWriter.SPEC_WORDS];
    /** Queued specs already in {@link #specs} (those before it, and a quantized one, are there). */
    private int specsCopied;
    /** Native copies of heap payloads the encoder may still borrow (drained writers only). */
    private final java.util.List<MemorySegment[]> heldCopies = new java.util.ArrayList<>();
    /** Bytes of the output sent but not yet reported to the encoder (the next call reports them). */
    private long unreported;
    /** The end marker was staged: queuing more is refused at once. */
    private boolean finished;
    /** Why the encoder is poisoned (a send failed mid-item), or null. */
    private String poisoned;
    /** The state struct the last native call wrote ({@code state} or the batch result's). */
    private MemorySegment stateNow;

    private NativeWriter(Sink sink, long batchBytes, Arena auto, MemorySegment handle) {
        this.sink = sink;
        this.batchBytes = batchBytes;
        this.slices = HurrayIoSlice.allocateArray(MAX_PAYLOADS, auto);
        this.pieces = HurrayIoSlice.allocateArray(MAX_PIECES, auto);
        this.state = HurrayEncoderState.allocate(auto);
        this.count = auto.allocate(JAVA_LONG);
        this.descriptorScratch = auto.allocate(4096, 8);
        this.handle = handle;
        long auxBytes = Math.max(batchBytes, DEFAULT_AUX_BATCH) + AUX_SLACK;
        MemorySegment area = auxBytes == DEFAULT_AUX_BYTES ? BatchAreas.take() : null;
        if (area == null) {
            area = Arena.ofAuto().allocate(SpecWriter.SPEC_BYTES * MAX_QUEUED + auxBytes, 64);
        }
        this.batchArea = area;
        this.specs = area.asSlice(0, SpecWriter.SPEC_BYTES * MAX_QUEUED);
        this.aux = area.asSlice(SpecWriter.SPEC_BYTES * MAX_QUEUED);
        this.batchResult = dev.hurray.ffm.HurrayEncodeBatchResult.allocate(auto);
        this.stateNow = state;
    }

    /**
     * Queues a tensor given by its descriptor fields (validated and encoded by the encoder,
     * once) and sends the batch when it is due: at {@code batchBytes} of queued output, at once
     * when batching is off, and with this tensor when a payload is too large to copy (it is
     * then read in place, so it must stay live until this call returns). Payloads must be live
     * native or heap memory of their buffer's size for the duration of the call.
     *
     * @param name the name's UTF-8 bytes, or null
     * @param keys the metadata keys' UTF-8 bytes, in {@code f.metadata()} order
     * @throws HurrayException as {@link #write}; a tensor the encoder refuses is named in the
     *     message, is not sent, and every other queued tensor is
     */
    public void writeFields(DescriptorFields f, byte[] name, byte[][] keys, MemorySegment[] payloads)
            throws HurrayException {
        if (finished) {
            throw new HurrayException(Status.INVALID_STATE, "the stream is finished; nothing more can be written", null);
        }
        if (poisoned != null) {
            throw new HurrayException(Status.POISONED, poisoned, null);
        }
        java.util.List<dev.hurray.BufferSpec> table = f.buffers();
        if (payloads.length != table.size()) {
            throw new HurrayException(Status.INVALID_ARGUMENT, payloads.length + " payloads for a descriptor with "
                    + table.size() + " buffers", null);
        }
        long payloadBytes = 0;
        boolean inPlace = false;
        // Drained: only a tensor the encoder will copy whole may wait in the queue (one it
        // borrows must be staged while its memory is pinned).
        boolean mayWait = drained;
        for (int i = 0; i < payloads.length; i++) {
            long n = payloads[i].byteSize();
            mayWait &= n <= drainedCopyBytes;
            long want = table.get(i).byteSize();
            if (n != want) {
                throw new HurrayException(n < want ? Status.BUFFER_TOO_SMALL : Status.INVALID_ARGUMENT, "payload " + i
                        + " has " + n + " bytes, buffer " + i + " declares " + want, null);
            }
            payloadBytes += n;
            inPlace |= n > STAGE_MAX_BYTES;
        }
        inPlace |= payloadBytes > STAGE_MAX_BYTES;
        if (inPlace) {
            for (MemorySegment p : payloads) {
                if (!p.isNative() && p.byteSize() > 0) {
                    inPlace = false;
                }
            }
        }
        long need = SpecWriter.auxBytes(f, name, keys, payloads.length, inPlace ? 0 : payloadBytes);
        if (need > aux.byteSize() - auxUsed || queued == MAX_QUEUED) {
            if (queued > 0) {
                if (drained) {
                    settle();
                } else {
                    sendBatch(0, false);
                }
            }
            if (need > aux.byteSize()) {
                writeAlone(f, payloads);
                return;
            }
        }
        mayWait &= !inPlace;
        if (drained && !mayWait && queued > 0) {
            // Stage the queue alone first: a refusal of one of those tensors is then thrown
            // before this one (which the output may borrow) is staged.
            settle();
        }
        if (specWords.length < (queued + 1) * SpecWriter.SPEC_WORDS) {
            specWords = java.util.Arrays.copyOf(specWords, Math.min(MAX_QUEUED, 2 * (queued + 1)) * SpecWriter.SPEC_WORDS);
        }
        if (SpecWriter.specWrittenAtOnce(f)) {
            specsOut(); // the specs before it go first, so that the copy at the call leaves its own alone
        }
        auxUsed = SpecWriter.write(specWords, specs, queued, aux, auxUsed, f, name, keys, payloads, !inPlace);
        if (SpecWriter.specWrittenAtOnce(f)) {
            specsCopied = queued + 1;
        }
        queuedNames[queued++] = f.name();
        if (drained) {
            // The caller drains. A payload read in place is staged now, while its tensor is
            // pinned; a copied one waits in the batch area, so that many small tensors are
            // staged by one call (output, consume, finish, any other kind of item, or
            // stageQueued).
            if (!mayWait) {
                settle();
            }
            return;
        }
        if (inPlace || batchBytes == 0 || auxUsed >= batchBytes) {
            sendBatch(0, true);
            if (batchBytes == 0) {
                flushSink();
            }
        }
    }

    /**
     * Writes a tensor whose descriptor is too large for the batch area (megabytes of metadata)
     * through a descriptor of its own. Heap payloads are copied to native memory first: that
     * path reads them by address, and the encoder may borrow them until its output is sent. A
     * writer that sends before returning closes the copies at once; one whose caller drains
     * keeps them until its output has gone (heldCopies). Out of {@link #writeFields}, which every
     * small tensor runs, so that its compiled code stays small.
     */
    private void writeAlone(DescriptorFields f, MemorySegment[] payloads) throws HurrayException {
        NativeDescriptor.Built b = NativeDescriptor.build(f);
        java.lang.foreign.Arena copies = drained ? java.lang.foreign.Arena.ofAuto() : java.lang.foreign.Arena.ofConfined();
        try {
            MemorySegment[] inNative = payloads.clone();
            for (int i = 0; i < inNative.length; i++) {
                if (!inNative[i].isNative() && inNative[i].byteSize() > 0) {
                    MemorySegment c = copies.allocate(inNative[i].byteSize(), 64);
                    MemorySegment.copy(inNative[i], 0, c, 0, inNative[i].byteSize());
                    inNative[i] = c;
                }
            }
            if (drained) {
                if (HurrayEncoderState.pending_bytes(state) == 0) {
                    heldCopies.clear();
                }
                heldCopies.add(inNative);
            }
            write(b.descriptor().handle(), inNative);
        } finally {
            if (!drained) {
                copies.close();
            }
        }
    }

    /**
     * Encodes the queued tensors (plus the end marker with {@code flags}) and sends the whole
     * pending output. On a send failure before the first byte, the last staged item is taken
     * back when {@code takeBackLast} (the caller's own tensor).
     */
    private void sendBatch(int flags, boolean takeBackLast) throws HurrayException {
        if (poisoned != null) {
            // A poisoned encoder may still list output that borrowed a caller's payload, whose
            // memory the caller may have freed since the failure: nothing more is sent.
            throw new HurrayException(Status.POISONED, poisoned, null);
        }
        if (queued == 0 && flags == 0 && HurrayEncoderState.pending_bytes(stateNow) == unreported) {
            return; // everything staged has been sent
        }
        int from = 0;
        HurrayException refused = null;
        specsOut();
        try {
            while (true) {
                int rc = hurray_h.hurray_encoder_encode_batch$raw(handle.address(), unreported,
                        specs.address() + from * SpecWriter.SPEC_BYTES, queued - from,
                        flags, pieces.address(), MAX_PIECES, batchResult.address());
                java.lang.ref.Reference.reachabilityFence(this); // the areas above are passed by address
                unreported = 0;
                stateNow = dev.hurray.ffm.HurrayEncodeBatchResult.state(batchResult);
                long encoded = dev.hurray.ffm.HurrayEncodeBatchResult.encoded(batchResult);
                if (rc < 0) {
                    if (from + encoded >= queued) {
                        throw Native.error(rc, null);
                    }
                    int bad = from + (int) encoded;
                    HurrayException e = Native.error(rc, null);
                    HurrayException named = new HurrayException(e.status(), "tensor "
                            + (queuedNames[bad] == null ? "#" + bad + " of the batch (unnamed)" : quote(queuedNames[bad]))
                            + " was refused and not written (the other tensors were): " + e.nativeMessage(), null);
                    if (refused == null) {
                        refused = named;
                    } else {
                        refused.addSuppressed(named);
                    }
                    from = bad + 1;
                    if (from == queued && flags == 0) {
                        break;
                    }
                    continue;
                }
                from += (int) encoded;
                boolean last = from == queued;
                sendListed(dev.hurray.ffm.HurrayEncodeBatchResult.piece_count(batchResult),
                        HurrayEncoderState.pending_bytes(dev.hurray.ffm.HurrayEncodeBatchResult.state(batchResult)),
                        last && takeBackLast && refused == null);
                if (last) {
                    break;
                }
            }
        } finally {
            queued = 0;
            specsCopied = 0;
            auxUsed = 0;
        }
        if (refused != null) {
            throw refused;
        }
    }

    /** Copies the queued specs not yet in native memory to {@link #specs}, for the encoder to read. */
    private void specsOut() {
        if (specsCopied < queued) {
            SpecWriter.copySpecs(specWords, specs, specsCopied, queued);
            specsCopied = queued;
        }
    }

    private static String quote(String name) {
        return "\"" + (name.length() <= 64 ? name : name.substring(0, 64) + "…") + "\"";
    }

    /**
     * Sends the {@code listed} pieces the last call wrote to {@code pieces}, and the rest of
     * the {@code pending} output after them; when all of it left, the count is reported by the
     * next call (folded into it) instead of a call of its own.
     */
    private void sendListed(long listed, long pending, boolean takeBackLast) throws HurrayException {
        long total = 0;
        while (listed > 0) {
            long sent = sendPieces((int) listed, total, takeBackLast);
            total += sent;
            if (total >= pending) {
                unreported = total;
                return;
            }
            Native.check(hurray_h.hurray_encoder_consume(handle, total, state));
            pending -= total;
            total = 0;
            Native.check(hurray_h.hurray_encoder_output(handle, pieces, MAX_PIECES, count));
            listed = count.get(JAVA_LONG, 0);
        }
    }

    /** Sends {@code n} listed pieces; returns the bytes sent (aborting the output on failure). */
    private long sendPieces(int n, long alreadySent, boolean takeBackLast) throws HurrayException {
        if (n > 1 && sink.gathers()) {
            java.nio.ByteBuffer[] ranges = new java.nio.ByteBuffer[n];
            long total = 0;
            for (int i = 0; i < n; i++) {
                MemorySegment p = HurrayIoSlice.asSlice(pieces, i);
                long len = HurrayIoSlice.len(p);
                ranges[i] = Native.view(Native.pointer(p, HurrayIoSlice.ptr$offset()), len).asByteBuffer();
                total += len;
            }
            long sent = 0;
            while (sent < total) {
                sent += sendSome(() -> sink.write(ranges), alreadySent + sent, takeBackLast);
            }
            return sent;
        }
        long sent = 0;
        for (int i = 0; i < n; i++) {
            long at = i * HurrayIoSlice.sizeof();
            MemorySegment bytes = Native.view(pieces.get(JAVA_LONG, at + HurrayIoSlice.ptr$offset()),
                    pieces.get(JAVA_LONG, at + HurrayIoSlice.len$offset()));
            long off = 0;
            while (off < bytes.byteSize()) {
                MemorySegment rest = bytes.asSlice(off);
                long k = sendSome(() -> sink.write(rest), alreadySent + sent, takeBackLast);
                off += k;
                sent += k;
            }
        }
        return sent;
    }

    /**
     * Stages the queued tensors and reports output sent but not yet reported, so that a call
     * of another kind (a composite, metadata, a tensor given by a native descriptor) follows
     * them in order. Nothing is sent.
     */
    private void settle() throws HurrayException {
        if (queued == 0 && unreported == 0) {
            return;
        }
        int n = queued;
        specsOut();
        try {
            // Every queued tensor is staged but the refused ones; the first refusal is thrown
            // with any later ones attached as suppressed, so no refusal goes unreported.
            HurrayException first = null;
            int from = 0;
            long report = unreported;
            // Also with no tensor queued: output sent and not yet reported must be reported
            // before a call of another kind (a composite after a borrowed payload).
            while (from < n || report != 0) {
                int rc = hurray_h.hurray_encoder_encode_batch$raw(handle.address(), report,
                        specs.address() + from * SpecWriter.SPEC_BYTES, n - from, 0, 0, 0, batchResult.address());
                java.lang.ref.Reference.reachabilityFence(this); // the areas above are passed by address
                report = 0;
                unreported = 0;
                stateNow = dev.hurray.ffm.HurrayEncodeBatchResult.state(batchResult);
                long encoded = dev.hurray.ffm.HurrayEncodeBatchResult.encoded(batchResult);
                if (rc >= 0) {
                    break;
                }
                HurrayException e = Native.error(rc, null);
                int bad = from + (int) encoded;
                if (bad >= n) {
                    // Not an item's refusal (a poisoned or finished encoder): nothing more stages.
                    if (first == null) {
                        throw e;
                    }
                    first.addSuppressed(e);
                    break;
                }
                HurrayException refused = new HurrayException(e.status(), "tensor " + (queuedNames[bad] == null
                        ? "#" + bad + " of the batch (unnamed)" : quote(queuedNames[bad]))
                        + " was refused and not written (the other tensors were): " + e.nativeMessage(), null);
                if (first == null) {
                    first = refused;
                } else {
                    first.addSuppressed(refused);
                }
                from = bad + 1;
            }
            if (first != null) {
                throw first;
            }
        } finally {
            queued = 0;
            specsCopied = 0;
            auxUsed = 0;
        }
    }

    /**
     * Makes a native encoder; nothing is written yet.
     *
     * @param payloadChecksums follow every payload with its CRC32C
     * @param batchBytes 0: send every item at once; else keep small items pending until this
     *     many bytes are staged (see {@code WriterOptions.batchBytes})
     */
    public static NativeWriter open(Sink sink, boolean payloadChecksums, long batchBytes) throws HurrayException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment opts = HurrayWriterOptions.allocate(arena);
            Native.check(hurray_h.hurray_writer_options_init$raw(opts.address()));
            HurrayWriterOptions.flags(opts, payloadChecksums ? hurray_h.HURRAY_WRITER_PAYLOAD_CHECKSUMS() : 0);
            MemorySegment slot = arena.allocate(ADDRESS);
            Native.check(hurray_h.hurray_encoder_new$raw(opts.address(), slot.address()));
            MemorySegment h = MemorySegment.ofAddress(Native.pointer(slot, 0));
            if (sink.gathers()) {
                // Pieces leave in one gathering write, so copying mid-sized payloads into the
                // staging buffer would only cost a memcpy.
                Native.check(hurray_h.hurray_encoder_set_coalesce_bytes$raw(h.address(), GATHER_COALESCE_BYTES));
            }
            return new NativeWriter(sink, batchBytes, Arena.ofAuto(), h);
        }
    }

    /** The sink. */
    public Sink sink() {
        return sink;
    }

    /**
     * Stages one tensor and, unless it may wait for a batch, sends the pending output. The
     * payloads are read by address: the caller guarantees each is live native memory of its
     * length until this call returns (when it returns, nothing refers to them any more).
     *
     * @param descriptor a live native descriptor (owned or borrowed)
     * @param payloads native segments, one per buffer, at most {@link #MAX_PAYLOADS}
     * @throws HurrayException validation statuses (nothing staged); {@link Status#TRANSPORT}
     *     with the sink's exception as cause (the item was taken back, and the call can be
     *     retried, unless the message says the writer is poisoned); {@link Status#POISONED}
     */
    public void write(MemorySegment descriptor, MemorySegment[] payloads) throws HurrayException {
        settle();
        fillSlices(payloads);
        Native.check(hurray_h.hurray_encoder_encode(handle, descriptor, slices, payloads.length, state));
        afterStaging();
    }

    private void fillSlices(MemorySegment[] payloads) {
        for (int i = 0; i < payloads.length; i++) {
            long len = payloads[i].byteSize();
            long at = i * HurrayIoSlice.sizeof();
            slices.set(JAVA_LONG, at + HurrayIoSlice.ptr$offset(), len == 0 ? 0 : payloads[i].address());
            slices.set(JAVA_LONG, at + HurrayIoSlice.len$offset(), len);
        }
    }

    /** Sends the pending output unless it may wait for the batch (never for {@link #openDrained}: the caller drains). */
    private void afterStaging() throws HurrayException {
        stateNow = state;
        if (!drained && (HurrayEncoderState.borrows_payloads(state) != 0 || HurrayEncoderState.pending_bytes(state) >= batchBytes)) {
            send(true);
            if (batchBytes == 0) {
                flushSink();
            }
        }
    }

    /**
     * As {@link #write(MemorySegment, MemorySegment[])}, for a descriptor that Java holds as
     * its encoding only ({@code hurray_encoder_encode_encoded}: decoded and validated natively,
     * no descriptor handle needed). The bytes pass through a scratch area owned by this writer.
     */
    public void writeEncoded(byte[] encoded, MemorySegment[] payloads) throws HurrayException {
        if (encoded.length > descriptorScratch.byteSize()) {
            descriptorScratch = Arena.ofAuto().allocate(Math.max(encoded.length, 2 * descriptorScratch.byteSize()), 8);
        }
        settle();
        MemorySegment.copy(encoded, 0, descriptorScratch, JAVA_BYTE, 0, encoded.length);
        fillSlices(payloads);
        Native.check(hurray_h.hurray_encoder_encode_encoded(handle, descriptorScratch, encoded.length, slices,
                payloads.length, state));
        afterStaging();
    }

    /**
     * Stages a whole composite from a live native composite builder
     * ({@code hurray_encoder_encode_composite}: head and members in preorder, payloads copied, so
     * it is sent or taken back as one item) and sends it unless it may wait for the batch. The
     * builder's payloads must be live native memory for the duration of the call.
     */
    public void writeComposite(MemorySegment builder) throws HurrayException {
        settle();
        Native.check(hurray_h.hurray_encoder_encode_composite(handle, builder, state));
        afterStaging();
    }

    /**
     * Sets the stream's metadata ({@code hurray_encoder_set_metadata}), sent with the stream
     * header: before the first item.
     *
     * @throws HurrayException {@link Status#INVALID_STATE} after the first item; the metadata
     *     rules ({@link Status#INVALID_ARGUMENT}, {@link Status#LIMIT_EXCEEDED},
     *     {@link Status#DUPLICATE_NAME})
     */
    public void setMetadata(java.util.Map<String, byte[]> metadata) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            int n = metadata.size();
            MemorySegment views = a.allocate(Math.max(1, n) * dev.hurray.ffm.HurrayMetadataView.sizeof(), 8);
            int i = 0;
            for (java.util.Map.Entry<String, byte[]> e : metadata.entrySet()) {
                byte[] k = Utf8.encode(e.getKey(), "metadata key");
                byte[] v = e.getValue();
                MemorySegment view = views.asSlice(i * dev.hurray.ffm.HurrayMetadataView.sizeof(), dev.hurray.ffm.HurrayMetadataView.sizeof());
                dev.hurray.ffm.HurrayMetadataView.key(view, k.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, k));
                dev.hurray.ffm.HurrayMetadataView.key_len(view, k.length);
                dev.hurray.ffm.HurrayMetadataView.value(view, v.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, v));
                dev.hurray.ffm.HurrayMetadataView.value_len(view, v.length);
                i++;
            }
            settle();
            Native.check(hurray_h.hurray_encoder_set_metadata(handle, views, n));
        }
    }

    /**
     * Starts a new stream ({@code hurray_encoder_reset}): output not yet sent, the stream
     * metadata, the finished state and a poisoning are dropped; the next item or finish stages
     * the stream header again. A sink that failed for good stays failed.
     */
    public void reset() throws HurrayException {
        Native.check(hurray_h.hurray_encoder_reset$raw(handle.address(), state.address()));
        java.lang.ref.Reference.reachabilityFence(this); // the areas above are passed by address
        stateNow = state;
        queued = 0;
        specsCopied = 0;
        auxUsed = 0;
        unreported = 0;
        finished = false;
        poisoned = null;
        if (sink instanceof Sink.Memory m) {
            m.clear();
        }
    }

    /** Sends whatever is pending and flushes the sink. */
    public void flush() throws HurrayException {
        sendBatch(0, false);
        flushSink();
    }

    /** Stages and sends the end-of-stream marker; idempotent after success. */
    public void finish() throws HurrayException {
        if (drained) {
            settle();
            Native.check(hurray_h.hurray_encoder_finish(handle, state));
            stateNow = state;
            finished = true;
            return;
        }
        sendBatch(hurray_h.HURRAY_ENCODE_FINISH(), true);
        finished = true;
        flushSink();
    }

    /**
     * Writes the pending output to the sink. On failure, reports what left and aborts: a
     * partial send poisons the encoder, none takes the last item back when {@code takeBackLast}.
     */
    private void send(boolean takeBackLast) throws HurrayException {
        while (HurrayEncoderState.pending_bytes(state) > 0) {
            Native.check(hurray_h.hurray_encoder_output(handle, pieces, MAX_PIECES, count));
            long sent = sendPieces((int) count.get(JAVA_LONG, 0), 0, takeBackLast);
            Native.check(hurray_h.hurray_encoder_consume(handle, sent, state));
        }
    }

    /** One write to the sink. */
    @FunctionalInterface
    private interface SinkWrite {
        long write() throws Throwable;
    }

    /**
     * One sink write of the pending output, of which {@code sent} bytes already left: the bytes
     * it took (at least 1). A dead connection reports its failure again
     * (HurrayException.isRetryableCause) and a failure that is not retryable marks it dead;
     * either way, and when the sink takes nothing, the output is aborted ({@link #abort}).
     */
    private long sendSome(SinkWrite w, long sent, boolean takeBackLast) throws HurrayException {
        if (dead != null) {
            throw abort(sent, takeBackLast, new HurrayException(Status.TRANSPORT, "writing to the sink failed", dead));
        }
        long k;
        try {
            k = w.write();
        } catch (VirtualMachineError e) {
            // The sink failed with an Error (out of memory, a fault in a mapped file): the output
            // is aborted as for any failure, so that none of it keeps pointing at the payloads,
            // and the Error goes on as it is.
            try {
                abort(sent, takeBackLast, new HurrayException(Status.TRANSPORT, "writing to the sink failed", e));
            } catch (Throwable t) {
                e.addSuppressed(t);
                poisoned = "writing to the sink failed with " + e.getClass().getName()
                        + " and the pending output could not be dropped";
            }
            throw e;
        } catch (Throwable e) {
            if (!HurrayException.isRetryableCause(e)) {
                dead = e;
            }
            throw abort(sent, takeBackLast, new HurrayException(Status.TRANSPORT, "writing to the sink failed", e));
        }
        if (k <= 0) {
            throw abort(sent, takeBackLast, new HurrayException(Status.SINK_CLOSED,
                    "the sink accepted 0 bytes: it is closed", null));
        }
        return k;
    }

    private HurrayException abort(long sent, boolean takeBackLast, HurrayException failure) {
        if (sent > 0) {
            hurray_h.hurray_encoder_consume(handle, sent, state);
        }
        int rc = hurray_h.hurray_encoder_abort(handle, takeBackLast ? 1 : 0, state);
        if (rc == hurray_h.HURRAY_ERR_POISONED()) {
            poisoned = "an earlier write failed after part of the pending output left; the stream on the wire is truncated";
            return new HurrayException(failure.status(), failure.nativeMessage() + " after " + sent
                    + " bytes of the pending output; the writer is poisoned", failure.getCause());
        }
        return failure;
    }

    private void flushSink() throws HurrayException {
        try {
            sink.flush();
        } catch (IOException | RuntimeException e) {
            throw new HurrayException(Status.TRANSPORT, "flushing the sink failed", e);
        }
    }

    // ------------------------------------------------------------ caller-drained output (TensorEncoder)

    /**
     * Makes a native encoder whose output the caller drains ({@link #output()}, {@link #consume}):
     * staging never sends, so items stay pending until consumed.
     *
     * @param coalesceBytes largest payload copied into the staged output; larger ones are borrowed
     */
    public static NativeWriter openDrained(boolean payloadChecksums, long coalesceBytes) throws HurrayException {
        NativeWriter w = open(new Sink(null) {
            @Override
            protected long write(MemorySegment src) {
                throw new IllegalStateException("a drained encoder has no sink");
            }
        }, payloadChecksums, 0);
        try {
            Native.check(hurray_h.hurray_encoder_set_coalesce_bytes(w.handle, coalesceBytes));
        } catch (HurrayException e) {
            w.close();
            throw e;
        }
        w.drained = true;
        w.drainedCopyBytes = coalesceBytes;
        return w;
    }

    /**
     * True while a {@link #openDrained} writer holds tensors queued for its next batch call
     * (copied into the batch area; {@link #pendingBytes()} does not count them yet).
     */
    public boolean hasQueued() {
        return queued > 0;
    }

    /**
     * Stages the queued tensors with one batch call. A tensor the encoder refuses is named in
     * the exception; every other queued tensor is staged.
     */
    public void stageQueued() throws HurrayException {
        settle();
    }

    /** True for {@link #openDrained}: afterStaging and finish leave the output pending. */
    private boolean drained;
    /** A drained encoder's coalesce size: larger payloads are borrowed, so their tensors are staged at once. */
    private long drainedCopyBytes;

    /** Bytes staged and not yet consumed; queued tensors ({@link #hasQueued}) are not counted until staged. */
    public long pendingBytes() {
        return HurrayEncoderState.pending_bytes(stateNow);
    }

    /** True while the pending output refers to a caller's payload (docs/spec/c-abi.md §Decoders and encoders). */
    public boolean borrowsPayloads() {
        return HurrayEncoderState.borrows_payloads(stateNow) != 0;
    }

    /**
     * The pending output in order ({@code hurray_encoder_output}): views valid until the next
     * staging or consuming call, the first {@code MAX_PIECES} ranges when there are more.
     */
    public MemorySegment[] output() throws HurrayException {
        settle();
        Native.check(hurray_h.hurray_encoder_output(handle, pieces, MAX_PIECES, count));
        int n = (int) count.get(JAVA_LONG, 0);
        MemorySegment[] out = new MemorySegment[n];
        for (int i = 0; i < n; i++) {
            MemorySegment p = HurrayIoSlice.asSlice(pieces, i);
            out[i] = Native.view(Native.pointer(p, HurrayIoSlice.ptr$offset()), HurrayIoSlice.len(p));
        }
        return out;
    }

    /** Records that the first {@code n} pending bytes were sent ({@code hurray_encoder_consume}). */
    public void consume(long n) throws HurrayException {
        settle();
        Native.check(hurray_h.hurray_encoder_consume(handle, n, state));
        stateNow = state;
    }

    /**
     * Destroys the native encoder (pending output is dropped: call {@link #finish()} first),
     * then closes the sink. Idempotent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} if closing the sink threw (the cause)
     */
    public void close() throws HurrayException {
        if (handle == null) {
            return;
        }
        MemorySegment h = handle;
        handle = null;
        if (resource != null) {
            resource.close();
        } else {
            destroy(h);
        }
        if (batchArea.byteSize() == SpecWriter.SPEC_BYTES * MAX_QUEUED + DEFAULT_AUX_BYTES) {
            BatchAreas.give(batchArea);
        }
        try {
            sink.close();
        } catch (IOException | RuntimeException e) {
            throw new HurrayException(Status.TRANSPORT, "closing the sink failed", e);
        }
    }

    /**
     * Lets the leak cleaner destroy the native encoder once {@code owner} (the public handle)
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
            hurray_h.hurray_encoder_destroy$raw(slot.address());
        } finally {
            ScratchPool.giveBack(slot);
        }
    }
}
