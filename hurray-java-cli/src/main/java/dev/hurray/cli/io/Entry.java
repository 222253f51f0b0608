package dev.hurray.cli.io;

import dev.hurray.ElementType;
import dev.hurray.Quantization;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignTensor;
import java.util.Arrays;

/**
 * What {@code inspect} shows of one tensor, read without its payload where the format allows.
 *
 * @param name the tensor's name
 * @param elementType the stored element type
 * @param shape dimensions in elements (empty for a scalar)
 * @param layout {@code row-major}, {@code column-major} or {@code strided(…)}
 * @param quantization the quantization block, or {@code null}
 * @param bytes the payload size in bytes (all buffers)
 * @param offset byte offset of buffer 0 in the file, or -1 when it has none
 * @param metadataKeys number of per-tensor metadata entries
 * @param descriptor the Hurray descriptor (sparse/paged parameters, composite membership), or
 *     {@code null} for a foreign tensor
 */
public record Entry(String name, ElementType elementType, long[] shape, String layout, Quantization quantization,
                    long bytes, long offset, int metadataKeys, TensorDescriptor descriptor) {

    /** From a Hurray descriptor. */
    public static Entry of(TensorDescriptor d, long offset) {
        return new Entry(d.name().orElse(""), d.elementType(), d.shape().dims(), d.layout().toString(),
                d.quantization().orElse(null), d.totalBufferBytes(), offset, d.metadata().size(), d);
    }

    /** From a foreign-format tensor (no native call: works for any rank). */
    public static Entry of(ForeignTensor t) {
        return new Entry(t.name(), t.dtype(), t.shape(), t.layout().formatName(),
                t.quantization().orElse(null), t.byteSize(), t.sourceOffset(), 0, null);
    }

    /** {@code [2, 3]}. */
    public String shapeString() {
        return Arrays.toString(shape);
    }

    /**
     * Short human form of a quantization block: {@code affine(scale=…,bias=…)->float32},
     * {@code per-channel(axis=0)->float32}, {@code cast->float32}, or {@code -} for none.
     */
    public static String describe(Quantization q) {
        return q == null ? "-" : dev.hurray.formats.Payloads.describe(q);
    }
}
