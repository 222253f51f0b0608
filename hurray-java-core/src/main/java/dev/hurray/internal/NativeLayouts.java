package dev.hurray.internal;

import dev.hurray.HurrayException;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Densify (sparse layouts) and gather (block-paged layout) through the native library
 * ({@code hurray_sparse_densify}, {@code hurray_paged_gather}; docs/spec/c-abi.md §Sparse,
 * paged and composite tensors). The format logic, index checks included, is native; this
 * class only passes the payload segments as {@code HurrayIoSlice}s.
 *
 * <p>Thread-safe; one short confined arena per call for the slice array (no upcalls).
 */
public final class NativeLayouts {
    private NativeLayouts() {}

    /**
     * Writes the dense row-major form of a sparse ({@code sparse == true}) or block-paged
     * tensor into {@code dst} (at least the dense byte count of its shape).
     *
     * @param descriptor a live native descriptor handle
     * @param payloads the tensor's buffers in buffer-table order (host memory)
     * @throws HurrayException {@code CORRUPT} for an index or page-table entry out of range,
     *     {@code BUFFER_TOO_SMALL}, {@code INVALID_ARGUMENT} (wrong layout, device memory),
     *     {@code UNSUPPORTED} (summing float16/bfloat16/fp8 duplicates)
     */
    public static void toDense(MemorySegment descriptor, MemorySegment[] payloads, MemorySegment dst, boolean sparse)
            throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment slices = slices(a, payloads);
            MemorySegment out = dst.byteSize() == 0 ? MemorySegment.NULL : dst;
            int status = sparse
                    ? hurray_h.hurray_sparse_densify(descriptor, slices, payloads.length, out, dst.byteSize())
                    : hurray_h.hurray_paged_gather(descriptor, slices, payloads.length, out, dst.byteSize());
            Native.check(status);
        }
    }

    /**
     * Checks a sparse or block-paged tensor's indices, indptr or page table
     * ({@code hurray_layout_check_contents}) without writing anything; other layouts pass.
     *
     * @throws HurrayException {@code CORRUPT} naming the first offending position,
     *     {@code BUFFER_TOO_SMALL}, {@code INVALID_ARGUMENT} (payload count, device memory)
     */
    public static void checkContents(MemorySegment descriptor, MemorySegment[] payloads) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            Native.check(hurray_h.hurray_layout_check_contents(descriptor, slices(a, payloads), payloads.length));
        }
    }

    private static MemorySegment slices(Arena a, MemorySegment[] payloads) {
        long size = HurrayIoSlice.layout().byteSize();
        MemorySegment slices = a.allocate(size * Math.max(1, payloads.length), 8);
        for (int i = 0; i < payloads.length; i++) {
            MemorySegment s = slices.asSlice(i * size, size);
            HurrayIoSlice.ptr(s, payloads[i].byteSize() == 0 ? MemorySegment.NULL : payloads[i]);
            HurrayIoSlice.len(s, payloads[i].byteSize());
        }
        return slices;
    }
}
