package dev.hurray;

import dev.hurray.internal.NativeFileWriter;

/**
 * Settings of a {@link HurrayFileWriter} (docs/spec/hrryfile.md §7, writer options).
 *
 * <p>Immutable; derive changed copies with the {@code with…} methods, starting from
 * {@link #defaults()}.
 *
 * @param payloadChecksums store each payload's CRC32C in the index so that readers detect
 *     damaged payloads ({@link Status#CORRUPT}); default true. Turning it off saves one pass
 *     over every payload at add time (e.g. for very large tensors); index, metadata, header and
 *     trailer are always checksummed.
 * @param minPayloadAlignment every payload starts at a file offset that is a multiple of at
 *     least this many bytes, or of its buffer's declared alignment when that is larger: a power
 *     of two from 64 to 2 MiB (checked natively, {@link Status#INVALID_ALIGNMENT}); default 64.
 *     4096 makes every payload page-aligned in the file.
 * @param syncOnFinish for {@link HurrayFile#create}: force the written bytes to storage
 *     ({@link java.nio.channels.FileChannel#force(boolean)}) before the atomic rename, so that
 *     after a power loss the target holds either the old file or the complete new one; default
 *     true. Ignored by writers over streams and channels.
 */
public record FileWriterOptions(boolean payloadChecksums, long minPayloadAlignment, boolean syncOnFinish) {
    /** The defaults once asked for (not a static initializer: see {@link FileReaderOptions#defaults()}). */
    private static volatile FileWriterOptions defaults;

    /**
     * Checks what a Java value can check; the native library checks the alignment rules.
     *
     * @throws IllegalArgumentException for a minimum alignment that is not positive
     */
    public FileWriterOptions {
        if (minPayloadAlignment <= 0) {
            throw new IllegalArgumentException("minPayloadAlignment must be positive, got " + minPayloadAlignment);
        }
    }

    /** The defaults: payload checksums on, 64-byte minimum alignment, sync on finish. */
    public static FileWriterOptions defaults() {
        FileWriterOptions o = defaults;
        if (o == null) {
            o = new FileWriterOptions(true, NativeFileWriter.defaultMinPayloadAlignment(), true);
            defaults = o;
        }
        return o;
    }

    /** A copy with {@code payloadChecksums} changed. */
    public FileWriterOptions withPayloadChecksums(boolean on) {
        return new FileWriterOptions(on, minPayloadAlignment, syncOnFinish);
    }

    /** A copy with {@code minPayloadAlignment} (bytes) changed. */
    public FileWriterOptions withMinPayloadAlignment(long bytes) {
        return new FileWriterOptions(payloadChecksums, bytes, syncOnFinish);
    }

    /** A copy with {@code syncOnFinish} changed. */
    public FileWriterOptions withSyncOnFinish(boolean on) {
        return new FileWriterOptions(payloadChecksums, minPayloadAlignment, on);
    }
}
