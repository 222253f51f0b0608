package dev.hurray.cli.io;

import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import dev.hurray.formats.Payloads;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code --quantize KIND[:block=N][:axis=K]}: quantizes float tensors on the way through the
 * native core ({@link Tensor#quantize}); the arithmetic is the core's (docs/spec/descriptor.md
 * §Quantization). Defaults: MX blocks of 32 along the last axis, NVFP4 blocks of 16 along the
 * last axis, NF4 blocks of 64 consecutive row-major elements with float32 absmax, GGUF blocks of
 * 32 along the last axis, int8 per-channel along axis 0.
 *
 * <p>Tensors that are not float ({@code float16}, {@code bfloat16}, {@code float32},
 * {@code float64}, or already quantized), scalars, and tensors whose shape the blocks do not
 * fit (an axis length the block does not divide) are copied unchanged.
 */
public final class Quantize {
    /** The kind names {@code --quantize} accepts. */
    public static final List<String> KINDS = List.of("nf4", "mxfp4", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp8_e4m3",
            "mxfp8_e5m2", "mxint8", "nvfp4", "q8_0", "q4_0", "int8-per-channel");

    /**
     * A parsed {@code --quantize} value.
     *
     * @param kind one of {@link #KINDS}
     * @param block the block size, or 0 for the kind's default
     * @param axis the axis, or −1 for the kind's default
     */
    public record Spec(String kind, int block, int axis) {
    }

    private Quantize() {
    }

    /**
     * Parses {@code KIND[:block=N][:axis=K]}.
     *
     * @throws IllegalArgumentException with a message naming what is wrong
     */
    public static Spec parse(String text) {
        String[] parts = text.split(":");
        String kind = parts[0].toLowerCase(Locale.ROOT);
        if (!KINDS.contains(kind)) {
            throw new IllegalArgumentException("unknown quantization kind '" + parts[0] + "' (one of " + String.join(", ", KINDS) + ")");
        }
        int block = 0;
        int axis = -1;
        for (int i = 1; i < parts.length; i++) {
            String[] kv = parts[i].split("=", 2);
            int v;
            try {
                v = Integer.parseInt(kv.length == 2 ? kv[1] : "");
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("'" + parts[i] + "': expected block=N or axis=K");
            }
            switch (kv[0]) {
                case "block" -> {
                    if (v <= 0) {
                        throw new IllegalArgumentException("block must be positive, not " + v);
                    }
                    block = v;
                }
                case "axis" -> {
                    if (v < 0) {
                        throw new IllegalArgumentException("axis must not be negative, not " + v);
                    }
                    axis = v;
                }
                default -> throw new IllegalArgumentException("'" + parts[i] + "': expected block=N or axis=K");
            }
        }
        if ((kind.equals("q8_0") || kind.equals("q4_0")) && (block != 0 && block != 32)) {
            throw new IllegalArgumentException("GGUF blocks are 32 elements");
        }
        return new Spec(kind, block, axis);
    }

    /** The stored element type of a kind. */
    static ElementType storedType(String kind) {
        return switch (kind) {
            case "nf4", "q4_0" -> ElementType.UINT4;
            case "mxfp4", "nvfp4" -> ElementType.FLOAT4_E2M1FN;
            case "mxfp6_e2m3" -> ElementType.FLOAT6_E2M3FN;
            case "mxfp6_e3m2" -> ElementType.FLOAT6_E3M2FN;
            case "mxfp8_e4m3" -> ElementType.FLOAT8_E4M3FN;
            case "mxfp8_e5m2" -> ElementType.FLOAT8_E5M2;
            default -> ElementType.INT8; // mxint8, q8_0, int8-per-channel
        };
    }

    /** The quantization block of {@code spec} for a tensor of {@code rank} (≥ 1). */
    static Quantization quantization(Spec spec, int rank) {
        int last = rank - 1;
        int axis = spec.axis() >= 0 ? spec.axis() : last;
        return switch (spec.kind()) {
            case "nf4" -> Quantization.Nf4.builder().block(spec.block() > 0 ? spec.block() : 64).build();
            case "nvfp4" -> new Quantization.Nvfp4(axis, spec.block() > 0 ? spec.block() : 16, ElementType.FLOAT32);
            case "q8_0" -> Quantization.Block.of(Quantization.GgufFormat.Q8_0, rank);
            case "q4_0" -> Quantization.Block.of(Quantization.GgufFormat.Q4_0, rank);
            case "int8-per-channel" -> new Quantization.PerChannelAffine(spec.axis() >= 0 ? spec.axis() : 0, ElementType.FLOAT32);
            default -> new Quantization.Mx(axis, spec.block() > 0 ? spec.block() : 32, ElementType.FLOAT32);
        };
    }

    /** Whether the blocks of {@code q} fit {@code dims} (else the tensor is copied unchanged). */
    private static boolean fits(Quantization q, long[] dims) {
        if (q instanceof Quantization.PerChannelAffine p) {
            return p.axis() < dims.length;
        }
        Quantization.BlockScaled b = (Quantization.BlockScaled) q;
        if (b instanceof Quantization.Nf4) {
            return true;
        }
        return b.axis() < dims.length && dims[b.axis()] % b.block() == 0;
    }

    /**
     * {@code item} quantized as {@code spec}, with its name and metadata, in memory from
     * {@code arena}; or {@code item} itself when it is not a float tensor or its shape does not
     * fit the blocks.
     *
     * @throws ForeignFormatException when the native core refuses the tensor (the message says why)
     */
    public static Item apply(Item item, Arena arena, Spec spec) throws ForeignFormatException {
        TensorDescriptor d = item.descriptor();
        ElementType t = d.elementType();
        boolean isFloat = t == ElementType.FLOAT32 || t == ElementType.FLOAT16 || t == ElementType.BFLOAT16
                || t == ElementType.FLOAT64;
        long[] dims = d.shape().dims();
        if (!isFloat || d.quantization().isPresent() || dims.length == 0) {
            return item;
        }
        Quantization q = quantization(spec, dims.length);
        if (!fits(q, dims)) {
            return item;
        }
        try (Tensor src = Tensor.copyOf(d, item.payloads().toArray(MemorySegment[]::new));
                Tensor f32 = t == ElementType.FLOAT32 ? null : src.dequantize();
                Tensor out = (f32 != null ? f32 : src).quantize(storedType(spec.kind()), q)) {
            TensorDescriptor.Builder b = TensorDescriptor.builder(out.descriptor().elementType(), d.shape()).quantization(q);
            out.descriptor().buffers().forEach(b::buffer);
            d.name().ifPresent(b::name);
            d.metadata().forEach(b::metadata);
            List<MemorySegment> payloads = new ArrayList<>();
            for (int i = 0; i < out.descriptor().buffers().size(); i++) {
                MemorySegment s = out.buffer(i);
                MemorySegment c = Payloads.allocate(arena, s.byteSize());
                MemorySegment.copy(s, 0, c, 0, s.byteSize());
                payloads.add(c);
            }
            return new Item(b.build(), payloads, -1);
        } catch (HurrayException | IllegalArgumentException | IllegalStateException e) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(item.name()) + "': cannot quantize as " + spec.kind() + ": "
                    + e.getMessage(), e);
        }
    }
}
