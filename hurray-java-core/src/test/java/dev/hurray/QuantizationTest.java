package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The block-scaled quantization kinds and low-precision types through the Java API: values
 * checked against numbers computed here from the OCP / GGUF definitions, round trips through a
 * stream and an HRRYFILE, and hostile parameters. The arithmetic itself is the native core's.
 */
class QuantizationTest {
    private static final float[] INPUT = new float[4 * 64];

    static {
        for (int i = 0; i < INPUT.length; i++) {
            INPUT[i] = ((i * 7919) % 1000) / 100f - 5f;
        }
    }

    private static List<Object[]> kinds() {
        List<Object[]> k = new ArrayList<>();
        k.add(new Object[] {ElementType.UINT4, Quantization.Nf4.of()});
        k.add(new Object[] {ElementType.UINT4, Quantization.Nf4.builder().block(32).doubleQuant(ElementType.INT8, 4).build()});
        k.add(new Object[] {ElementType.FLOAT4_E2M1FN, Quantization.Nvfp4.of(1)});
        k.add(new Object[] {ElementType.INT4, Quantization.PerGroup.of(1, 32)});
        k.add(new Object[] {ElementType.INT8, Quantization.Block.of(Quantization.GgufFormat.Q8_0, 2)});
        k.add(new Object[] {ElementType.UINT4, Quantization.Block.of(Quantization.GgufFormat.Q4_0, 2)});
        for (ElementType t : new ElementType[] {ElementType.FLOAT8_E4M3FN, ElementType.FLOAT8_E5M2,
                ElementType.FLOAT6_E2M3FN, ElementType.FLOAT6_E3M2FN, ElementType.FLOAT4_E2M1FN, ElementType.INT8}) {
            k.add(new Object[] {t, Quantization.Mx.of(1)});
        }
        return k;
    }

    @Test
    void everyKindQuantizesAndRoundTripsThroughAStreamAndAFile(@TempDir Path dir) throws IOException {
        List<Tensor> q = new ArrayList<>();
        try (Tensor src = Tensor.of(INPUT, 4, 64)) {
            for (Object[] k : kinds()) {
                Tensor t = src.quantize((ElementType) k[0], (Quantization) k[1]);
                q.add(t);
                assertEquals(k[1], t.descriptor().quantization().orElseThrow());
                float[] back = t.toFloatArray();
                float maxErr = 0;
                for (int i = 0; i < back.length; i++) {
                    maxErr = Math.max(maxErr, Math.abs(back[i] - INPUT[i]));
                }
                assertTrue(maxErr < 1.6f, k[1] + ": max error " + maxErr);
            }
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            try (Writer w = Writer.of(sink)) {
                for (Tensor t : q) {
                    w.write(t);
                }
            }
            int i = 0;
            try (Reader r = Reader.of(new ByteArrayInputStream(sink.toByteArray()))) {
                for (Tensor t : r) {
                    try (t) {
                        assertEquals(q.get(i).descriptor(), t.descriptor());
                        assertArrayEquals(q.get(i).toFloatArray(), t.toFloatArray());
                        i++;
                    }
                }
            }
            assertEquals(q.size(), i);
            Path path = dir.resolve("q.hrry");
            try (HurrayFileWriter w = HurrayFile.create(path)) {
                for (int k = 0; k < q.size(); k++) {
                    w.add("t" + k, q.get(k));
                }
                w.finish();
            }
            try (HurrayFile f = HurrayFile.open(path)) {
                for (int k = 0; k < q.size(); k++) {
                    try (Tensor t = f.read("t" + k); Tensor d = t.dequantize()) {
                        assertEquals(ElementType.FLOAT32, d.descriptor().elementType());
                        assertArrayEquals(q.get(k).toFloatArray(), d.toFloatArray());
                    }
                }
            }
            assertTrue(Files.size(path) > 0);
        } finally {
            q.forEach(Tensor::close);
        }
    }

