package dev.hurray;

/**
 * Settings of a {@link Writer}.
 *
 * @param payloadChecksums follow every payload with its CRC32C (docs/spec/stream.md), so readers
 *     detect corrupted payloads ({@link Status#CORRUPT}) at the cost of one pass over the bytes;
 *     default false (descriptors and frame headers are always checksummed)
 */
public record WriterOptions(boolean payloadChecksums) {
    private static final WriterOptions DEFAULTS = new WriterOptions(false);

    /** The defaults: no payload checksums. */
    public static WriterOptions defaults() {
        return DEFAULTS;
    }

    /** A copy with {@code payloadChecksums} changed. */
    public WriterOptions withPayloadChecksums(boolean on) {
        return new WriterOptions(on);
    }
}
