package dev.hurray;

import dev.hurray.ffm.hurray_h;
import java.util.Objects;

/**
 * A descriptor's optional quantization block: how stored values map to logical values
 * (docs/spec/descriptor.md §Quantization; {@code HurrayQuantization} in {@code hurray.h}).
 *
 * <p>The native library checks the block against the stored element type when the descriptor
 * is built (affine kinds need an integer type, {@link Cast} a float type; per-channel needs 3
 * buffers and a valid axis). The block-scaled kinds ({@link BlockScaled}: {@link Nf4},
 * {@link Mx}, {@link Nvfp4}, {@link PerGroup}, {@link Block}) make a descriptor version 2; their
 * buffer tables and element types are in docs/spec/descriptor.md §Block quantization kinds, and
 * their sizes are checked against the shape, axis and block size when the descriptor is built.
 *
 * <p>All implementations are immutable records, safe to share between threads.
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

    /**
     * The block-scaled kinds of descriptor version 2 ({@code HurrayBlockQuant} in
     * {@code hurray.h}): a scale (and for {@link PerGroup} a zero point) per block of
     * {@link #block()} elements along {@link #axis()}.
     */
    sealed interface BlockScaled extends Quantization permits Nf4, Mx, Nvfp4, PerGroup, Block {
        /** The block axis (0 for {@link Nf4}, whose blocks run over the row-major flattening). */
        int axis();

        /** Elements per block (group); at least 1. */
        int block();

        /** NF4 double quantization: absmax values per float32 second-level scale; else 0. */
        default int block2() {
            return 0;
        }

        /** Element type of the scale buffer (buffer 1). */
        ElementType scaleType();

        /** The kind's name: {@code nf4}, {@code mx}, {@code nvfp4}, {@code per-group}, {@code q8_0} or {@code q4_0}. */
        default String kindName() {
            return switch (code()) {
                case 4 -> "nf4";
                case 5 -> "mx";
                case 6 -> "nvfp4";
                case 7 -> "per-group";
                case 8 -> "q8_0";
                default -> "q4_0";
            };
        }
    }

    private static int positive(String what, int v) {
        if (v <= 0) {
            throw new IllegalArgumentException(what + " must be positive, not " + v);
        }
        return v;
    }

    private static int nonNegative(String what, int v) {
        if (v < 0) {
            throw new IllegalArgumentException("negative " + what + " " + v);
        }
        return v;
    }

    /**
     * NF4: 4-bit NormalFloat codes ({@code uint4}) with one absmax per {@code block} consecutive
     * row-major elements (buffer 1: float32 absmax; with double quantization, buffer 1 holds
     * {@code absmaxType} codes and buffer 2 one float32 scale per {@code block2} of them).
     *
     * @param block elements per block, even (default 64)
     * @param absmaxType {@code float32}, or {@code int8}/{@code float8_e4m3fn} with double quantization
     * @param block2 absmax values per second-level scale, 0 without double quantization
     * @param dequantized the logical element type (default float32)
     */
    record Nf4(int block, ElementType absmaxType, int block2, ElementType dequantized) implements BlockScaled {
        /** @throws IllegalArgumentException for a non-positive block or negative block2 */
        public Nf4 {
            positive("block", block);
            nonNegative("block2", block2);
            Objects.requireNonNull(absmaxType, "absmaxType");
            Objects.requireNonNull(dequantized, "dequantized");
        }

        /** NF4 with float32 absmax per 64 elements, no double quantization. */
        public static Nf4 of() {
            return builder().build();
        }

        /** A builder starting from the defaults (block 64, float32 absmax, float32 output). */
        public static Builder builder() {
            return new Builder();
        }

        @Override
        public int code() {
            return 4;
        }

        @Override
        public int axis() {
            return 0;
        }

        @Override
        public ElementType scaleType() {
            return absmaxType;
        }

        /** Builder for {@link Nf4}; not thread-safe. */
        public static final class Builder {
            private int block = 64;
            private ElementType absmaxType = ElementType.FLOAT32;
            private int block2;
            private ElementType dequantized = ElementType.FLOAT32;

            private Builder() {
            }

            /** Elements per block (even). */
            public Builder block(int block) {
                this.block = block;
                return this;
            }

            /** Double quantization: absmax stored as {@code type} with a float32 scale per {@code block2}. */
            public Builder doubleQuant(ElementType type, int block2) {
                this.absmaxType = type;
                this.block2 = block2;
                return this;
            }

            /** The logical element type. */
            public Builder dequantized(ElementType type) {
                this.dequantized = type;
                return this;
            }

            /** @throws IllegalArgumentException for invalid values */
            public Nf4 build() {
                return new Nf4(block, absmaxType, block2, dequantized);
            }
        }
    }

    /**
     * OCP Microscaling v1.0: elements of {@code float8_e4m3fn}, {@code float8_e5m2},
     * {@code float6_e2m3fn}, {@code float6_e3m2fn}, {@code float4_e2m1fn} or {@code int8}
     * (MXINT8) with one E8M0 scale (buffer 1) per {@code block} elements along {@code axis}.
     *
     * @param axis the block axis (usually the last)
     * @param block elements per block, dividing {@code dims[axis]} (OCP: 32)
     * @param dequantized the logical element type
     */
    record Mx(int axis, int block, ElementType dequantized) implements BlockScaled {
        /** @throws IllegalArgumentException for a negative axis or non-positive block */
        public Mx {
            nonNegative("axis", axis);
            positive("block", block);
            Objects.requireNonNull(dequantized, "dequantized");
        }

        /** MX with blocks of 32 along {@code axis}, dequantizing to float32. */
        public static Mx of(int axis) {
            return new Mx(axis, 32, ElementType.FLOAT32);
        }

        /** A builder for blocks along {@code axis} (block 32, float32 output). */
        public static AxisBuilder<Mx> builder(int axis) {
            return new AxisBuilder<>(axis, 32, (a, b, d) -> new Mx(a, b, d));
        }

        @Override
        public int code() {
            return 5;
        }

        @Override
        public ElementType scaleType() {
            return ElementType.FLOAT8_E8M0FNU;
        }
    }

    /**
     * NVFP4: {@code float4_e2m1fn} elements, one {@code float8_e4m3fn} scale per {@code block}
     * elements along {@code axis} (buffer 1) and one float32 per-tensor scale (buffer 2, 4 bytes):
     * {@code value = (e2m1 × scale) × tensorScale}.
     *
     * @param axis the block axis
     * @param block elements per block (NVIDIA: 16)
     * @param dequantized the logical element type
     */
    record Nvfp4(int axis, int block, ElementType dequantized) implements BlockScaled {
        /** @throws IllegalArgumentException for a negative axis or non-positive block */
        public Nvfp4 {
            nonNegative("axis", axis);
            positive("block", block);
            Objects.requireNonNull(dequantized, "dequantized");
        }

        /** NVFP4 with blocks of 16 along {@code axis}. */
        public static Nvfp4 of(int axis) {
            return new Nvfp4(axis, 16, ElementType.FLOAT32);
        }

        /** A builder for blocks along {@code axis} (block 16, float32 output). */
        public static AxisBuilder<Nvfp4> builder(int axis) {
            return new AxisBuilder<>(axis, 16, (a, b, d) -> new Nvfp4(a, b, d));
        }

        @Override
        public int code() {
            return 6;
        }

        @Override
        public ElementType scaleType() {
            return ElementType.FLOAT8_E4M3FN;
        }
    }

    /**
     * Per-group affine (GPTQ/AWQ style) over {@code int4}, {@code uint4}, {@code int8} or
     * {@code uint8}: {@code value = (q − zero[g]) × scale[g]}, groups of {@code group} elements
     * along {@code axis}; buffer 1 holds the scales and buffer 2 the zero points, both of
     * {@code scaleType} (float32, float16 or bfloat16).
     *
     * @param axis the group axis
     * @param group elements per group, dividing {@code dims[axis]}
     * @param scaleType type of scales and zero points
     * @param dequantized the logical element type
     */
    record PerGroup(int axis, int group, ElementType scaleType, ElementType dequantized) implements BlockScaled {
        /** @throws IllegalArgumentException for a negative axis or non-positive group */
        public PerGroup {
            nonNegative("axis", axis);
            positive("group", group);
            Objects.requireNonNull(scaleType, "scaleType");
            Objects.requireNonNull(dequantized, "dequantized");
        }

        /** Float32 scales and zero points per {@code group} elements along {@code axis}. */
        public static PerGroup of(int axis, int group) {
            return new PerGroup(axis, group, ElementType.FLOAT32, ElementType.FLOAT32);
        }

        /**
         * A builder for groups along {@code axis} (group 128, float32 output); the scale type
         * (default float32) is set with {@link AxisBuilder#scaleType}.
         */
        public static AxisBuilder<PerGroup> builder(int axis) {
            return new AxisBuilder<>(axis, 128, null);
        }

        @Override
        public int code() {
            return 7;
        }

        @Override
        public int block() {
            return group;
        }
    }

    /**
     * Builder for the axis kinds ({@link Mx}, {@link Nvfp4}, {@link PerGroup}); not thread-safe.
     *
     * @param <Q> the kind it builds
     */
    final class AxisBuilder<Q extends BlockScaled> {
        private interface Make<Q> {
            Q make(int axis, int block, ElementType dequantized);
        }

        private int axis;
        private int block;
        private ElementType dequantized = ElementType.FLOAT32;
        private ElementType scaleType = ElementType.FLOAT32;
        private final Make<Q> make;

        private AxisBuilder(int axis, int block, Make<Q> make) {
            this.axis = axis;
            this.block = block;
            this.make = make;
        }

        /** The block axis. */
        public AxisBuilder<Q> axis(int axis) {
            this.axis = axis;
            return this;
        }

        /** Elements per block (group). */
        public AxisBuilder<Q> block(int block) {
            this.block = block;
            return this;
        }

        /** The logical element type. */
        public AxisBuilder<Q> dequantized(ElementType type) {
            this.dequantized = type;
            return this;
        }

        /** {@link PerGroup} only: the type of scales and zero points (float32, float16, bfloat16). */
        public AxisBuilder<Q> scaleType(ElementType type) {
            this.scaleType = type;
            return this;
        }

        /** @throws IllegalArgumentException for invalid values */
        @SuppressWarnings("unchecked")
        public Q build() {
            if (make == null) {
                return (Q) new PerGroup(axis, block, scaleType, dequantized);
            }
            return make.make(axis, block, dequantized);
        }
    }

    /** The GGUF block formats {@link Block} carries. */
    enum GgufFormat {
        /** {@code Q8_0}: 34-byte blocks (float16 {@code d}, 32 × int8); stored type int8. */
        Q8_0,
        /** {@code Q4_0}: 18-byte blocks (float16 {@code d}, 16 bytes of nibbles, value {@code (q − 8) × d}); stored type uint4. */
        Q4_0
    }

    /**
     * GGUF-style blocks of 32 elements along the last axis, stored exactly as llama.cpp does
     * (one buffer of interleaved blocks), so GGUF weights travel without conversion.
     *
     * @param format Q8_0 or Q4_0
     * @param axis the last axis ({@code rank − 1})
     * @param dequantized the logical element type
     */
    record Block(GgufFormat format, int axis, ElementType dequantized) implements BlockScaled {
        /** @throws IllegalArgumentException for a negative axis */
        public Block {
            Objects.requireNonNull(format, "format");
            nonNegative("axis", axis);
            Objects.requireNonNull(dequantized, "dequantized");
        }

        /** {@code format} blocks along the last axis of a rank-{@code rank} tensor. */
        public static Block of(GgufFormat format, int rank) {
            return new Block(format, Math.max(0, rank - 1), ElementType.FLOAT32);
        }

        @Override
        public int code() {
            return format == GgufFormat.Q8_0 ? 8 : 9;
        }

        @Override
        public int block() {
            return 32;
        }

        @Override
        public ElementType scaleType() {
            return ElementType.FLOAT16;
        }
    }

    /**
     * The block-scaled quantization with wire code {@code code} (4–9) and these parameters, as
     * read from a native descriptor.
     *
     * @throws IllegalArgumentException for a code outside 4–9
     */
    public static BlockScaled ofBlock(int code, ElementType dequantized, ElementType scaleType, int axis, int block, int block2) {
        return switch (code) {
            case 4 -> new Nf4(block, scaleType, block2, dequantized);
            case 5 -> new Mx(axis, block, dequantized);
            case 6 -> new Nvfp4(axis, block, dequantized);
            case 7 -> new PerGroup(axis, block, scaleType, dequantized);
            case 8 -> new Block(GgufFormat.Q8_0, axis, dequantized);
            case 9 -> new Block(GgufFormat.Q4_0, axis, dequantized);
            default -> throw new IllegalArgumentException("not a block quantization kind: " + code);
        };
    }
}