    @Test
    void buildersMakeTheRecords() {
        assertEquals(new Quantization.Mx(0, 16, ElementType.FLOAT16), Quantization.Mx.builder(1).axis(0).block(16)
                .dequantized(ElementType.FLOAT16).build());
        assertEquals(Quantization.Nvfp4.of(2), Quantization.Nvfp4.builder(2).build());
        assertEquals(new Quantization.PerGroup(1, 64, ElementType.BFLOAT16, ElementType.FLOAT32),
                Quantization.PerGroup.builder(1).block(64).scaleType(ElementType.BFLOAT16).build());
        assertEquals(new Quantization.Nf4(128, ElementType.FLOAT8_E4M3FN, 256, ElementType.FLOAT32),
                Quantization.Nf4.builder().block(128).doubleQuant(ElementType.FLOAT8_E4M3FN, 256).build());
        assertThrows(IllegalArgumentException.class, () -> Quantization.Mx.builder(0).block(0).build());
        assertEquals("q4_0", Quantization.Block.of(Quantization.GgufFormat.Q4_0, 2).kindName());
    }

    @Test
    void mxfp4FollowsOcp() throws IOException {
        // amax 5 → shared exponent floor(log2 5) − emax(E2M1 = 2) = 0 → E8M0 127; 5 ties to 4.
        float[] in = new float[32];
        in[0] = 5f;
        in[1] = -2.6f;
        try (Tensor src = Tensor.of(in, 32); Tensor t = src.quantize(ElementType.FLOAT4_E2M1FN, Quantization.Mx.of(0))) {
            assertEquals(127, Byte.toUnsignedInt(t.buffer(1).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0)));
            assertEquals((byte) 0xD6, t.buffer(0).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
            float[] out = t.toFloatArray();
            assertEquals(4f, out[0]);
            assertEquals(-3f, out[1]);
        }
    }

