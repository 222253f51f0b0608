package dev.hurray;

/**
 * Settings of a {@link Writer}.
 *
 * @param payloadChecksums follow every payload with its CRC32C (docs/spec/stream.md), so readers
 *     detect corrupted payloads ({@link Status#CORRUPT}) at the cost of one pass over the bytes;
 *     default false (descriptors and frame headers are always checksummed)
 * @param batchBytes above 0 ({@link #DEFAULT_BATCH_BYTES}, 64 KiB, by default): small items
 *     are kept in the writer's native staging buffer and sent together, in one system call,
 *     once this many bytes are pending, on {@link Writer#flush()}, and on
 *     {@link Writer#close()}, as a {@code BufferedOutputStream} does (an item with a payload
 *     over 64 KiB is always sent before {@code write} returns, together with what is pending).
 *     0: every {@link Writer#write} sends its item before it returns, as a request/response
 *     protocol without {@code flush()} calls needs. Bytes; at most 64 MiB
 */
public record WriterOptions(boolean payloadChecksums, long batchBytes) {
    /** Largest {@link #batchBytes()}: 64 MiB. */
    public static final long MAX_BATCH_BYTES = 64L << 20;
    /** A good batch size for many small tensors over a socket: 64 KiB. */
    public static final long DEFAULT_BATCH_BYTES = 64L << 10;

    private static final WriterOptions DEFAULTS = new WriterOptions(false, DEFAULT_BATCH_BYTES);

    /**
     * Validates the settings.
     *
     * @throws IllegalArgumentException if {@code batchBytes} is negative or above {@link #MAX_BATCH_BYTES}
     */
    public WriterOptions {
        if (batchBytes < 0 || batchBytes > MAX_BATCH_BYTES) {
            throw new IllegalArgumentException("batchBytes " + batchBytes + " is outside 0.." + MAX_BATCH_BYTES);
        }
    }

    /** Settings with the given checksum choice and the default batch size. */
    public WriterOptions(boolean payloadChecksums) {
        this(payloadChecksums, DEFAULT_BATCH_BYTES);
    }

    /** The defaults: no payload checksums, batches of {@link #DEFAULT_BATCH_BYTES}. */
    public static WriterOptions defaults() {
        return DEFAULTS;
    }

    /** A copy with {@code payloadChecksums} changed. */
    public WriterOptions withPayloadChecksums(boolean on) {
        return new WriterOptions(on, batchBytes);
    }

    /**
     * A copy with {@code batchBytes} changed (0 turns batching off; {@link #DEFAULT_BATCH_BYTES}
     * suits streams of small tensors).
     *
     * @throws IllegalArgumentException outside 0..{@link #MAX_BATCH_BYTES}
     */
    public WriterOptions withBatchBytes(long bytes) {
        return new WriterOptions(payloadChecksums, bytes);
    }
}
