package dev.hurray;

import static dev.hurray.Tensor.le;

import dev.hurray.internal.NativeLayouts;
import dev.hurray.internal.NativeQuant;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * The conversions of {@link Tensor}: typed copies ({@code toFloatArray} …), dequantize, cast
 * and quantize, densify and gather. Each makes new memory from a tensor's buffers through the
 * native core; the public contracts (ownership, errors, threads) are on the {@link Tensor}
 * methods that delegate here.
 */
final class TensorConversions {
    private static final int MAX_ARRAY = Integer.MAX_VALUE - 8;

    private TensorConversions() {
    }

    static float[] toFloatArray(Tensor t) {
        return values(t, ElementType.FLOAT32, ValueLayout.JAVA_FLOAT_UNALIGNED,
                s -> s.toArray(le(ValueLayout.JAVA_FLOAT_UNALIGNED)), ElementType.FLOAT32);
    }

    static double[] toDoubleArray(Tensor t) {
        return values(t, ElementType.FLOAT64, ValueLayout.JAVA_DOUBLE_UNALIGNED,
                s -> s.toArray(le(ValueLayout.JAVA_DOUBLE_UNALIGNED)), ElementType.FLOAT64);
    }

    static int[] toIntArray(Tensor t) {
        return values(t, ElementType.INT32, ValueLayout.JAVA_INT_UNALIGNED,
                s -> s.toArray(le(ValueLayout.JAVA_INT_UNALIGNED)), ElementType.INT32, ElementType.UINT32);
    }

    static long[] toLongArray(Tensor t) {
        return values(t, ElementType.INT64, ValueLayout.JAVA_LONG_UNALIGNED,
                s -> s.toArray(le(ValueLayout.JAVA_LONG_UNALIGNED)), ElementType.INT64, ElementType.UINT64);
    }

    static short[] toShortArray(Tensor t) {
        return values(t, ElementType.INT16, ValueLayout.JAVA_SHORT_UNALIGNED,
                s -> s.toArray(le(ValueLayout.JAVA_SHORT_UNALIGNED)), ElementType.INT16, ElementType.UINT16,
                ElementType.FLOAT16, ElementType.BFLOAT16);
    }

    static byte[] toByteArray(Tensor t) {
        return values(t, ElementType.INT8, ValueLayout.JAVA_BYTE, s -> s.toArray(ValueLayout.JAVA_BYTE),
                ElementType.BOOL, ElementType.INT8, ElementType.UINT8, ElementType.FLOAT8_E4M3FN, ElementType.FLOAT8_E5M2,
                ElementType.FLOAT8_E4M3FNUZ, ElementType.FLOAT8_E5M2FNUZ, ElementType.FLOAT8_E3M4,
                ElementType.FLOAT8_E8M0FNU);
    }

