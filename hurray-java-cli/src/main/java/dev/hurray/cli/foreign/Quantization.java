package dev.hurray.cli.foreign;

import java.util.Objects;

/**
 * How a tensor's stored values map to its logical values. Mirrors the two Hurray quantization
 * kinds a foreign format can produce (native {@code hurray-core} {@code Quantization}): code 1
 * per-tensor affine and code 3 cast.
 */
public sealed interface Quantization permits Quantization.Affine, Quantization.Cast {

    /** The logical element type after dequantization. */
    DType dequantized();

    /** Short human form for tables, e.g. {@code affine(scale=0.01,bias=-1.2)->float32}. */
    String describe();

    /**
     * Per-tensor affine: {@code value = q * scale + bias}. tfjs uint8/uint16 quantization maps
     * here with {@code bias = min}; the stored type is an integer type.
     *
     * @param scale       finite scale, kept as the double the source wrote
     * @param bias        finite bias (tfjs {@code min}), kept as the double the source wrote
     * @param dequantized the logical type (float32 or int32 for tfjs)
     */
    record Affine(double scale, double bias, DType dequantized) implements Quantization {
        public Affine {
            Objects.requireNonNull(dequantized, "dequantized");
            if (!Double.isFinite(scale) || !Double.isFinite(bias)) {
                throw new IllegalArgumentException("affine scale and bias must be finite");
            }
        }

        @Override
        public String describe() {
            return "affine(scale=" + scale + ",bias=" + bias + ")->" + dequantized;
        }
    }

    /**
     * Cast: values are stored in a narrower float type and convert exactly to
     * {@code dequantized} (tfjs float16 quantization of a float32 weight).
     */
    record Cast(DType dequantized) implements Quantization {
        public Cast {
            Objects.requireNonNull(dequantized, "dequantized");
        }

        @Override
        public String describe() {
            return "cast->" + dequantized;
        }
    }
}
