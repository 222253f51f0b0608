package dev.hurray.kafka;

import dev.hurray.FileEntry;
import dev.hurray.FileReaderOptions;
import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.ReaderOptions;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorDecoder;
import dev.hurray.TensorScope;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.NoSuchFileException;
import java.util.Map;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Kafka {@link Deserializer} of {@link Tensor}s written by {@link HurrayTensorSerializer}: one
 * Hurray stream holding one tensor per record, or a claim-check reference, which it resolves.
 *
 * <pre>{@code
 * props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, HurrayTensorDeserializer.class);
 * try (var consumer = new KafkaConsumer<String, Tensor>(props)) {
 *     consumer.subscribe(List.of("embeddings"));
 *     for (ConsumerRecord<String, Tensor> r : consumer.poll(Duration.ofSeconds(1))) {
 *         try (Tensor t = r.value()) {
 *             float[] v = t.toFloatArray();
 *         }
 *     }
 * }
 * }</pre>
 *
 * <h2>Copies</h2>
 * The consumer calls {@link #deserialize(String, Headers, ByteBuffer)} with a view of the fetched
 * batch (no {@code byte[]} per record); the record is handed through that view to a native
 * decoder ({@link TensorDecoder}), which puts the payload into the tensor's own native memory at
 * its declared alignment, which the tensor needs because Kafka reuses the fetch buffer after
 * {@code poll}: a payload of 64 KiB or more is copied straight there, a smaller one by way of
 * the decoder's read-ahead. Callers of the {@code byte[]} variants (Kafka Streams) have had the record copied into a
 * {@code byte[]} by Kafka first. A claim-check tensor is read from its file with positional reads
 * into its own native memory, never mapped: the file lives on storage other processes reach, and
 * a mapped file that one of them truncates would crash the JVM on the next read, where a file
 * read so is refused with the container's status ({@code INVALID_MAGIC}, {@code TRUNCATED}).
 *
 * <h2>Ownership</h2>
 * Each tensor returned is the caller's, who must close it (a tensor that is never closed keeps
 * its native memory until the JVM exits).
 *
 * <h2>Threads</h2>
 * The tensor's {@link TensorScope} is {@link HurrayKafkaConfig#TENSOR_SCOPE}: CONFINED by
 * default, so only the thread that called {@code poll} may use and close it; set SHARED to hand
 * records to other threads. The deserializer may be called by many threads at once: a record
 * takes an idle decoder (reset, see below) or makes one, and gives it back after; at most
 * {@value #MAX_IDLE_DECODERS} wait idle, each holding its 64 KiB read-ahead and no payload
 * memory. Tensors returned stay valid, and may be closed in any order, whatever happens to the
 * decoder that made them; {@link #close()} frees the idle decoders.
 *
 * <h2>Errors and limits</h2>
 * A record that is not a Hurray stream ({@code INVALID_MAGIC}), is truncated ({@code TRUNCATED}),
 * damaged ({@code CORRUPT}), holds more than one tensor ({@code CORRUPT}), is a claim-check
 * reference while no store is configured ({@code UNSUPPORTED}), or names a claim-check file
 * that is gone ({@code NOT_FOUND}: at once, never waiting), in another store
 * ({@code INVALID_ARGUMENT}) or whose bytes do not match the reference ({@code CORRUPT}) raises a
 * {@link TensorSerializationException} carrying the Hurray status; nothing else escapes except
 * {@link SerializationException}. The reader's limits are set from the record's size: a
 * descriptor or payload cannot claim more memory than the record holds bytes, so a hostile
 * record cannot make the consumer allocate more than its own size. (The per-record limits cost no
 * decoder per record: each record resets a decoder kept from an earlier record, giving it its
 * own limits, {@link TensorDecoder#reset(ReaderOptions)}; a decoder keeps the last descriptor, so
 * a topic of same-shaped tensors reads each descriptor's fields once. A decoder that met a bad
 * record is reset like any other.) A claim-check tensor is bounded by
 * {@link HurrayKafkaConfig#MAX_CLAIM_CHECK_BYTES}, checked against the reference's size before
 * its file is read; its payloads are checked against the CRC32Cs its container stores.
 *
 * <p>An empty stream (header and end-of-stream marker only; {@code hurray send} marks the end of a
 * transfer with one) and a null record value (a tombstone) both deserialize to {@code null}.
 */
public class HurrayTensorDeserializer implements Deserializer<Tensor> {
    /** Most decoders kept idle between records (about the threads that call one deserializer at once). */
    static final int MAX_IDLE_DECODERS = 16;

    /**
     * The library's default descriptor limit. Per instance, not in a static initializer: a
     * library that cannot be loaded would otherwise leave this class unusable, every later
     * construction a NoClassDefFoundError instead of the library's own error.
     */
    private final long defaultMaxDescriptor = ReaderOptions.defaults().maxDescriptorBytes();

    private ReaderOptions readerOptions = ReaderOptions.defaults().withBufferPoolBytes(0);
    private FileReaderOptions fileOptions = FileReaderOptions.defaults()
            .withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY);
    private long maxClaimCheck = 64L << 30;
    private ClaimCheckStore store;
    /**
     * Decoders between records, reset when taken: one slot each, so that taking and giving back
     * allocate nothing (a consumer's records come from one thread, which keeps using slot 0).
     */
    private volatile Idle idle = newIdle();
    /** The limits of the last record's size (records of one topic mostly share a size). */
    private volatile SizedOptions lastOptions;

    private record SizedOptions(int size, ReaderOptions base, ReaderOptions options) {
    }

    /** Frees the idle decoders of a deserializer nobody closed (they are not leaks of the caller's). */
    private static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "hurray-kafka-cleaner");
        t.setDaemon(true);
        return t;
    });

    private Idle newIdle() {
        Idle i = new Idle();
        CLEANER.register(this, i);
        return i;
    }

    /** A deserializer with the defaults; Kafka then calls {@link #configure}. */
    public HurrayTensorDeserializer() {
    }

    /** A deserializer configured with {@code configs} (see {@link HurrayKafkaConfig}). */
    public HurrayTensorDeserializer(Map<String, ?> configs) {
        configure(configs, false);
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        TensorScope scope = HurrayKafkaConfig.scope(configs);
        readerOptions = ReaderOptions.defaults().withBufferPoolBytes(0).withTensorScope(scope)
                .withRequirePayloadChecksums(HurrayKafkaConfig.bool(configs, HurrayKafkaConfig.REQUIRE_PAYLOAD_CHECKSUMS, false));
        maxClaimCheck = HurrayKafkaConfig.longValue(configs, HurrayKafkaConfig.MAX_CLAIM_CHECK_BYTES, 64L << 30);
        fileOptions = FileReaderOptions.defaults().withTensorScope(scope)
                .withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY);
        store = HurrayKafkaConfig.store(configs);
        // Decoders made with the old options (their tensor scope) are not reused.
        Idle old = idle;
        idle = newIdle();
        old.run();
    }

    /** The claim-check store, or null. */
    public ClaimCheckStore store() {
        return store;
    }

    @Override
    public Tensor deserialize(String topic, byte[] data) {
        return data == null ? null : deserialize(topic, null, ByteBuffer.wrap(data));
    }

    @Override
    public Tensor deserialize(String topic, Headers headers, byte[] data) {
        return data == null ? null : deserialize(topic, headers, ByteBuffer.wrap(data));
    }

    /**
     * Decodes a record value without copying it into a {@code byte[]} (see the class comment).
     * The buffer's position and limit are not changed.
     *
     * @return the tensor (the caller closes it), or null for a null value or an empty stream
     * @throws SerializationException see the class comment
     */
    @Override
    public Tensor deserialize(String topic, Headers headers, ByteBuffer data) {
        if (data == null) {
            return null;
        }
        int size = data.remaining();
        // The record's size bounds what it can make us allocate (the reader checks before allocating).
        SizedOptions so = lastOptions;
        if (so == null || so.size() != size || so.base() != readerOptions) {
            so = new SizedOptions(size, readerOptions, readerOptions.withMaxTensorBytes(size)
                    .withMaxDescriptorBytes(Math.min(defaultMaxDescriptor, size)));
            lastOptions = so;
        }
        ReaderOptions opts = so.options();
        Tensor t = null;
        TensorDecoder d = null;
        boolean reusable = false;
        Idle idle = this.idle;
        try {
            d = idle.take();
            if (d != null) {
                d.reset(opts);
            } else {
                d = TensorDecoder.create(opts);
            }
            // A decoder's failures are its stream's: once reset, it serves the next record.
            reusable = true;
            d.feed(MemorySegment.ofBuffer(data));
            d.endOfInput();
            t = d.next();
            if (t == null) {
                // The end marker (a stream that ends before it is TRUNCATED, thrown by next).
                return null;
            }
            Tensor extra = d.next();
            if (extra != null) {
                extra.close();
                throw new HurrayException(Status.CORRUPT, "the record holds more than one tensor", null);
            }
            idle.giveBack(d, true);
            d = null;
            if (Records.isReference(t.descriptor())) {
                ClaimCheckReference ref = Records.reference(t.descriptor());
                t.close();
                t = null;
                return resolve(ref);
            }
            Tensor result = t;
            t = null;
            return result;
        } catch (HurrayException e) {
            throw new TensorSerializationException("record of " + size + " bytes from " + topic + " is not a valid Hurray tensor", e);
        } catch (SerializationException e) {
            throw e;
        } catch (RuntimeException e) {
            // Nothing but SerializationException may reach the consumer's poll loop. The decoder
            // is not trusted with the next record.
            reusable = false;
            throw new SerializationException("decoding a record of " + size + " bytes from " + topic + " failed: " + e, e);
        } finally {
            if (t != null) {
                t.close();
            }
            if (d != null) {
                idle.giveBack(d, reusable);
            }
        }
    }

    /** Decoders waiting for the next record (tests). */
    int idleDecoders() {
        return idle.count();
    }

    /** The idle decoders; also the cleaner's action (it never refers to the deserializer). */
    private static final class Idle implements Runnable {
        private final AtomicReferenceArray<TensorDecoder> slots = new AtomicReferenceArray<>(MAX_IDLE_DECODERS);
        private volatile boolean closed;

        /** An idle decoder, or null. */
        TensorDecoder take() {
            for (int i = 0; i < MAX_IDLE_DECODERS; i++) {
                if (slots.getPlain(i) != null) {
                    TensorDecoder d = slots.getAndSet(i, null);
                    if (d != null) {
                        return d;
                    }
                }
            }
            return null;
        }

        /** Keeps {@code d} for the next record (reset when taken), or closes it. */
        void giveBack(TensorDecoder d, boolean reusable) {
            if (reusable && !closed) {
                for (int i = 0; i < MAX_IDLE_DECODERS; i++) {
                    if (slots.getPlain(i) == null && slots.compareAndSet(i, null, d)) {
                        if (closed) {
                            run(); // close() ran meanwhile and may have missed it
                        }
                        return;
                    }
                }
            }
            d.close();
        }

        int count() {
            int n = 0;
            for (int i = 0; i < MAX_IDLE_DECODERS; i++) {
                n += slots.get(i) != null ? 1 : 0;
            }
            return n;
        }

        /** Closes every idle decoder and keeps none from now on. */
        @Override
        public void run() {
            closed = true;
            for (int i = 0; i < MAX_IDLE_DECODERS; i++) {
                TensorDecoder d = slots.getAndSet(i, null);
                if (d != null) {
                    d.close();
                }
            }
        }
    }

    private Tensor resolve(ClaimCheckReference ref) throws HurrayException {
        if (store == null) {
            throw new HurrayException(Status.UNSUPPORTED, "the record is a claim-check reference to " + ref
                    + " but this consumer has no claim-check store (set " + HurrayKafkaConfig.CLAIM_CHECK_DIR + ")", null);
        }
        if (!store.uri().equals(ref.store())) {
            throw new HurrayException(Status.INVALID_ARGUMENT, "the claim-check reference " + ref
                    + " names another store than this consumer's " + store.uri(), null);
        }
        if (ref.size() > maxClaimCheck) {
            throw new HurrayException(Status.LIMIT_EXCEEDED, "the claim-check reference " + ref + " names more than "
                    + HurrayKafkaConfig.MAX_CLAIM_CHECK_BYTES + "=" + maxClaimCheck + " bytes", null);
        }
        HurrayFile file;
        try {
            file = store.open(ref, fileOptions);
        } catch (NoSuchFileException e) {
            throw new HurrayException(Status.NOT_FOUND, "the claim-check file of " + ref + " is gone (deleted by the "
                    + "store's retention before this record was read, or never written)", e);
        } catch (HurrayException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            throw new HurrayException(Status.INVALID_ARGUMENT, e.getMessage(), e);
        } catch (IOException e) {
            throw new HurrayException(Status.TRANSPORT, "cannot open the claim-check file of " + ref + ": " + e, e);
        }
        try (file) {
            if (file.isMapped()) {
                throw new HurrayException(Status.UNSUPPORTED, "the claim-check store " + store + " opened " + ref
                        + " memory-mapped; a consumer reads claim-check files into memory it owns (HurrayFile.open), "
                        + "because a mapped file that another process truncates crashes the JVM on the next read", null);
            }
            FileEntry e = file.entry(ref.tensor()).orElseThrow(() -> new HurrayException(Status.NOT_FOUND,
                    "the claim-check file of " + ref + " holds no tensor named \"" + ref.tensor() + "\"", null));
            if (e.totalBytes() != ref.size()) {
                throw new HurrayException(Status.CORRUPT, "the claim-check file of " + ref + " holds " + e.totalBytes()
                        + " payload bytes, not the reference's " + ref.size(), null);
            }
            for (FileEntry.BufferLocation b : e.buffers()) {
                if (!b.hasChecksum() && b.length() > 0) {
                    throw new HurrayException(Status.CORRUPT, "the claim-check file of " + ref
                            + " stores a payload without its CRC32C, so its bytes cannot be checked", null);
                }
            }
            // Read into the tensor's own memory, every payload checked against the CRC32C the
            // container stores for it (PayloadChecks.VERIFY).
            return file.read(e);
        }
    }

    /**
     * Frees the idle decoders (one still decoding a record is freed when that record is done)
     * and closes the claim-check store. Tensors returned stay valid.
     */
    @Override
    public void close() {
        idle.run();
        if (store != null) {
            try {
                store.close();
            } catch (IOException e) {
                throw new SerializationException("closing the claim-check store failed", e);
            }
        }
    }
}