    /**
     * A typed copy made by {@code toArray} from buffer 0 itself when the tensor is an
     * unquantized one of {@code bitwise}, else from the values converted to {@code target} by
     * the native core.
     */
    private static <A> A values(Tensor t, ElementType target, ValueLayout layout,
            java.util.function.Function<MemorySegment, A> toArray, ElementType... bitwise) {
        TensorDescriptor descriptor = t.descriptor();
        if (descriptor.quantization().isEmpty() && java.util.Arrays.asList(bitwise).contains(descriptor.elementType())) {
            return toArray.apply(elements(t, layout, bitwise));
        }
        long bytes = copyableCount(t) * layout.byteSize();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(Math.max(1, bytes), 8).asSlice(0, bytes);
            NativeQuant.dequantizeTo(descriptor.nativeHandle(), t.rawBuffers(), target.code(), out);
            return toArray.apply(out);
        } catch (HurrayException e) {
            throw new IllegalStateException("cannot convert " + descriptor + " to " + target + ": " + e.getMessage(), e);
        }
    }

    private static MemorySegment elements(Tensor tensor, ValueLayout layout, ElementType... accepted) {
        tensor.requireOpen();
        TensorDescriptor descriptor = tensor.descriptor();
        ElementType t = descriptor.elementType();
        boolean ok = false;
        for (ElementType a : accepted) {
            ok |= a == t;
        }
        if (!ok) {
            throw new IllegalStateException("tensor is " + t + "; this copy needs " + java.util.Arrays.toString(accepted));
        }
        long n = copyableCount(tensor); // before buffer 0 is looked for: a composite head has none
        return tensor.rawBuffers()[0].asSlice(descriptor.byteOffset(), n * layout.byteSize());
    }

    /** The element count of an open row-major tensor that fits a Java array, else the reason as an exception. */
    private static long copyableCount(Tensor t) {
        t.requireOpen();
        TensorDescriptor descriptor = t.descriptor();
        if (descriptor.layout().kind() != Layout.Kind.ROW_MAJOR) {
            throw new IllegalStateException("tensor layout is " + descriptor.layout()
                    + "; typed copies are row-major only (read buffer(0) directly)");
        }
        if (descriptor.buffers().isEmpty()) {
            throw new IllegalStateException("tensor " + descriptor + " has no buffers (a composite head holds no"
                    + " data: read its members)");
        }
        long n = descriptor.elementCount();
        if (n > MAX_ARRAY) {
            throw new IllegalStateException(n + " elements do not fit a Java array");
        }
        return n;
    }

    static Tensor dequantize(Tensor src) throws HurrayException {
        src.requireOpen();
        TensorDescriptor descriptor = src.descriptor();
        Layout layout = descriptor.layout().kind() == Layout.Kind.COLUMN_MAJOR ? Layout.columnMajor() : Layout.rowMajor();
        checkDenseOutput(descriptor, ElementType.FLOAT32);
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, descriptor.shape()).layout(layout).buildChecked();
        Tensor t = Tensor.allocate(d);
        try {
            NativeQuant.dequantize(descriptor.nativeHandle(), src.rawBuffers(), t.rawBuffers()[0], descriptor.elementCount());
            return t;
        } catch (HurrayException | RuntimeException e) {
            t.close();
            throw e;
        }
    }

    static Tensor dequantize(Tensor src, ElementType target) throws HurrayException {
        Objects.requireNonNull(target, "target");
        src.requireOpen();
        TensorDescriptor descriptor = src.descriptor();
        Layout layout = descriptor.layout().kind() == Layout.Kind.COLUMN_MAJOR ? Layout.columnMajor() : Layout.rowMajor();
        checkDenseOutput(descriptor, target);
        TensorDescriptor d = TensorDescriptor.builder(target, descriptor.shape()).layout(layout).buildChecked();
        Tensor t = Tensor.allocate(d);
        try {
            NativeQuant.dequantizeTo(descriptor.nativeHandle(), src.rawBuffers(), target.code(), t.rawBuffers()[0]);
            return t;
        } catch (HurrayException | RuntimeException e) {
            t.close();
            throw e;
        }
    }

    /**
     * Refuses, before anything is allocated, a dense result over {@link Tensor#DEFAULT_MAX_DENSE_BYTES}
     * for a sparse or paged tensor: its element count is the logical shape's, which its buffers
     * do not back (a few bytes can declare a huge shape), as {@link Tensor#densify()} refuses it.
     * A dense tensor's result is bounded by its own buffer times the widening.
     */
    private static void checkDenseOutput(TensorDescriptor descriptor, ElementType target) throws HurrayException {
        Layout.Kind kind = descriptor.layout().kind();
        if (kind.isSparse() || kind == Layout.Kind.PAGED) {
            String first = kind == Layout.Kind.PAGED ? "gather" : "densify";
            requireDenseWithin(descriptor, target, Tensor.DEFAULT_MAX_DENSE_BYTES, "dequantize",
                    "call " + first + "(maxBytes) first if this is intended");
        }
    }

    /**
     * Refuses with {@link Status#LIMIT_EXCEEDED} a dense {@code type} form of {@code descriptor}'s
     * shape of more than {@code maxBytes} bytes, or one whose size does not fit 64 bits; the
     * message names {@code op} and ends with {@code remedy}.
     */
    private static void requireDenseWithin(TensorDescriptor descriptor, ElementType type, long maxBytes, String op,
            String remedy) throws HurrayException {
        long need;
        try {
            need = type.byteSizeOf(descriptor.elementCount());
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw new HurrayException(Status.LIMIT_EXCEEDED, op + ": the dense form of " + descriptor.shape()
                    + " does not fit 64-bit byte counts", e);
        }
        if (need > maxBytes) {
            throw new HurrayException(Status.LIMIT_EXCEEDED, op + ": the dense form of " + type.formatName()
                    + descriptor.shape() + " needs " + need + " bytes, over the limit of " + maxBytes + " bytes; "
                    + remedy, null);
        }
    }

    static Tensor cast(Tensor src, ElementType target) {
        try {
            return quantize(src, target, null);
        } catch (HurrayException e) {
            throw e.asCallerMistake();
        }
    }

    static Tensor quantize(Tensor src, ElementType storedType, Quantization quantization) throws HurrayException {
        Objects.requireNonNull(storedType, "storedType");
        MemorySegment in = elements(src, ValueLayout.JAVA_FLOAT_UNALIGNED, ElementType.FLOAT32);
        TensorDescriptor descriptor = src.descriptor();
        if (descriptor.quantization().isPresent()) {
            throw new IllegalStateException("tensor is already quantized");
        }
        TensorDescriptor.Builder b = TensorDescriptor.builder(storedType, descriptor.shape());
        if (quantization instanceof Quantization.PerChannelAffine p) {
            long channels = p.axis() < descriptor.shape().rank() ? descriptor.shape().dims()[p.axis()] : 0;
            b.buffer(BufferSpec.cpu(storedType.byteSizeOf(descriptor.elementCount())))
                    .buffer(BufferSpec.cpu(4 * channels)).buffer(BufferSpec.cpu(4 * channels));
        }
        if (quantization != null) {
            b.quantization(quantization);
        }
        Tensor t = Tensor.allocate(b.buildChecked());
        try {
            NativeQuant.quantize(t.descriptor().nativeHandle(), in, descriptor.elementCount(), t.rawBuffers());
            return t;
        } catch (HurrayException | RuntimeException e) {
            t.close();
            throw e;
        }
    }

    static Tensor densify(Tensor src, long maxBytes) throws HurrayException {
        TensorDescriptor descriptor = src.descriptor();
        if (!descriptor.layout().kind().isSparse()) {
            throw new IllegalStateException("densify needs a sparse layout, not " + descriptor.layout());
        }
        return toDense(src, true, maxBytes);
    }

    static Tensor gather(Tensor src, long maxBytes) throws HurrayException {
        TensorDescriptor descriptor = src.descriptor();
        if (descriptor.layout().kind() != Layout.Kind.PAGED) {
            throw new IllegalStateException("gather needs a block-paged layout, not " + descriptor.layout());
        }
        return toDense(src, false, maxBytes);
    }

    private static Tensor toDense(Tensor src, boolean sparse, long maxBytes) throws HurrayException {
        if (maxBytes < 0) {
            throw new IllegalArgumentException("maxBytes " + maxBytes + " < 0");
        }
        TensorDescriptor descriptor = src.descriptor();
        String op = sparse ? "densify" : "gather";
        requireDenseWithin(descriptor, descriptor.elementType(), maxBytes, op,
                "pass a larger limit to Tensor." + op + "(maxBytes) if this is intended");
        TensorDescriptor dense = TensorDescriptor.of(descriptor.elementType(), descriptor.shape());
        src.pin();
        try {
            Tensor out = Tensor.allocate(dense);
            try {
                NativeLayouts.toDense(descriptor.nativeHandle(), src.rawBuffers(), out.rawBuffers()[0], sparse);
                return out;
            } catch (HurrayException | RuntimeException | Error e) {
                out.close();
                throw e;
            }
        } finally {
            src.unpin();
        }
    }
}