    @Test
    void handBuiltQ8_0Block() throws IOException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.INT8, Shape.of(32))
                .quantization(Quantization.Block.of(Quantization.GgufFormat.Q8_0, 1)).build();
        assertEquals(34, d.buffers().get(0).byteSize());
        byte[] blk = new byte[34];
        blk[1] = 0x38; // float16 0.5, little-endian 00 38
        for (int i = 0; i < 32; i++) {
            blk[2 + i] = (byte) (i - 16);
        }
        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(blk))) {
            float[] out = t.toFloatArray();
            for (int i = 0; i < 32; i++) {
                assertEquals((i - 16) * 0.5f, out[i]);
            }
        }
    }

    @Test
    void lowPrecisionTypesDequantize() throws IOException {
        // float6_e2m3fn codes 0x08 (1.0), 0x28 (−1.0), 0x01 (0.125), 0x3F (−7.5) in a 24-bit stream.
        int stream = 0x08 | 0x28 << 6 | 0x01 << 12 | 0x3F << 18;
        byte[] b = {(byte) stream, (byte) (stream >> 8), (byte) (stream >> 16)};
        assertEquals(3, ElementType.FLOAT6_E2M3FN.byteSizeOf(4));
        try (Tensor t = Tensor.copyOf(TensorDescriptor.builder(ElementType.FLOAT6_E2M3FN, Shape.of(4)).build(), MemorySegment.ofArray(b))) {
            assertArrayEquals(new float[] {1f, -1f, 0.125f, -7.5f}, t.toFloatArray());
        }
        short[] half = {0x3C00, (short) 0xC000};
        try (Tensor t = Tensor.of(ElementType.FLOAT16, half, 2)) {
            assertArrayEquals(new float[] {1f, -2f}, t.toFloatArray());
        }
    }

    @Test
    void dequantizeToTheDeclaredType() throws IOException {
        // uint8 q × 0.5 − 3 as int32: halves towards +∞ (−2.5 → −2, 0.5 → 1), computed here by hand.
        TensorDescriptor d = TensorDescriptor.builder(ElementType.UINT8, Shape.of(4))
                .quantization(new Quantization.PerTensorAffine(0.5, -3, ElementType.INT32)).build();
        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(new byte[] {1, 5, 7, (byte) 255}))) {
            assertEquals(ElementType.INT32, t.dequantizedType());
            try (Tensor i = t.dequantize(t.dequantizedType())) {
                assertEquals(ElementType.INT32, i.descriptor().elementType());
                assertTrue(i.descriptor().quantization().isEmpty());
                assertArrayEquals(new int[] {-2, 0, 1, 125}, i.toIntArray());
            }
            // The same tensor as float64 is exact; as float32 it equals dequantize().
            try (Tensor f = t.dequantize(ElementType.FLOAT64); Tensor g = t.dequantize(ElementType.FLOAT32);
                    Tensor h = t.dequantize()) {
                assertArrayEquals(new double[] {-2.5, -0.5, 0.5, 124.5}, f.toDoubleArray());
                assertArrayEquals(h.toFloatArray(), g.toFloatArray());
            }
            // float16: 124.5 is exact; int8: 125 fits.
            try (Tensor f = t.dequantize(ElementType.FLOAT16)) {
                assertEquals((short) 0x57C8, f.toShortArray()[3]); // 124.5 = 1.9453125 × 2^6
            }
            // Not a target: bool, int4, an FP8 type.
            for (ElementType bad : List.of(ElementType.BOOL, ElementType.INT4, ElementType.FLOAT8_E4M3FN)) {
                HurrayException e = assertThrows(HurrayException.class, () -> t.dequantize(bad));
                assertEquals(Status.UNSUPPORTED, e.status());
                assertTrue(e.getMessage().contains(bad.formatName()), e.getMessage());
            }
            t.close();
            assertThrows(IllegalStateException.class, () -> t.dequantize(ElementType.FLOAT32));
            assertEquals(ElementType.INT32, t.dequantizedType());
        }
        // MX (declared float64): the float32 block arithmetic widened. E2M1 0x2 is 1.0, 0xB is −1.5; scale 2^1.
        TensorDescriptor mx = TensorDescriptor.builder(ElementType.FLOAT4_E2M1FN, Shape.of(32))
                .quantization(new Quantization.Mx(0, 32, ElementType.FLOAT64)).build();
        byte[] vals = new byte[16];
        java.util.Arrays.fill(vals, (byte) 0xB2);
        try (Tensor t = Tensor.copyOf(mx, MemorySegment.ofArray(vals), MemorySegment.ofArray(new byte[] {(byte) 128}));
                Tensor f = t.dequantize(t.dequantizedType())) {
            double[] v = f.toDoubleArray();
            assertEquals(2.0, v[0]);
            assertEquals(-3.0, v[31]);
        }
    }

    @Test
    void hostileParametersGetClearErrors() throws IOException {
        HurrayException e = TestSupport.refusedBuild(() -> TensorDescriptor.builder(ElementType.FLOAT4_E2M1FN, Shape.of(2, 64))
                .quantization(Quantization.Mx.of(2)).build());
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        e = TestSupport.refusedBuild(() -> TensorDescriptor.builder(ElementType.FLOAT4_E2M1FN, Shape.of(2, 48))
                .quantization(new Quantization.Mx(1, 32, ElementType.FLOAT32)).build());
        assertTrue(e.getMessage().contains("does not divide"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Quantization.Mx(1, 0, ElementType.FLOAT32));
        e = TestSupport.refusedBuild(() -> TensorDescriptor.builder(ElementType.FLOAT32, Shape.of(64))
                .quantization(Quantization.Mx.of(0)).build());
        assertEquals(Status.INVALID_TYPE, e.status());
        // A scale buffer one byte short.
        e = TestSupport.refusedBuild(() -> TensorDescriptor.builder(ElementType.FLOAT4_E2M1FN, Shape.of(2, 64))
                .quantization(Quantization.Mx.of(1)).buffer(BufferSpec.cpu(64)).buffer(BufferSpec.cpu(3)).build());
        assertEquals(Status.BUFFER_TOO_SMALL, e.status());
        // An E8M0 NaN scale is refused when dequantizing.
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT4_E2M1FN, Shape.of(32)).quantization(Quantization.Mx.of(0)).build();
        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(new byte[16]), MemorySegment.ofArray(new byte[] {(byte) 0xFF}))) {
            e = assertThrows(HurrayException.class, t::dequantize);
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            IllegalStateException s = assertThrows(IllegalStateException.class, t::toFloatArray);
            assertInstanceOf(HurrayException.class, s.getCause());
        }
        // Non-finite input cannot be MX-quantized.
        float[] nan = new float[32];
        nan[3] = Float.NaN;
        try (Tensor src = Tensor.of(nan, 32)) {
            e = assertThrows(HurrayException.class, () -> src.quantize(ElementType.FLOAT8_E4M3FN, Quantization.Mx.of(0)));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
        }
        assertEquals(ByteOrder.LITTLE_ENDIAN, ByteOrder.LITTLE_ENDIAN);
    }
}
