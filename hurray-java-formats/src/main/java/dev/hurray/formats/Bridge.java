package dev.hurray.formats;

import dev.hurray.BufferSpec;
import dev.hurray.DeviceTag;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Shape;
import dev.hurray.TensorDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Maps between a {@link ForeignTensor} and Hurray's {@link TensorDescriptor} plus payload
 * segments. Descriptors are built by the native library ({@link TensorDescriptor.Builder#build()});
 * this class only chooses the fields. Package-private: the public entry points are
 * {@link ForeignTensor#descriptor()}, {@link ForeignTensor#toTensor(Arena)} and
 * {@link ForeignTensor#of(TensorDescriptor, MemorySegment)}.
 *
 * <ul>
 *   <li>the element type and quantization are Hurray's own ({@link ElementType},
 *       {@link Quantization}): nothing to map;</li>
 *   <li>row-/column-major map to the Hurray layouts of the same name; strided Hurray layouts
 *       have no foreign counterpart;</li>
 *   <li>the tensor's name becomes the descriptor's name; a foreign tensor's buffer is one dense
 *       CPU buffer at 64-byte alignment, byte offset 0.</li>
 * </ul>
 */
final class Bridge {
    private Bridge() {
    }

    /**
     * The descriptor of {@code t}: its type, shape, layout, quantization and name, one dense CPU
     * buffer of {@code t.byteSize()} bytes at 64-byte alignment.
     *
     * @throws ForeignFormatException if Hurray cannot describe the tensor (rank above 32, or the
     *     native library refuses a field; the message says which)
     */
    static TensorDescriptor descriptor(ForeignTensor t) throws ForeignFormatException {
        Shape shape;
        try {
            shape = Shape.of(t.shape());
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "' cannot be a Hurray tensor: " + e.getMessage());
        }
        try {
            TensorDescriptor.Builder b = TensorDescriptor.builder(t.dtype(), shape)
                    .layout(t.layout() == Layout.Kind.COLUMN_MAJOR ? Layout.columnMajor() : Layout.rowMajor())
                    .quantization(t.quantization().orElse(null))
                    .name(t.name())
                    .buffer(BufferSpec.cpu(t.byteSize()));
            for (long s : t.scaleBufferSizes()) {
                b.buffer(BufferSpec.cpu(s));
            }
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "' cannot be a Hurray tensor: " + e.getMessage(), e);
        }
    }

    /**
     * {@code data} itself when it is native memory at a multiple of {@link DeviceTag#MIN_ALIGNMENT}
     * (64 bytes), else a copy allocated at that alignment in {@code scratch}. Slices of a file
     * mapping (safetensors, npy) are often not aligned: Hurray buffers must be.
     */
    static MemorySegment aligned(MemorySegment data, Arena scratch) {
        if (data.isNative() && data.address() % DeviceTag.MIN_ALIGNMENT == 0) {
            return data;
        }
        MemorySegment copy = Payloads.allocate(scratch, Math.max(1, data.byteSize())).asSlice(0, data.byteSize());
        MemorySegment.copy(data, 0, copy, 0, data.byteSize());
        return copy;
    }

    /**
     * The foreign tensor for a Hurray descriptor and its payloads, when a foreign format can
     * express it: one dense buffer (plus the quantization's further buffers, which only
     * safetensors' MX pairing writes), byte offset 0, row- or column-major. The payload is used as
     * is (not copied). Quantization is kept; each writer refuses what it cannot record.
     *
     * @param payloads the buffers, buffer-table order
     * @param sourceOffset the payload's byte offset in its source file, or -1
     * @throws ForeignFormatException naming what cannot be expressed
     */
    static ForeignTensor foreign(TensorDescriptor d, List<MemorySegment> payloads, long sourceOffset)
            throws ForeignFormatException {
        String name = d.name().orElse(null);
        if (name == null || name.isEmpty()) {
            throw new ForeignFormatException("a tensor without a name cannot be written to a named-tensor format");
        }
        String what = "tensor '" + dev.hurray.TensorNames.forMessage(name) + "' (" + d + ")";
        Layout.Kind layout = d.layout().kind();
        if (layout != Layout.Kind.ROW_MAJOR && layout != Layout.Kind.COLUMN_MAJOR) {
            throw new ForeignFormatException(what + ": a " + layout.formatName() + " layout has no counterpart in this format");
        }
        boolean scales = d.quantization().isPresent() && payloads.size() > 1;
        if (payloads.size() != d.buffers().size() || (payloads.size() != 1 && !scales)) {
            throw new ForeignFormatException(what + ": " + d.buffers().size()
                    + " buffers; this format holds one dense buffer per tensor");
        }
        long dense;
        try {
            dense = ForeignTensor.payloadSize(d.elementType(), d.shape().dims(), d.quantization().orElse(null));
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw new ForeignFormatException(what + ": " + e.getMessage());
        }
        if (d.byteOffset() != 0 || payloads.get(0).byteSize() != dense) {
            throw new ForeignFormatException(what + ": the elements do not fill buffer 0 exactly (byte offset "
                    + d.byteOffset() + ", " + payloads.get(0).byteSize() + " bytes for " + dense + ")");
        }
        try {
            return new ForeignTensor(name, d.elementType(), d.shape().dims(), layout, payloads.get(0),
                    d.quantization().orElse(null), payloads.subList(1, payloads.size()), sourceOffset);
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException(what + ": " + e.getMessage());
        }
    }
}
