package dev.hurray;

import dev.hurray.internal.NativeReader;
import java.util.Objects;

/**
 * Settings of a {@link Reader}: the native reader's limits (docs/spec/stream.md §Limits),
 * whether payload checksums are required, the {@link TensorScope} of the tensors it returns, and
 * the cap of its buffer pool.
 *
 * <p>The limits are checked before anything is allocated for an item, so hostile input cannot
 * make the reader allocate more than they allow: a descriptor or tensor over a limit fails with
 * {@link Status#LIMIT_EXCEEDED}. Limits above the format's maxima (rank 32, descriptor 16 MiB)
 * are refused when the reader is made ({@link Status#INVALID_ARGUMENT}).
 *
 * <h2>Buffer pool</h2>
 * A reader keeps the native memory of tensors that were {@linkplain Tensor#close() closed} (up
 * to {@link #bufferPoolBytes()} bytes of it) and reads later tensors into it instead of asking
 * for new memory, whose first touch costs a page fault per 4 KiB page (docs/spec/stream.md
 * §Buffer pool). Ownership is unchanged: a tensor's buffers are its own until it is closed;
 * only then can their memory be reused, and the segments of a closed tensor throw
 * {@link IllegalStateException}, so reuse is never observable. Holding tensors keeps nothing
 * extra. Reuse needs the same alignment and a size at least the new buffer's and less than
 * twice it. Memory held by the pool is bounded by the cap (and 64 allocations), stays resident
 * while the reader is open, and is freed when the reader is closed; buffers of tensors still
 * open then are freed when those tensors are closed. 0 turns the pool off.
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
 * @param bufferPoolBytes most bytes of closed tensors' memory the reader keeps for reuse
 *     (default {@link #DEFAULT_BUFFER_POOL_BYTES}, 256 MiB; 0 = no pool)
 */
public record ReaderOptions(int maxRank, long maxDescriptorBytes, long maxTensorBytes,
        boolean requirePayloadChecksums, TensorScope tensorScope, long bufferPoolBytes) {
    /** The default cap of a reader's buffer pool: 256 MiB. */
    public static final long DEFAULT_BUFFER_POOL_BYTES = 256L << 20;

    /**
     * The format's largest encoded descriptor, 16 MiB ({@code HURRAY_MAX_DESCRIPTOR_BYTES},
     * docs/spec/c-abi.md): the most {@link #withMaxDescriptorBytes} accepts, and what a writer
     * may produce. A reader of files or streams that such writers made needs it; the 1 MiB
     * default bounds what a hostile peer can make a reader hold before a tensor arrives.
     */
    public static final long MAX_DESCRIPTOR_BYTES = 16L << 20;

    /** The defaults once asked for (not a static initializer: see {@link FileReaderOptions#defaults()}). */
    private static volatile ReaderOptions defaults;

    /**
     * Checks the Java values; limits above the format's maxima are refused by the native library
     * when a reader is made.
     *
     * @throws IllegalArgumentException for a negative limit or pool cap
     * @throws NullPointerException for a null scope
     */
    public ReaderOptions {
        if (maxRank < 0 || maxDescriptorBytes < 0 || maxTensorBytes < 0) {
            throw new IllegalArgumentException("reader limits must not be negative");
        }
        if (bufferPoolBytes < 0) {
            throw new IllegalArgumentException("bufferPoolBytes must not be negative");
        }
        Objects.requireNonNull(tensorScope, "tensorScope");
    }

    /**
     * Options with the default buffer pool ({@link #DEFAULT_BUFFER_POOL_BYTES}); see the
     * canonical constructor.
     */
    public ReaderOptions(int maxRank, long maxDescriptorBytes, long maxTensorBytes,
            boolean requirePayloadChecksums, TensorScope tensorScope) {
        this(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, tensorScope,
                DEFAULT_BUFFER_POOL_BYTES);
    }

    /**
     * The native library's defaults ({@code hurray_reader_options_init}), with confined tensors
     * and a buffer pool of {@link #DEFAULT_BUFFER_POOL_BYTES}.
     */
    public static ReaderOptions defaults() {
        ReaderOptions o = defaults;
        if (o == null) {
            long[] d = NativeReader.cachedDefaultLimits();
            o = new ReaderOptions((int) d[0], d[1], d[2], false, TensorScope.CONFINED, DEFAULT_BUFFER_POOL_BYTES);
            defaults = o;
        }
        return o;
    }

    /** A copy with {@code maxRank} changed. */
    public ReaderOptions withMaxRank(int maxRank) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code maxDescriptorBytes} (bytes) changed. */
    public ReaderOptions withMaxDescriptorBytes(long maxDescriptorBytes) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code maxTensorBytes} (bytes) changed. */
    public ReaderOptions withMaxTensorBytes(long maxTensorBytes) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code requirePayloadChecksums} changed. */
    public ReaderOptions withRequirePayloadChecksums(boolean require) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, require, tensorScope, bufferPoolBytes);
    }

    /**
     * A copy with the buffer pool's cap changed: the most bytes of closed tensors' native memory
     * the reader keeps for reuse (see the class comment; 0 turns the pool off).
     *
     * @throws IllegalArgumentException for a negative value
     */
    public ReaderOptions withBufferPoolBytes(long bytes) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, tensorScope, bytes);
    }

    /** A copy with {@code tensorScope} changed. */
    public ReaderOptions withTensorScope(TensorScope scope) {
        return new ReaderOptions(maxRank, maxDescriptorBytes, maxTensorBytes, requirePayloadChecksums, scope, bufferPoolBytes);
    }
}
