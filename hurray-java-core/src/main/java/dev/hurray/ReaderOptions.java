package dev.hurray;

import dev.hurray.internal.NativeReader;
import java.util.Objects;

/**
 * Settings of a {@link Reader}: the native reader's limits (docs/spec/stream.md §Limits),
 * whether payload checksums are required, and the {@link TensorScope} of the tensors it returns.
 *
 * <p>The limits are checked before anything is allocated for an item, so hostile input cannot
 * make the reader allocate more than they allow: a descriptor or tensor over a limit fails with
 * {@link Status#LIMIT_EXCEEDED}. Limits above the format's maxima (rank 32, descriptor 16 MiB)
 * are refused when the reader is made ({@link Status#INVALID_ARGUMENT}).
 *
 * <p>Immutable; derive changed copies with the {@code with…} methods, starting from
 * {@link #defaults()}.
 *
 * @param maxRank largest accepted rank (default and maximum 32)
 * @param maxDescriptorBytes largest accepted encoded descriptor, in bytes (default 1 MiB, at most 16 MiB)
 * @param maxTensorBytes largest accepted sum of one tensor's buffer sizes, in bytes (default 64 GiB)
 * @param requirePayloadChecksums fail with {@link Status#CORRUPT} on a stream written without
 *     payload checksums (default false)
 * @param tensorScope the thread scope of the tensors read (default {@link TensorScope#CONFINED}:
 *     the thread that called {@link Reader#read()} owns the tensor)
 */
public record ReaderOptions(int maxRank, long maxDescriptorBytes, long maxTensorBytes,
        boolean requirePayloadChecksums, TensorScope tensorScope) {
    private static final ReaderOptions DEFAULTS;

    static {
        long[] d = NativeReader.defaultLimits();
        DEFAULTS = new ReaderOptions((int) d[0], d[1], d[2], false, TensorScope.CONFINED);
    }

    /**
     * Checks the Java values; limits above the format's maxima are refused by the native library
     * when a reader is made.
     *
     * @throws IllegalArgumentException for a negative limit
     * @throws NullPointerException for a null scope
     */
    public ReaderOptions {
        if (maxRank < 0 || maxDescriptorBytes < 0 || maxTensorBytes < 0) {
            throw new IllegalArgumentException("reader limits must not be negative");
        }
        Objects.requireNonNull(tensorScope, "tensorScope");
    }

    /** The native library's defaults ({@code hurray_reader_options_init}), with confined tensors. */
    public static ReaderOptions defaults() {
        return DEFAULTS;
    }

    /** A copy with {@code maxRank} changed. */
    public ReaderOptions withMaxRank(int maxRank) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, tensorScope);
    }

    /** A copy with {@code maxDescriptorBytes} (bytes) changed. */
    public ReaderOptions withMaxDescriptorBytes(long maxDescriptorBytes) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, tensorScope);
    }

    /** A copy with {@code maxTensorBytes} (bytes) changed. */
    public ReaderOptions withMaxTensorBytes(long maxTensorBytes) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, tensorScope);
    }

    /** A copy with {@code requirePayloadChecksums} changed. */
    public ReaderOptions withRequirePayloadChecksums(boolean require) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, require, tensorScope);
    }

    /** A copy with {@code tensorScope} changed. */
    public ReaderOptions withTensorScope(TensorScope scope) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, scope);
    }
}
