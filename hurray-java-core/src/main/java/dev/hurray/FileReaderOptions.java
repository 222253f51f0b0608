package dev.hurray;

import dev.hurray.internal.NativeFileReader;
import dev.hurray.ffm.hurray_h;
import java.util.Objects;

/**
 * Settings of a {@link HurrayFile}: the native container reader's limits and checks
 * (docs/spec/hrryfile.md §7 "Reader limits and options") and the {@link TensorScope} of the
 * tensors it returns.
 *
 * <p>The limits bound what a hostile file can make the reader allocate: an index, metadata
 * block, descriptor or tensor over its limit fails with {@link Status#LIMIT_EXCEEDED} before
 * anything is allocated for it; every range is also checked against the file's size first.
 * Values above the format's maxima are refused when the file is opened
 * ({@link Status#INVALID_ARGUMENT}).
 *
 * <p>Immutable; derive changed copies with the {@code with…} methods, starting from
 * {@link #defaults()}.
 *
 * @param eagerIndexBytes index plus file metadata up to this many bytes are read in one range
 *     at open and checked whole, so lookups then make no reads (default 1 MiB); larger indexes
 *     are read one 128-byte entry at a time (a lookup then costs O(log n) small reads)
 * @param maxDescriptorBytes largest accepted encoded descriptor, bytes (default 1 MiB, at most 16 MiB)
 * @param maxTensorBytes largest sum of one tensor's payloads read into new memory, bytes
 *     (default 64 GiB; zero-copy buffers of a {@link HurrayFile#map mapped} file are not counted)
 * @param maxMetadataBytes largest file-level metadata block, bytes (default and maximum 64 MiB)
 * @param maxIndexBytes largest index plus metadata {@link HurrayFile#verify()} loads, bytes (default 1 GiB)
 * @param payloadChecks whether payload CRC32Cs are checked when a tensor is read
 * @param verifyAtOpen run {@link HurrayFile#verify()} while opening (default false)
 * @param tensorScope the thread scope of the tensors read (default {@link TensorScope#CONFINED})
 * @param bufferPoolBytes most bytes of closed tensors' memory a file opened with
 *     {@link HurrayFile#open} keeps for reuse by later reads, so repeated reads of large tensors
 *     do not pay first-touch page faults (default {@link ReaderOptions#DEFAULT_BUFFER_POOL_BYTES},
 *     256 MiB; 0 = none; {@code hurray_file_reader_set_buffer_pool_bytes}, docs/spec/stream.md
 *     §Buffer pool). Memory is reused only after the tensor that held it is closed. Ignored by
 *     {@link HurrayFile#map}, whose tensors point into the mapping.
 */
