package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import dev.hurray.HurrayException;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * DLPack through the C ABI ({@code hurray_dlpack_export}, {@code hurray_dlpack_import};
 * docs/spec/dlpack.md, docs/spec/c-abi.md §DLPack): the library builds and reads the structs,
 * Java lends memory and adopts the result.
 */
public final class NativeDLPack {
    private NativeDLPack() {
    }

    /**
     * A new {@code DLManagedTensorVersioned*} over {@code data} (buffer 0 of the descriptor
     * {@code encoded}), lent to the library with the release action {@code releaseKey}: the
     * action runs exactly once, when the consumer's deleter drops the last share, or before this
     * throws.
     *
     * @throws HurrayException the library's refusal ({@code UNSUPPORTED}: quantized, sparse,
     *     several buffers; alignment and size errors)
     */
    public static MemorySegment export(byte[] encoded, MemorySegment data, int alignment, int deviceTag, long flags,
            long releaseKey) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bytes = a.allocate(encoded.length);
            MemorySegment.copy(encoded, 0, bytes, JAVA_BYTE, 0, encoded.length);
            MemorySegment out = a.allocate(ADDRESS);
            MemorySegment descriptor;
            MemorySegment buffer;
            try {
                Native.check(hurray_h.hurray_descriptor_decode(bytes, encoded.length, out));
                descriptor = out.get(ADDRESS, 0);
            } catch (HurrayException e) {
                Releases.run(releaseKey, "dlpack export");
                throw e;
            }
            try {
                try {
                    buffer = NativeBuffers.fromPtr(MemorySegment.ofAddress(data.address()), data.byteSize(), alignment,
                            deviceTag, releaseKey);
                } catch (HurrayException e) {
                    Releases.run(releaseKey, "dlpack export"); // never handed to the library
                    throw e;
                }
                HurrayException failure;
                try {
                    int rc = hurray_h.hurray_dlpack_export(descriptor, buffer, flags, out);
                    failure = rc < 0 ? Native.error(rc, null) : null; // the message, before anything else runs
                } finally {
                    // The export holds its own share of the buffer; on failure this runs the action.
                    NativeBuffers.destroy(buffer);
                }
                if (failure != null) {
                    throw failure;
                }
                return out.get(ADDRESS, 0);
            } finally {
                hurray_h.hurray_descriptor_destroy(descriptor);
            }
        }
    }

    /**
     * Imports a producer's {@code DLManagedTensorVersioned*} ({@code hurray_dlpack_import}):
     * the returned {@code HurrayTensor*} owns the producer's memory, whose deleter runs when
     * the tensor is destroyed ({@link NativeTensor#destroy}). On failure the deleter has run.
     */
    public static MemorySegment importTensor(MemorySegment managed) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            Native.check(hurray_h.hurray_dlpack_import(managed, out));
            return out.get(ADDRESS, 0);
        }
    }

    /** A copy of the encoding of the native tensor's descriptor. */
    public static byte[] descriptorBytes(MemorySegment tensor) throws HurrayException {
        return NativeDescriptor.encodedView(NativeTensor.descriptor(tensor)).toArray(JAVA_BYTE);
    }
}
