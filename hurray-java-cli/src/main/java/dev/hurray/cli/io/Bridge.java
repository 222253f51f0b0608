package dev.hurray.cli.io;

import dev.hurray.BufferSpec;
import dev.hurray.DeviceTag;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Shape;
import dev.hurray.TensorDescriptor;
import dev.hurray.cli.foreign.DType;
import dev.hurray.cli.foreign.ForeignFormatException;
import dev.hurray.cli.foreign.ForeignTensor;
import dev.hurray.cli.foreign.Layout;
import dev.hurray.cli.foreign.Payloads;
import dev.hurray.cli.foreign.Quantization;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Maps between the foreign-format model ({@link ForeignTensor}) and Hurray's
 * ({@link TensorDescriptor} plus payload segments). Descriptors are built by the native library
 * ({@link TensorDescriptor.Builder#build()}); this class only chooses the fields.
 *
 * <ul>
 *   <li>element types map one for one by wire code ({@link DType#code()} =
 *       {@link ElementType#code()}, checked by name too);</li>
 *   <li>row-/column-major map to the Hurray layouts of the same name; strided Hurray layouts
 *       have no foreign counterpart;</li>
 *   <li>{@link Quantization.Affine} (tfjs uint8/uint16 {@code scale}/{@code min}) becomes
 *       per-tensor affine with {@code bias = min}; {@link Quantization.Cast} (tfjs float16)
 *       becomes cast; per-channel affine has no foreign counterpart;</li>
 *   <li>the tensor's name becomes the descriptor's name; a foreign tensor's buffer is one dense
 *       CPU buffer at 64-byte alignment, byte offset 0.</li>
 * </ul>
 */
public final class Bridge {
    private Bridge() {
    }

    /** The Hurray element type of {@code d}. */
    public static ElementType elementType(DType d) {
        ElementType e = ElementType.fromCode(d.code());
        if (!e.formatName().equals(d.typeName())) {
            throw new IllegalStateException("element type code " + d.code() + " is " + e + " in Hurray but " + d + " here");
        }
        return e;
    }

    /** The foreign-model type of {@code e}. */
    public static DType dtype(ElementType e) {
        DType d = DType.values()[e.code()];
        if (!d.typeName().equals(e.formatName())) {
            throw new IllegalStateException("element type code " + e.code() + " is " + e + " in Hurray but " + d + " here");
        }
        return d;
    }

    /** The Hurray quantization block of {@code q} ({@code null} for none). */
    public static dev.hurray.Quantization quantization(Quantization q) {
        if (q == null) {
            return null;
        }
        return switch (q) {
            case Quantization.Affine a -> new dev.hurray.Quantization.PerTensorAffine(a.scale(), a.bias(),
                    elementType(a.dequantized()));
            case Quantization.Cast c -> new dev.hurray.Quantization.Cast(elementType(c.dequantized()));
        };
    }

    /**
     * The descriptor of {@code t}: its type, shape, layout, quantization and name, one dense CPU
     * buffer of {@code t.byteSize()} bytes at 64-byte alignment.
     *
     * @throws ForeignFormatException if Hurray cannot describe the tensor (rank above 32, or the
     *     native library refuses a field; the message says which)
     */
    public static TensorDescriptor descriptor(ForeignTensor t) throws ForeignFormatException {
        Shape shape;
        try {
            shape = Shape.of(t.shape());
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException("tensor '" + t.name() + "' cannot be a Hurray tensor: " + e.getMessage());
        }
        try {
            return TensorDescriptor.builder(elementType(t.dtype()), shape)
                    .layout(t.layout() == Layout.COLUMN_MAJOR ? dev.hurray.Layout.columnMajor() : dev.hurray.Layout.rowMajor())
                    .quantization(quantization(t.quantization().orElse(null)))
                    .name(t.name())
                    .buffer(BufferSpec.cpu(t.byteSize()))
                    .build();
        } catch (HurrayException e) {
            throw new ForeignFormatException("tensor '" + t.name() + "' cannot be a Hurray tensor: " + e.getMessage());
        }
    }

    /**
     * {@code data} itself when it is native memory at a multiple of {@link DeviceTag#MIN_ALIGNMENT}
     * (64 bytes), else a copy allocated at that alignment in {@code scratch}. Slices of a file
     * mapping (safetensors, npy) are often not aligned: Hurray buffers must be.
     */
    public static MemorySegment aligned(MemorySegment data, Arena scratch) {
        if (data.isNative() && data.address() % DeviceTag.MIN_ALIGNMENT == 0) {
            return data;
        }
        MemorySegment copy = Payloads.allocate(scratch, Math.max(1, data.byteSize())).asSlice(0, data.byteSize());
        MemorySegment.copy(data, 0, copy, 0, data.byteSize());
        return copy;
    }

    /**
     * The foreign-model tensor for a Hurray descriptor and its payloads, when a foreign format
     * can express it: one dense buffer, byte offset 0, row- or column-major, no quantization or
     * the per-tensor affine/cast kinds. The payload is used as is (not copied).
     *
     * @param payloads the buffers, buffer-table order
     * @param sourceOffset the payload's byte offset in its source file, or -1
     * @throws ForeignFormatException naming what cannot be expressed
     */
    public static ForeignTensor foreign(TensorDescriptor d, List<MemorySegment> payloads, long sourceOffset)
            throws ForeignFormatException {
        String name = d.name().orElse(null);
        if (name == null || name.isEmpty()) {
            throw new ForeignFormatException("a tensor without a name cannot be written to a named-tensor format");
        }
        String what = "tensor '" + name + "' (" + d + ")";
        Layout layout = switch (d.layout().kind()) {
            case ROW_MAJOR -> Layout.ROW_MAJOR;
            case COLUMN_MAJOR -> Layout.COLUMN_MAJOR;
            case STRIDED -> throw new ForeignFormatException(what + ": a strided layout has no counterpart in this format");
        };
        if (payloads.size() != 1 || d.buffers().size() != 1) {
            throw new ForeignFormatException(what + ": " + d.buffers().size()
                    + " buffers; this format holds one dense buffer per tensor");
        }
        long dense = d.elementType().byteSizeOf(d.elementCount());
        if (d.byteOffset() != 0 || payloads.get(0).byteSize() != dense) {
            throw new ForeignFormatException(what + ": the elements do not fill buffer 0 exactly (byte offset "
                    + d.byteOffset() + ", " + payloads.get(0).byteSize() + " bytes for " + dense + ")");
        }
        Quantization q = null;
        if (d.quantization().isPresent()) {
            q = switch (d.quantization().get()) {
                case dev.hurray.Quantization.PerTensorAffine a -> new Quantization.Affine(a.scale(), a.bias(),
                        dtype(a.dequantized()));
                case dev.hurray.Quantization.Cast c -> new Quantization.Cast(dtype(c.dequantized()));
                case dev.hurray.Quantization.PerChannelAffine p -> throw new ForeignFormatException(what
                        + ": per-channel quantization has no counterpart in this format");
                case dev.hurray.Quantization.BlockScaled b -> throw new ForeignFormatException(what + ": "
                        + b.kindName() + " quantization has no counterpart in this format (use --dequantize)");
            };
        }
        try {
            return new ForeignTensor(name, dtype(d.elementType()), d.shape().dims(), layout, payloads.get(0), q, sourceOffset);
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException(what + ": " + e.getMessage());
        }
    }
}