public record FileReaderOptions(long eagerIndexBytes, long maxDescriptorBytes, long maxTensorBytes,
        long maxMetadataBytes, long maxIndexBytes, PayloadChecks payloadChecks, boolean verifyAtOpen,
        TensorScope tensorScope, long bufferPoolBytes) {

    /** When payload checksums (stored by the writer, docs/spec/hrryfile.md §3) are checked. */
    public enum PayloadChecks {
        /**
         * The native default: checked by {@link HurrayFile#open} (the bytes are being read
         * anyway), not by {@link HurrayFile#map} (checking would touch every page of the map
         * and defeat lazy paging).
         */
        DEFAULT,
        /** Always checked when a tensor or buffer is read ({@link Status#CORRUPT} on mismatch). */
        VERIFY,
        /** Never checked. */
        SKIP
    }

    /**
     * The defaults once asked for. Not a static initializer: a library that cannot be loaded (or
     * lacks the function) would leave this class unusable, every later use a NoClassDefFoundError
     * instead of the library's own error.
     */
    private static volatile FileReaderOptions defaults;

    /**
     * Checks the Java values; the native library checks the rest when a file is opened.
     *
     * @throws IllegalArgumentException for a negative limit
     * @throws NullPointerException for a null enum
     */
    public FileReaderOptions {
        if (eagerIndexBytes < 0 || maxDescriptorBytes < 0 || maxTensorBytes < 0 || maxMetadataBytes < 0
                || maxIndexBytes < 0 || bufferPoolBytes < 0) {
            throw new IllegalArgumentException("file reader limits must not be negative");
        }
        Objects.requireNonNull(payloadChecks, "payloadChecks");
        Objects.requireNonNull(tensorScope, "tensorScope");
    }

    /** The native library's defaults ({@code hurray_file_reader_options_init}), with confined tensors. */
    public static FileReaderOptions defaults() {
        FileReaderOptions o = defaults;
        if (o == null) {
            NativeFileReader.Settings d = NativeFileReader.Settings.defaults();
            o = new FileReaderOptions(d.eagerIndexBytes(), d.maxDescriptorBytes(), d.maxTensorBytes(),
                    d.maxMetadataBytes(), d.maxIndexBytes(), PayloadChecks.DEFAULT, false, TensorScope.CONFINED,
                    ReaderOptions.DEFAULT_BUFFER_POOL_BYTES);
            defaults = o;
        }
        return o;
    }

    /** A copy with {@code eagerIndexBytes} (bytes) changed. */
    public FileReaderOptions withEagerIndexBytes(long v) {
        return new FileReaderOptions(v, maxDescriptorBytes, maxTensorBytes, maxMetadataBytes, maxIndexBytes,
                payloadChecks, verifyAtOpen, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code maxDescriptorBytes} (bytes) changed. */
    public FileReaderOptions withMaxDescriptorBytes(long v) {
        return new FileReaderOptions(eagerIndexBytes, v, maxTensorBytes, maxMetadataBytes, maxIndexBytes,
                payloadChecks, verifyAtOpen, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code maxTensorBytes} (bytes) changed. */
    public FileReaderOptions withMaxTensorBytes(long v) {
        return new FileReaderOptions(eagerIndexBytes, maxDescriptorBytes, v, maxMetadataBytes, maxIndexBytes,
                payloadChecks, verifyAtOpen, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code maxMetadataBytes} (bytes) changed. */
    public FileReaderOptions withMaxMetadataBytes(long v) {
        return new FileReaderOptions(eagerIndexBytes, maxDescriptorBytes, maxTensorBytes, v, maxIndexBytes,
                payloadChecks, verifyAtOpen, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code maxIndexBytes} (bytes) changed. */
    public FileReaderOptions withMaxIndexBytes(long v) {
        return new FileReaderOptions(eagerIndexBytes, maxDescriptorBytes, maxTensorBytes, maxMetadataBytes, v,
                payloadChecks, verifyAtOpen, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code payloadChecks} changed. */
    public FileReaderOptions withPayloadChecks(PayloadChecks v) {
        return new FileReaderOptions(eagerIndexBytes, maxDescriptorBytes, maxTensorBytes, maxMetadataBytes,
                maxIndexBytes, v, verifyAtOpen, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code verifyAtOpen} changed. */
    public FileReaderOptions withVerifyAtOpen(boolean v) {
        return new FileReaderOptions(eagerIndexBytes, maxDescriptorBytes, maxTensorBytes, maxMetadataBytes,
                maxIndexBytes, payloadChecks, v, tensorScope, bufferPoolBytes);
    }

    /** A copy with {@code tensorScope} changed. */
    public FileReaderOptions withTensorScope(TensorScope v) {
        return new FileReaderOptions(eagerIndexBytes, maxDescriptorBytes, maxTensorBytes, maxMetadataBytes,
                maxIndexBytes, payloadChecks, verifyAtOpen, v, bufferPoolBytes);
    }

    /** A copy with {@code bufferPoolBytes} (bytes; 0 = no pool) changed. */
    public FileReaderOptions withBufferPoolBytes(long v) {
        return new FileReaderOptions(eagerIndexBytes, maxDescriptorBytes, maxTensorBytes, maxMetadataBytes,
                maxIndexBytes, payloadChecks, verifyAtOpen, tensorScope, v);
    }

    /** The native settings. */
    NativeFileReader.Settings toNative() {
        int flags = switch (payloadChecks) {
            case DEFAULT -> 0;
            case VERIFY -> hurray_h.HURRAY_FILE_READER_VERIFY_PAYLOADS();
            case SKIP -> hurray_h.HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS();
        };
        if (verifyAtOpen) {
            flags |= hurray_h.HURRAY_FILE_READER_VERIFY_AT_OPEN();
        }
        return new NativeFileReader.Settings(eagerIndexBytes, maxDescriptorBytes, maxTensorBytes, maxMetadataBytes,
                maxIndexBytes, flags);
    }
}
