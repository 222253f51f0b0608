package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The API rules of hurray-java-core/README.md §Exceptions and §Typed copies: caller mistakes
 * are unchecked, every typed copy gives the values as its Java type, the named factories, and
 * the named cast.
 */
class TensorApiRulesTest {
    // ---- exceptions

    @Test
    void aRefusedDescriptorIsAnUncheckedCallerMistakeWithTheStatusAsCause() {
        TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).layout(Layout.strided(1));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::build);
        assertEquals(Status.INVALID_LAYOUT, assertInstanceOf(HurrayException.class, e.getCause()).status());
        IllegalArgumentException name = assertThrows(IllegalArgumentException.class,
                () -> TensorDescriptor.builder(ElementType.FLOAT32, 1).name("a\0b").build());
        assertEquals(Status.INVALID_ARGUMENT, ((HurrayException) name.getCause()).status());
    }

    @Test
    void aContainerWriterKeepsReportingARefusedNameAsChecked() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("hurray-rules");
        try (HurrayFileWriter w = HurrayFile.create(dir.resolve("x.hrry")); Tensor t = Tensor.of(new float[] {1})) {
            assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> w.add("a\0b", t)).status());
        } finally {
            try (var files = java.nio.file.Files.list(dir)) {
                for (java.nio.file.Path p : files.toList()) {
                    java.nio.file.Files.deleteIfExists(p);
                }
            }
            java.nio.file.Files.deleteIfExists(dir);
        }
    }

    @Test
    void externalBufferArgumentMistakesAreUnchecked() {
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined();
             ExternalBuffer b = ExternalBuffer.wrap(a.allocate(64, 64), null)) {
            ExternalBuffer[] many = new ExternalBuffer[65];
            java.util.Arrays.fill(many, b);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ExternalBufferList.of(many));
            assertEquals(Status.LIMIT_EXCEEDED, ((HurrayException) e.getCause()).status());
            IllegalArgumentException align = assertThrows(IllegalArgumentException.class,
                    () -> ExternalBuffer.wrap(a.allocate(64, 64), 3, DeviceTag.CPU, null));
            assertEquals(Status.INVALID_ALIGNMENT, ((HurrayException) align.getCause()).status());
            try (ExternalBufferList ok = ExternalBufferList.of(b, b)) {
                assertEquals(2, ok.size());
            }
        }
    }

    // ---- typed copies

    @Test
    void everyTypedCopyConvertsAnInt8Tensor() {
        try (Tensor t = Tensor.of(new byte[] {-128, -1, 0, 127})) {
            assertArrayEquals(new byte[] {-128, -1, 0, 127}, t.toByteArray());
            assertArrayEquals(new short[] {-128, -1, 0, 127}, t.toShortArray());
            assertArrayEquals(new int[] {-128, -1, 0, 127}, t.toIntArray());
            assertArrayEquals(new long[] {-128, -1, 0, 127}, t.toLongArray());
            assertArrayEquals(new float[] {-128, -1, 0, 127}, t.toFloatArray());
            assertArrayEquals(new double[] {-128, -1, 0, 127}, t.toDoubleArray());
        }
    }

    @Test
    void floatValuesRoundOnceToIntegersHalvesTowardsPlusInfinity() {
        try (Tensor t = Tensor.of(new float[] {1.5f, -1.5f, 2.4f, -2.6f, Float.NaN, 300f})) {
            assertArrayEquals(new int[] {2, -1, 2, -3, 0, 300}, t.toIntArray());
            assertArrayEquals(new long[] {2, -1, 2, -3, 0, 300}, t.toLongArray());
            assertArrayEquals(new byte[] {2, -1, 2, -3, 0, (byte) 300}, t.toByteArray(), "wrapped modulo 2^8");
            assertArrayEquals(new double[] {1.5, -1.5, 2.4f, -2.6f, Double.NaN, 300}, t.toDoubleArray());
        }
        try (Tensor d = Tensor.of(new double[] {0.1, 1e300})) {
            assertArrayEquals(new float[] {0.1f, Float.POSITIVE_INFINITY}, d.toFloatArray());
        }
    }

    @Test
    void typesJavaLacksKeepTheirBitsInTheArrayOfTheirWidth() {
        try (Tensor u8 = Tensor.of(ElementType.UINT8, new byte[] {(byte) 0xFF, 1});
             Tensor u32 = Tensor.of(ElementType.UINT32, new int[] {-1});
             Tensor bf16 = Tensor.of(ElementType.BFLOAT16, new short[] {0x3f80})) {
            assertArrayEquals(new byte[] {(byte) 0xFF, 1}, u8.toByteArray());
            assertArrayEquals(new int[] {255, 1}, u8.toIntArray(), "a wider array holds the unsigned values");
            assertArrayEquals(new int[] {-1}, u32.toIntArray());
            assertArrayEquals(new long[] {0xFFFF_FFFFL}, u32.toLongArray());
            assertArrayEquals(new short[] {0x3f80}, bf16.toShortArray(), "bfloat16 bits");
            assertArrayEquals(new float[] {1f}, bf16.toFloatArray());
            assertArrayEquals(new int[] {1}, bf16.toIntArray());
        }
    }

    @Test
    void aQuantizedTensorGivesItsValuesToEveryTypedCopy() {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.INT8, 3)
                .quantization(new Quantization.PerTensorAffine(0.5, 10, ElementType.FLOAT32)).build();
        try (Tensor t = Tensor.copyOf(d, java.lang.foreign.MemorySegment.ofArray(new byte[] {-4, 0, 3}))) {
            assertArrayEquals(new float[] {8, 10, 11.5f}, t.toFloatArray());
            assertArrayEquals(new int[] {8, 10, 12}, t.toIntArray());
            assertArrayEquals(new byte[] {8, 10, 12}, t.toByteArray(), "values, not the stored codes");
        }
    }

    @Test
    void aTypedCopyThatCannotBeMadeIsAnIllegalState() {
        try (Tensor c = Tensor.allocate(TensorDescriptor.of(ElementType.COMPLEX64, 2))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, c::toIntArray);
            assertInstanceOf(HurrayException.class, e.getCause());
            assertThrows(IllegalStateException.class, c::toFloatArray);
        }
        Tensor closed = Tensor.of(new byte[] {1});
        closed.close();
        assertThrows(IllegalStateException.class, closed::toIntArray);
        assertThrows(IllegalStateException.class, closed::toByteArray);
    }

    // ---- named factories

    @Test
    void namedFactoriesMakeThePlainDescriptorTheBuilderMakes() throws Exception {
        try (Tensor f = Tensor.of("layer0/w", new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
             Tensor d = Tensor.of("d", new double[] {1, 2});
             Tensor i = Tensor.of("i", new int[] {7});
             Tensor l = Tensor.of("l", new long[] {8});
             Tensor s = Tensor.of("s", new short[] {9});
             Tensor b = Tensor.of("b", new byte[] {10})) {
            assertEquals(TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).name("layer0/w").build(), f.descriptor());
            assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, f.toFloatArray());
            assertEquals(TensorDescriptor.builder(ElementType.FLOAT64, 2).name("d").build(), d.descriptor());
            assertEquals(TensorDescriptor.builder(ElementType.INT32, 1).name("i").build(), i.descriptor());
            assertEquals(TensorDescriptor.builder(ElementType.INT64, 1).name("l").build(), l.descriptor());
            assertEquals(TensorDescriptor.builder(ElementType.INT16, 1).name("s").build(), s.descriptor());
            assertEquals(TensorDescriptor.builder(ElementType.INT8, 1).name("b").build(), b.descriptor());
            assertArrayEquals(new long[] {8}, l.toLongArray());

            try (Writer w = Writer.toMemory()) {
                w.write(f);
                w.finish();
                try (Reader r = Reader.of(w.toByteArray()); Tensor back = r.read()) {
                    assertEquals("layer0/w", back.descriptor().name().orElseThrow());
                    assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, back.toFloatArray());
                }
            }
        }
    }

    @Test
    void namedFactoriesRefuseABadNameOrCountUnchecked() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Tensor.of("a\0b", new float[] {1}));
        assertEquals(Status.INVALID_ARGUMENT, ((HurrayException) e.getCause()).status());
        assertThrows(IllegalArgumentException.class, () -> Tensor.of("x", new float[] {1, 2, 3}, 2, 2));
        try (Tensor unnamed = Tensor.of((String) null, new float[] {1})) {
            assertTrue(unnamed.descriptor().name().isEmpty());
        }
    }

    // ---- cast

    @Test
    void castRoundsFloat32ToBfloat16AsQuantizeDoes() throws Exception {
        try (Tensor t = Tensor.of(new float[] {1f, 1.00390625f, -2.5f, 3.1f}, 2, 2);
             Tensor bf = t.cast(ElementType.BFLOAT16);
             Tensor same = t.quantize(ElementType.BFLOAT16, null)) {
            assertEquals(ElementType.BFLOAT16, bf.descriptor().elementType());
            assertEquals(t.descriptor().shape(), bf.descriptor().shape());
            assertArrayEquals(same.buffer(0).toArray(ValueLayout.JAVA_BYTE), bf.buffer(0).toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(new short[] {0x3f80, 0x3f80, (short) 0xc020, 0x4046}, bf.toShortArray(), "ties to even");
        }
    }

    @Test
    void castToATypeTheCoreCannotCastToIsACallerMistake() {
        try (Tensor t = Tensor.of(new float[] {1}); Tensor i = Tensor.of(new int[] {1})) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> t.cast(ElementType.INT8));
            assertInstanceOf(HurrayException.class, e.getCause());
            assertThrows(IllegalStateException.class, () -> i.cast(ElementType.BFLOAT16), "only float32 casts");
        }
    }
}
