package dev.hurray.kafka;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import org.apache.kafka.common.errors.SerializationException;

/**
 * A record that could not be encoded or decoded: Kafka's {@link SerializationException}, whose
 * {@linkplain #getCause() cause} is the {@link HurrayException} with the Hurray {@link Status}
 * ({@code TRUNCATED}, {@code CORRUPT}, {@code INVALID_MAGIC}, {@code NOT_FOUND} for a claim-check
 * file that is gone, …). A consumer receives it wrapped in
 * {@link org.apache.kafka.common.errors.RecordDeserializationException}, which names the
 * partition and offset to skip ({@code consumer.seek(partition, offset + 1)}).
 */
public class TensorSerializationException extends SerializationException {
    private static final long serialVersionUID = 1L;

    /** An exception with a message and the Hurray failure. */
    public TensorSerializationException(String message, HurrayException cause) {
        super(message + ": " + cause.getMessage(), cause);
    }

    /** The Hurray failure. */
    @Override
    public synchronized HurrayException getCause() {
        return (HurrayException) super.getCause();
    }

    /** The Hurray status of the failure. */
    public Status status() {
        return getCause().status();
    }
}
