package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Downcalls to the core's dequantizer and quantizer ({@code hurray_dequantize},
 * {@code hurray_dequantize_to}, {@code hurray_quantize}; docs/spec/c-abi.md §Quantization). The format logic lives in the
 * native library; this class only passes segments. No upcalls; runs on the calling thread.
 */
public final class NativeQuant {
    private NativeQuant() {
    }

    /**
     * Dequantizes the tensor of native descriptor {@code descriptor} held in {@code buffers}
     * (one per buffer-table entry) into {@code out}, {@code count} float32 values in storage order.
     *
     * @throws HurrayException with the native status (e.g. {@code BUFFER_TOO_SMALL},
     *     {@code INVALID_ARGUMENT} for an E8M0 NaN scale, {@code UNSUPPORTED})
     */
    public static void dequantize(MemorySegment descriptor, MemorySegment[] buffers, MemorySegment out, long count)
            throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ptrs = a.allocate(ADDRESS, Math.max(1, buffers.length));
            MemorySegment lens = a.allocate(JAVA_LONG, Math.max(1, buffers.length));
            fill(a, buffers, ptrs, lens);
            if (!out.isNative()) {
                throw new IllegalArgumentException("out must be a native segment");
            }
            Native.check(hurray_h.hurray_dequantize(descriptor, ptrs, lens, buffers.length, out, count));
        }
    }

    /**
     * Dequantizes the tensor of native descriptor {@code descriptor} held in {@code buffers}
     * into {@code out} (a native segment of at least element count × {@code target}'s width
     * bytes) as little-endian {@code target} elements in storage order, rounded as
     * docs/spec/descriptor.md §Dequantization says.
     *
     * @throws HurrayException with the native status ({@code UNSUPPORTED} for a target that is
     *     not float16/bfloat16/float32/float64 or an 8- to 64-bit integer, {@code BUFFER_TOO_SMALL},
     *     and those of {@link #dequantize})
     */
    public static void dequantizeTo(MemorySegment descriptor, MemorySegment[] buffers, int target, MemorySegment out)
            throws HurrayException {
        if (!out.isNative()) {
            throw new IllegalArgumentException("out must be a native segment");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ptrs = a.allocate(ADDRESS, Math.max(1, buffers.length));
            MemorySegment lens = a.allocate(JAVA_LONG, Math.max(1, buffers.length));
            fill(a, buffers, ptrs, lens);
            Native.check(hurray_h.hurray_dequantize_to(descriptor, ptrs, lens, buffers.length, (byte) target, out,
                    out.byteSize()));
        }
    }

    /**
     * Quantizes {@code count} float32 values of {@code input} into {@code buffers} (native
     * segments, one per buffer-table entry of {@code descriptor}); the buffers are zeroed first.
     *
     * @throws HurrayException with the native status (e.g. {@code INVALID_ARGUMENT} for a
     *     non-finite input, {@code UNSUPPORTED})
     */
    public static void quantize(MemorySegment descriptor, MemorySegment input, long count, MemorySegment[] buffers)
            throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ptrs = a.allocate(ADDRESS, Math.max(1, buffers.length));
            MemorySegment lens = a.allocate(JAVA_LONG, Math.max(1, buffers.length));
            for (MemorySegment b : buffers) {
                if (!b.isNative()) {
                    throw new IllegalArgumentException("quantize writes native segments only");
                }
            }
            fill(a, buffers, ptrs, lens);
            Native.check(hurray_h.hurray_quantize(descriptor, nativeOf(a, input), count, ptrs, lens, buffers.length));
        }
    }

    private static void fill(Arena a, MemorySegment[] buffers, MemorySegment ptrs, MemorySegment lens) {
        for (int i = 0; i < buffers.length; i++) {
            ptrs.setAtIndex(ADDRESS, i, nativeOf(a, buffers[i]));
            lens.setAtIndex(JAVA_LONG, i, buffers[i].byteSize());
        }
    }

    /** {@code s} itself when native, else a native copy in {@code a} (heap segments cannot cross). */
    private static MemorySegment nativeOf(Arena a, MemorySegment s) {
        if (s.isNative()) {
            return s;
        }
        MemorySegment c = a.allocate(Math.max(1, s.byteSize()), 8);
        MemorySegment.copy(s, 0, c, 0, s.byteSize());
        return c.asSlice(0, s.byteSize());
    }
}
