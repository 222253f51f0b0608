package dev.hurray;

import dev.hurray.ffm.hurray_h;
import java.util.Objects;

/**
 * A descriptor's optional quantization block: how stored values map to logical values
 * (docs/spec/descriptor.md §Quantization; {@code HurrayQuantization} in {@code hurray.h}).
 *
 * <p>The native library checks the block against the stored element type when the descriptor
 * is built (affine kinds need an integer type, {@link Cast} a float type; per-channel needs 3
 * buffers and a valid axis). NF4 and MXFP kinds are reserved in format version 1 and are
 * reported as {@link Status#UNSUPPORTED}.
 */
public sealed interface Quantization {
    /** The logical element type after dequantization. */
    ElementType dequantized();

    /** The one-byte wire code ({@code HURRAY_QUANT_*}). */
    int code();

    /**
     * Per-tensor affine: {@code value = q * scale + bias}, evaluated in {@code dequantized}.
     *
     * @param scale the scale
     * @param bias added after scaling
     * @param dequantized the logical element type
     */
    record PerTensorAffine(double scale, double bias, ElementType dequantized) implements Quantization {
        /**
         * Checks the Java values; the format rules (integer stored type, finite scale and bias)
         * are checked by the native builder.
         *
         * @throws NullPointerException for a null element type
         */
        public PerTensorAffine {
            Objects.requireNonNull(dequantized, "dequantized");
        }

        @Override
        public int code() {
            return hurray_h.HURRAY_QUANT_PER_TENSOR_AFFINE() & 0xFF;
        }
    }

    /**
     * Per-channel affine along {@code axis}: {@code value = q * scale[c] + bias[c]}, where
     * {@code c} is the index along {@code axis}; buffer 1 holds {@code dims[axis]} float32
     * scales and buffer 2 as many float32 biases.
     *
     * @param axis the channel axis, {@code 0 <= axis < rank}
     * @param dequantized the logical element type
     */
    record PerChannelAffine(int axis, ElementType dequantized) implements Quantization {
        /**
         * Checks the Java values; the axis range and the scale and bias buffers are checked by
         * the native builder.
         *
         * @throws IllegalArgumentException for a negative axis
         * @throws NullPointerException for a null element type
         */
        public PerChannelAffine {
            if (axis < 0) {
                throw new IllegalArgumentException("negative axis " + axis);
            }
            Objects.requireNonNull(dequantized, "dequantized");
        }

        @Override
        public int code() {
            return hurray_h.HURRAY_QUANT_PER_CHANNEL_AFFINE() & 0xFF;
        }
    }

    /**
     * Cast: values are stored in a narrower float type and converted exactly to
     * {@code dequantized} (e.g. float16 weights of a float32 model).
     *
     * @param dequantized the logical element type
     */
    record Cast(ElementType dequantized) implements Quantization {
        /**
         * Checks the Java value; the float stored type is checked by the native builder.
         *
         * @throws NullPointerException for a null element type
         */
        public Cast {
            Objects.requireNonNull(dequantized, "dequantized");
        }

        @Override
        public int code() {
            return hurray_h.HURRAY_QUANT_CAST() & 0xFF;
        }
    }
}
