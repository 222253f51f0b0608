package dev.hurray.cli.io;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Quantization;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import dev.hurray.formats.Payloads;
import dev.hurray.formats.Tfjs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * {@code --dequantize} for Hurray inputs: replaces a quantized tensor by its logical values,
 * computed as docs/spec/descriptor.md §Quantization kinds defines them.
 *
 * <ul>
 *   <li>Per-tensor affine, stored {@code int4 uint4 int8 uint8 int16 uint16 int32 uint32}:
 *       {@code q × scale + bias} evaluated in float64 and rounded once to the dequantized type:
 *       to nearest-even for {@code float32}, exact for {@code float64}; for the 8-, 16- and
 *       32-bit integer types, halves rounded towards +∞ and the result wrapped modulo 2^bits
 *       (NaN and infinities give 0, as tfjs's {@code Int32Array} store does). This is tfjs's own
 *       arithmetic, so a tfjs model converted to HRRYFILE and dequantized here gives the bits
 *       {@code hurray convert --dequantize model.json} (and tfjs) gives.</li>
 *   <li>Cast, stored {@code float16 bfloat16 float32} to a wider float type: exact.</li>
 * </ul>
 *
 * Other combinations (per-channel affine, FP8 casts, 64-bit or 16-bit-float targets) are
 * refused with a message. The native library has no dequantization entry point; this is the
 * command's own, limited to what converting to foreign formats needs.
 */
public final class Dequantize {
    private Dequantize() {
    }

    /**
     * {@code item} itself if it is not quantized, else a new item with the dequantized type, no
     * quantization block, the same name, layout and metadata, and values computed into memory
     * allocated in {@code arena}.
     *
     * @throws ForeignFormatException for a combination this command cannot compute
     */
    public static Item apply(Item item, Arena arena) throws ForeignFormatException {
        TensorDescriptor d = item.descriptor();
        if (d.quantization().isEmpty()) {
            return item;
        }
        Quantization q = d.quantization().get();
        String what = "tensor '" + item.name() + "' (" + d.elementType() + ", " + Entry.describe(q) + ")";
        if (q instanceof Quantization.PerChannelAffine) {
            throw new ForeignFormatException(what + ": per-channel dequantization is not supported by this command");
        }
        if (d.buffers().size() != 1 || d.byteOffset() != 0) {
            throw new ForeignFormatException(what + ": cannot dequantize a tensor with " + d.buffers().size()
                    + " buffers or a byte offset");
        }
        ElementType out = q.dequantized();
        long n = d.elementCount();
        MemorySegment src = item.payloads().get(0);
        MemorySegment dst;
        switch (q) {
            case Quantization.PerTensorAffine a -> {
                if (!isAffineStored(d.elementType())) {
                    throw new ForeignFormatException(what + ": affine quantization of stored " + d.elementType());
                }
                if (!isAffineTarget(out)) {
                    throw new ForeignFormatException(what + ": dequantizing to " + out
                            + " is not supported (float32, float64 and 8/16/32-bit integers are)");
                }
                dst = Payloads.allocate(arena, out.byteSizeOf(n));
                for (long i = 0; i < n; i++) {
                    store(dst, i, out, stored(src, i, d.elementType()), a.scale(), a.bias());
                }
            }
            case Quantization.Cast c -> {
                dst = Payloads.allocate(arena, out.byteSizeOf(n));
                cast(src, d.elementType(), dst, out, n, what);
            }
            case Quantization.PerChannelAffine p -> throw new IllegalStateException("handled above");
        }
        try {
            TensorDescriptor.Builder b = TensorDescriptor.builder(out, d.shape()).layout(d.layout())
                    .buffer(BufferSpec.cpu(dst.byteSize()));
            d.name().ifPresent(b::name);
            d.metadata().forEach(b::metadata);
            return new Item(b.build(), List.of(dst), -1);
        } catch (HurrayException e) {
            throw new ForeignFormatException(what + ": " + e.getMessage(), e);
        }
    }

    private static boolean isAffineStored(ElementType t) {
        return switch (t) {
            case INT4, UINT4, INT8, UINT8, INT16, UINT16, INT32, UINT32 -> true;
            default -> false;
        };
    }

    private static boolean isAffineTarget(ElementType t) {
        return switch (t) {
            case FLOAT32, FLOAT64, INT8, UINT8, INT16, UINT16, INT32, UINT32 -> true;
            default -> false;
        };
    }

    /** Stored value {@code i} as a long (packed 4-bit: lower index in the low nibble). */
    static long stored(MemorySegment s, long i, ElementType t) {
        return switch (t) {
            case INT8 -> s.get(ValueLayout.JAVA_BYTE, i);
            case UINT8 -> Byte.toUnsignedLong(s.get(ValueLayout.JAVA_BYTE, i));
            case INT16 -> s.get(Payloads.LE_SHORT, i * 2);
            case UINT16 -> Short.toUnsignedLong(s.get(Payloads.LE_SHORT, i * 2));
            case INT32 -> s.get(Payloads.LE_INT, i * 4);
            case UINT32 -> Integer.toUnsignedLong(s.get(Payloads.LE_INT, i * 4));
            case INT4, UINT4 -> {
                int b = s.get(ValueLayout.JAVA_BYTE, i / 2);
                int nib = (i % 2 == 0 ? b : b >> 4) & 0xF;
                yield t == ElementType.INT4 && nib >= 8 ? nib - 16 : nib;
            }
            default -> throw new IllegalArgumentException(t.toString());
        };
    }

    private static void store(MemorySegment dst, long i, ElementType out, long q, double scale, double bias) {
        double x = q * scale + bias;
        switch (out) {
            case FLOAT32 -> dst.set(Payloads.LE_FLOAT, i * 4, (float) x);
            case FLOAT64 -> dst.set(LE_DOUBLE, i * 8, x);
            case INT32, UINT32 -> dst.set(Payloads.LE_INT, i * 4, (int) roundWrap(x, 32));
            case INT16, UINT16 -> dst.set(Payloads.LE_SHORT, i * 2, (short) roundWrap(x, 16));
            case INT8, UINT8 -> dst.set(ValueLayout.JAVA_BYTE, i, (byte) roundWrap(x, 8));
            default -> throw new IllegalArgumentException(out.toString());
        }
    }

    /**
     * {@code x} rounded half towards +∞ and wrapped modulo 2^bits (the low {@code bits} bits of
     * the result); 0 for NaN and infinities. For 32 bits this is tfjs's int32 rule
     * ({@link Tfjs#dequantizeInt32}).
     */
    static long roundWrap(double x, int bits) {
        if (!Double.isFinite(x)) {
            return 0;
        }
        double r = Math.floor(x);
        if (x - r >= 0.5) {
            r += 1;
        }
        double m = r % Math.scalb(1.0, bits); // exact: remainder of integers held exactly in a double
        return (long) m & ((1L << bits) - 1);
    }

    private static void cast(MemorySegment src, ElementType from, MemorySegment dst, ElementType to, long n, String what)
            throws ForeignFormatException {
        boolean ok = (to == ElementType.FLOAT32 && (from == ElementType.FLOAT16 || from == ElementType.BFLOAT16))
                || (to == ElementType.FLOAT64 && (from == ElementType.FLOAT16 || from == ElementType.BFLOAT16
                || from == ElementType.FLOAT32));
        if (!ok) {
            throw new ForeignFormatException(what + ": casting " + from + " to " + to + " is not supported "
                    + "(float16/bfloat16 to float32/float64 and float32 to float64 are)");
        }
        for (long i = 0; i < n; i++) {
            float f = switch (from) {
                case FLOAT16 -> Float.float16ToFloat(src.get(Payloads.LE_SHORT, i * 2));
                case BFLOAT16 -> Float.intBitsToFloat(Short.toUnsignedInt(src.get(Payloads.LE_SHORT, i * 2)) << 16);
                default -> src.get(Payloads.LE_FLOAT, i * 4);
            };
            if (to == ElementType.FLOAT32) {
                dst.set(Payloads.LE_FLOAT, i * 4, f);
            } else {
                dst.set(LE_DOUBLE, i * 8, f);
            }
        }
    }

    private static final ValueLayout.OfDouble LE_DOUBLE =
            ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
}
