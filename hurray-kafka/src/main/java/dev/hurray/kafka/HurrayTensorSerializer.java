package dev.hurray.kafka;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.WriterOptions;
import java.io.IOException;
import java.util.Map;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Kafka {@link Serializer} of {@link Tensor}s: each record value is one tensor in the Hurray
 * stream encoding (stream header, the tensor's descriptor with its CRC32C, its payloads, optional
 * payload CRC32Cs, the end-of-stream marker; docs/spec/stream.md), so the record is
 * self-describing (dtype, shape, layout, quantization, name, metadata) and a truncated or damaged
 * record is detected. The record headers carry dtype, shape and name ({@link TensorHeaders}).
 *
 * <pre>{@code
 * props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, HurrayTensorSerializer.class);
 * props.put(HurrayKafkaConfig.CLAIM_CHECK_DIR, "/mnt/shared/tensors");     // optional
 * try (var producer = new KafkaProducer<String, Tensor>(props); Tensor t = Tensor.of(embedding, 768)) {
 *     producer.send(new ProducerRecord<>("embeddings", docId, t));       // encoded inside send()
 * }
 * }</pre>
 *
 * <h2>Claim-check</h2>
 * A tensor whose payload bytes exceed {@link HurrayKafkaConfig#CLAIM_CHECK_THRESHOLD} (900 KiB by
 * default) is written to the configured {@link ClaimCheckStore} as an HRRYFILE, and the record
 * holds a small reference instead (store URI, file, tensor name, size, CRC32C of the payloads;
 * {@link ClaimCheckReference}), marked by the {@link TensorHeaders#CLAIM_CHECK} header. Without a
 * store such a tensor is refused, unless the threshold is -1 (then Kafka's own record size limit,
 * {@code max.request.size}, applies).
 *
 * <h2>Ownership</h2>
 * The tensor stays the caller's: it is read, not kept, and not closed (unless
 * {@link HurrayKafkaConfig#CLOSE_AFTER_SERIALIZE} is set). Kafka calls the serializer inside
 * {@code KafkaProducer.send}, so the caller may close the tensor as soon as {@code send} returns.
 *
 * <h2>Threads</h2>
 * {@code send} runs the serializer on the calling thread; which tensors that thread may encode is
 * {@link dev.hurray.Writer#write(Tensor)}'s rule (a tensor over borrowed memory must be
 * accessible from it, else a plain {@link SerializationException} wrapping
 * {@link WrongThreadException}; a closed tensor is one wrapping {@link IllegalStateException}).
 * The serializer may be
 * called by many threads at once (as a shared producer is): each calling thread gets its own
 * long-lived native writer, which encodes that thread's records one after the other (a new
 * writer per record would cost several times the encoding of a small tensor); they are freed by
 * {@link #close()}.
 *
 * <h2>Errors</h2>
 * {@link SerializationException}: a {@link TensorSerializationException} (with the Hurray status)
 * for encoding and store failures, a plain one for a closed tensor or a wrong thread.
 */
public class HurrayTensorSerializer implements Serializer<Tensor> {
    private WriterOptions writerOptions = WriterOptions.defaults().withPayloadChecksums(false);
    private boolean headers = true;
    private boolean closeAfter;
    private long threshold = HurrayKafkaConfig.DEFAULT_CLAIM_CHECK_THRESHOLD;
    private ClaimCheckStore store;
    /** One long-lived writer per producing thread (see {@link RecordEncoder}); all of them, to close. */
    private final ThreadLocal<RecordEncoder> encoders = new ThreadLocal<>();
    private final java.util.Queue<RecordEncoder> allEncoders = new java.util.concurrent.ConcurrentLinkedQueue<>();

    /** A serializer with the defaults; Kafka then calls {@link #configure}. */
    public HurrayTensorSerializer() {
    }

    /** A serializer configured with {@code configs} (see {@link HurrayKafkaConfig}). */
    public HurrayTensorSerializer(Map<String, ?> configs) {
        configure(configs, false);
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        writerOptions = WriterOptions.defaults()
                .withPayloadChecksums(HurrayKafkaConfig.bool(configs, HurrayKafkaConfig.PAYLOAD_CHECKSUMS, false));
        headers = HurrayKafkaConfig.bool(configs, HurrayKafkaConfig.HEADERS, true);
        closeAfter = HurrayKafkaConfig.bool(configs, HurrayKafkaConfig.CLOSE_AFTER_SERIALIZE, false);
        threshold = HurrayKafkaConfig.longValue(configs, HurrayKafkaConfig.CLAIM_CHECK_THRESHOLD,
                HurrayKafkaConfig.DEFAULT_CLAIM_CHECK_THRESHOLD);
        store = HurrayKafkaConfig.store(configs);
    }

    /** The claim-check store, or null. */
    public ClaimCheckStore store() {
        return store;
    }

    /** Encodes without headers; see {@link #serialize(String, Headers, Tensor)}. */
    @Override
    public byte[] serialize(String topic, Tensor tensor) {
        return serialize(topic, null, tensor);
    }

    /**
     * Encodes {@code tensor} as a record value and, when {@code headers} is not null, sets the
     * {@link TensorHeaders}.
     *
     * @return the record value, or null for a null tensor (a tombstone)
     * @throws SerializationException see the class comment
     */
    @Override
    public byte[] serialize(String topic, Headers headers, Tensor tensor) {
        if (tensor == null) {
            return null;
        }
        try {
            TensorDescriptor d = tensor.descriptor();
            String claimUri = null;
            byte[] value;
            if (threshold >= 0 && d.totalBufferBytes() > threshold) {
                if (store == null) {
                    throw new TensorSerializationException("cannot send " + describe(d) + " to " + topic,
                            new HurrayException(Status.LIMIT_EXCEEDED, "its " + d.totalBufferBytes()
                                    + " payload bytes exceed " + HurrayKafkaConfig.CLAIM_CHECK_THRESHOLD + "="
                                    + threshold + " and no claim-check store is configured (set "
                                    + HurrayKafkaConfig.CLAIM_CHECK_DIR + ")", null));
                }
                ClaimCheckReference ref = claimCheck(topic, tensor);
                value = Records.encode(ref, d.name().orElse(null), writerOptions);
                claimUri = ref.store().resolve(ref.file()).toString();
            } else {
                value = encode(tensor);
            }
            if (headers != null && this.headers) {
                TensorHeaders.add(headers, d, claimUri);
            }
            return value;
        } catch (HurrayException e) {
            throw new TensorSerializationException("cannot encode " + describe(tensor.descriptor()) + " for " + topic, e);
        } catch (IOException e) {
            throw new TensorSerializationException("cannot put " + describe(tensor.descriptor()) + " into the claim-check store "
                    + store.uri(), new HurrayException(Status.TRANSPORT, e.getMessage(), e));
        } catch (SerializationException e) {
            throw e;
        } catch (RuntimeException e) {
            // A closed tensor (IllegalStateException), another thread's (WrongThreadException), …
            throw new SerializationException("cannot encode a tensor for " + topic + ": " + e.getMessage(), e);
        } finally {
            if (closeAfter) {
                closeQuietly(tensor);
            }
        }
    }

    private byte[] encode(Tensor tensor) throws HurrayException {
        RecordEncoder enc = encoders.get();
        if (enc == null) {
            enc = new RecordEncoder(writerOptions);
            encoders.set(enc);
            allEncoders.add(enc);
        }
        try {
            return enc.encode(tensor);
        } catch (HurrayException | RuntimeException e) {
            // The writer may be poisoned: start afresh on the next record.
            encoders.remove();
            allEncoders.remove(enc);
            enc.close();
            throw e;
        }
    }

    private ClaimCheckReference claimCheck(String topic, Tensor tensor) throws IOException {
        String name = tensor.descriptor().name().orElse("tensor");
        long crc = Records.crc32c(tensor);
        long size = Records.payloadBytes(tensor);
        String file = store.put(topic, name, tensor);
        return new ClaimCheckReference(store.uri(), file, name, size, crc);
    }

    /** Closes after encoding; a failure to close (wrong thread) must not hide the encoding's outcome. */
    private static void closeQuietly(Tensor tensor) {
        try {
            tensor.close();
        } catch (RuntimeException e) {
            // The tensor stays open: it was not this thread's to close (see the class comment).
        }
    }

    static String describe(TensorDescriptor d) {
        return "tensor " + d.name().map(n -> "\"" + dev.hurray.TensorNames.forMessage(n) + "\" ").orElse("") + d.elementType().formatName()
                + TensorHeaders.shapeText(d.shape().dims());
    }

    /** Frees the per-thread writers and closes the claim-check store. */
    @Override
    public void close() {
        for (RecordEncoder enc; (enc = allEncoders.poll()) != null; ) {
            enc.close();
        }
        if (store != null) {
            try {
                store.close();
            } catch (IOException e) {
                throw new SerializationException("closing the claim-check store failed", e);
            }
        }
    }
}
