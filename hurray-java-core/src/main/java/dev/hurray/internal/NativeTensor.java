package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.BufferSpec;
import dev.hurray.HurrayException;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Helpers over a native tensor ({@code HurrayTensor*}) read from a stream. Each borrows a
 * scratch area from {@link ScratchPool} for its out-parameters and gives it back before it
 * returns, or uses the caller's lent area; none calls back into Java.
 */
public final class NativeTensor {
    private NativeTensor() {
    }

    /** The tensor's borrowed descriptor ({@code hurray_tensor_descriptor}); valid until the tensor is destroyed. */
    public static MemorySegment descriptor(MemorySegment tensor) throws HurrayException {
        return ScratchPool.outAddress(s -> hurray_h.hurray_tensor_descriptor(tensor, s));
    }

    /** As {@link #descriptor(MemorySegment)}, through the {@code slots} of the caller's lent {@code area}. */
    static MemorySegment descriptor(MemorySegment tensor, MemorySegment area) throws HurrayException {
        Native.check(hurray_h.hurray_tensor_descriptor(tensor, area));
        return area.get(ADDRESS, 0);
    }

    /**
     * The tensor's buffers as segments bound to {@code arena}: each is the native allocation
     * (all data pointers in one {@code hurray_buffer_list_data_ptrs} call) resized to its spec's
     * byte size with {@code reinterpret(size, arena, null)}, so it becomes inaccessible when
     * {@code arena} closes. The caller destroys the native tensor only after closing
     * {@code arena}.
     */
    public static MemorySegment[] buffers(MemorySegment tensor, List<BufferSpec> specs, Arena arena) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            return buffers(tensor, specs, arena, s);
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /** As {@link #buffers(MemorySegment, List, Arena)}, in the caller's lent area {@code s} ({@code slots} and {@code pointers}). */
    static MemorySegment[] buffers(MemorySegment tensor, List<BufferSpec> specs, Arena arena, MemorySegment s) throws HurrayException {
        Native.check(hurray_h.hurray_tensor_buffers(tensor, s));
        MemorySegment list = s.get(ADDRESS, 0);
        MemorySegment ptrs = s.asSlice(Native.POINTERS_OFFSET, ADDRESS.byteSize() * NativeWriter.MAX_PAYLOADS);
        Native.check(hurray_h.hurray_buffer_list_data_ptrs(list, ptrs, NativeWriter.MAX_PAYLOADS, s));
        long n = s.get(JAVA_LONG, 0);
        if (n != specs.size()) {
            throw new HurrayException(dev.hurray.Status.CORRUPT,
                    "tensor has " + n + " buffers, its descriptor declares " + specs.size(), null);
        }
        MemorySegment[] out = new MemorySegment[(int) n];
        for (int i = 0; i < n; i++) {
            out[i] = ptrs.getAtIndex(ADDRESS, i).reinterpret(specs.get(i).byteSize(), arena, null);
        }
        return out;
    }

    /** Destroys a native tensor ({@code hurray_tensor_destroy}); its buffers are freed. */
    public static void destroy(MemorySegment tensor) {
        ScratchPool.destroyThroughSlot(tensor, hurray_h::hurray_tensor_destroy);
    }
}
