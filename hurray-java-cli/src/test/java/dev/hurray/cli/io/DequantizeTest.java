package dev.hurray.cli.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.Quantization;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The command's dequantization against arithmetic written out here (BigDecimal, by the spec's words). */
class DequantizeTest {
    private static Item item(ElementType stored, Quantization q, byte[] payload, long... shape) throws Exception {
        TensorDescriptor d = TensorDescriptor.builder(stored, shape).quantization(q).name("t").metadata("k", "v")
                .buffer(BufferSpec.cpu(payload.length)).build();
        return new Item(d, List.of(MemorySegment.ofArray(payload)), -1);
    }

    /** float64 evaluation as Java doubles do it, step by step in BigDecimal: round after × and after +. */
    private static double f64(long q, double scale, double bias) {
        double p = new BigDecimal(q).multiply(new BigDecimal(scale)).doubleValue();
        return new BigDecimal(p).add(new BigDecimal(bias)).doubleValue();
    }

    /** Round half towards +infinity, then the low {@code bits} bits. */
    private static long roundWrap(double x, int bits) {
        if (!Double.isFinite(x)) {
            return 0;
        }
        BigDecimal r = new BigDecimal(x).add(new BigDecimal("0.5")).setScale(0, RoundingMode.FLOOR);
        return r.toBigInteger().longValue() & ((1L << bits) - 1);
    }

    @Test
    void affineToFloat32AndInt32() throws Exception {
        byte[] q = {0, 1, 7, (byte) 128, (byte) 255};
        double scale = 0.009007044399485869;
        double bias = -1.2069439495311063;
        try (Arena arena = Arena.ofConfined()) {
            Item f = Dequantize.apply(item(ElementType.UINT8, new Quantization.PerTensorAffine(scale, bias, ElementType.FLOAT32), q, 5), arena);
            assertEquals(ElementType.FLOAT32, f.descriptor().elementType());
            assertTrue(f.descriptor().quantization().isEmpty());
            assertEquals("v", f.descriptor().metadataString("k").orElseThrow());
            assertEquals("t", f.name());
            ByteBuffer out = f.payloads().get(0).asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < q.length; i++) {
                assertEquals(Float.floatToRawIntBits((float) f64(Byte.toUnsignedInt(q[i]), scale, bias)), out.getInt(4 * i));
            }
            // int32: halves towards +infinity (-2.5 -> -2, 0.5 -> 1), 2^31 wraps to -2^31.
            byte[] q16 = new byte[8];
            ByteBuffer.wrap(q16).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 1).putShort((short) 6).putShort((short) 7)
                    .putShort((short) 65535);
            Item n = Dequantize.apply(item(ElementType.UINT16, new Quantization.PerTensorAffine(0.5, -3, ElementType.INT32), q16, 4), arena);
            ByteBuffer ints = n.payloads().get(0).asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(-2, ints.getInt(0));
            assertEquals(0, ints.getInt(4));
            assertEquals(1, ints.getInt(8));
            assertEquals(32765, ints.getInt(12));
            Item big = Dequantize.apply(item(ElementType.UINT8, new Quantization.PerTensorAffine(1, 2147483647.5, ElementType.INT32),
                    new byte[] {0}, 1), arena);
            assertEquals(Integer.MIN_VALUE, big.payloads().get(0).get(ValueLayout.JAVA_INT_UNALIGNED, 0));
        }
    }

    @Test
    void everyStoredIntegerTypeAndNarrowTargets() throws Exception {
        double scale = 0.37;
        double bias = -5.5;
        try (Arena arena = Arena.ofConfined()) {
            // int4/uint4: two per byte, lower index in the low nibble.
            byte[] packed = {(byte) 0x9F, 0x07};
            long[] int4 = {-1, -7, 7, 0};
            long[] uint4 = {15, 9, 7, 0};
            for (ElementType t : List.of(ElementType.INT4, ElementType.UINT4)) {
                Item it = Dequantize.apply(item(t, new Quantization.PerTensorAffine(scale, bias, ElementType.FLOAT64), packed, 4), arena);
                for (int i = 0; i < 4; i++) {
                    long q = t == ElementType.INT4 ? int4[i] : uint4[i];
                    assertEquals(f64(q, scale, bias), it.payloads().get(0).get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8L * i), t + "[" + i + "]");
                }
            }
            byte[] raw = {(byte) 0x80, 0x7F, (byte) 0xFF, 0x01, 0x00, (byte) 0x80, 0x12, 0x34};
            for (ElementType stored : List.of(ElementType.INT8, ElementType.UINT8, ElementType.INT16, ElementType.UINT16,
                    ElementType.INT32, ElementType.UINT32)) {
                for (ElementType target : List.of(ElementType.INT8, ElementType.UINT8, ElementType.INT16, ElementType.UINT16,
                        ElementType.UINT32)) {
                    int w = stored.bitWidth() / 8;
                    int n = raw.length / w;
                    Item it = Dequantize.apply(item(stored, new Quantization.PerTensorAffine(scale, bias, target), raw, n), arena);
                    ByteBuffer in = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
                    MemorySegment out = it.payloads().get(0);
                    for (int i = 0; i < n; i++) {
                        long q = switch (stored) {
                            case INT8 -> in.get(i);
                            case UINT8 -> Byte.toUnsignedLong(in.get(i));
                            case INT16 -> in.getShort(2 * i);
                            case UINT16 -> Short.toUnsignedLong(in.getShort(2 * i));
                            case INT32 -> in.getInt(4 * i);
                            default -> Integer.toUnsignedLong(in.getInt(4 * i));
                        };
                        int tw = target.bitWidth() / 8;
                        long got = 0;
                        for (int b = tw - 1; b >= 0; b--) {
                            got = (got << 8) | Byte.toUnsignedLong(out.get(ValueLayout.JAVA_BYTE, (long) i * tw + b));
                        }
                        assertEquals(roundWrap(f64(q, scale, bias), target.bitWidth()), got, stored + "->" + target + "[" + i + "]");
                    }
                }
            }
        }
    }

    @Test
    void castsWidenExactly() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            byte[] half = new byte[8];
            ByteBuffer.wrap(half).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 0x8000).putShort((short) 0x0001)
                    .putShort((short) 0x7E01).putShort((short) 0x3C00);
            Item f = Dequantize.apply(item(ElementType.FLOAT16, new Quantization.Cast(ElementType.FLOAT32), half, 4), arena);
            MemorySegment o = f.payloads().get(0);
            assertEquals(0x80000000, o.get(ValueLayout.JAVA_INT_UNALIGNED, 0));
            assertEquals(Float.floatToRawIntBits(0x1p-24f), o.get(ValueLayout.JAVA_INT_UNALIGNED, 4));
            assertEquals(1.0f, o.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 12));
            byte[] bf = {(byte) 0x80, 0x3F};
            Item b = Dequantize.apply(item(ElementType.BFLOAT16, new Quantization.Cast(ElementType.FLOAT64), bf, 1), arena);
            assertEquals(1.0, b.payloads().get(0).get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0));
            assertThrows(ForeignFormatException.class, () -> Dequantize.apply(
                    item(ElementType.FLOAT8_E4M3FN, new Quantization.Cast(ElementType.FLOAT32), new byte[1], 1), arena));
            Item plain = new Item(TensorDescriptor.of(ElementType.FLOAT32, 1), List.of(MemorySegment.ofArray(new byte[4])), -1);
            assertSame(plain, Dequantize.apply(plain, arena));
        }
    }
}
