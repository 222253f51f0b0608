package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The descriptor builder (validated natively), value semantics and encoding round trips. */
class TensorDescriptorTest {
    private static Status failure(TensorDescriptor.Builder b) {
        return TestSupport.refusedBuild(b::build).status();
    }

    @Test
    void nativeDefaultsAreReadBack() throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).build();
        assertEquals(ElementType.FLOAT32, d.elementType());
        assertEquals(Shape.of(2, 3), d.shape());
        assertEquals(6, d.elementCount());
        assertEquals(Layout.rowMajor(), d.layout());
        assertEquals(0, d.byteOffset());
        assertEquals(List.of(BufferSpec.cpu(24)), d.buffers(), "one CPU buffer of the exact size at 64 bytes");
        assertEquals(24, d.totalBufferBytes());
        assertTrue(d.quantization().isEmpty());
        assertTrue(d.name().isEmpty());
        assertTrue(d.metadata().isEmpty());
        assertEquals("float32[2,3] row-major", d.toString());
        assertEquals(List.of(BufferSpec.cpu(3)), TensorDescriptor.of(ElementType.UINT4, 5).buffers(), "ceil(5 / 2) bytes");
        assertEquals("float64[] row-major", TensorDescriptor.of(ElementType.FLOAT64).toString());
    }

    @Test
    void toStringShowsWhatIsNotPlain() throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.INT16, 3, 4).layout(Layout.strided(1, 3)).name("w")
                .byteOffset(2).buffer(new BufferSpec(26, 4096, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED))
                .metadata("a", "b").build();
        assertEquals("int16[3,4] strided(1,3) name=\"w\" offset=2 buffers=[26B@4096 cpu] metadata=[a]", d.toString());
    }

    @Test
    void equalsAndHashCodeCompareAllFields() throws HurrayException {
        TensorDescriptor a = TensorDescriptor.builder(ElementType.UINT8, 4).name("x").metadata("k", new byte[] {1, 2})
                .metadata("j", "v").build();
        TensorDescriptor b = TensorDescriptor.builder(ElementType.UINT8, 4).name("x").metadata("j", "v")
                .metadata("k", new byte[] {1, 2}).build();
        assertEquals(a, b, "metadata compares as a map");
        assertEquals(a.hashCode(), b.hashCode());
        assertNotEquals(a, a.toBuilder().replaceMetadata("k", new byte[] {1, 3}).build());
        assertNotEquals(a, a.toBuilder().name("y").build());
        assertNotEquals(a, a.toBuilder().name(null).build());
        assertNotEquals(a, TensorDescriptor.builder(ElementType.INT8, 4).name("x").metadata("k", new byte[] {1, 2})
                .metadata("j", "v").build());
        assertEquals(a, a.toBuilder().build());
        byte[] v = a.metadata().get("k");
        v[0] = 99;
        assertEquals(1, a.metadata().get("k")[0], "metadata values are copies");
        assertThrows(UnsupportedOperationException.class, () -> a.metadata().put("z", new byte[0]));
    }

    @Test
    void encodeDecodeRoundTrip() throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.INT8, 3, 2)
                .quantization(new Quantization.PerChannelAffine(1, ElementType.FLOAT64))
                .buffer(BufferSpec.cpu(6)).buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(8))
                .name("q").metadata("m", "1").build();
        byte[] bytes = d.encode();
        assertEquals('H', bytes[0]);
        TensorDescriptor back = TensorDescriptor.decode(bytes);
        assertEquals(d, back);
        assertArrayEquals(bytes, back.encode());
        assertEquals(Status.INVALID_MAGIC, assertThrows(HurrayException.class,
                () -> TensorDescriptor.decode(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24})).status());
    }

    @Test
    void nativeValidationErrorsSurfaceAtBuild() {
        assertEquals(Status.INVALID_LAYOUT, failure(TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).layout(Layout.strided(1))));
        assertEquals(Status.INVALID_LAYOUT, failure(TensorDescriptor.builder(ElementType.INT4, 4).layout(Layout.strided(1))));
        assertEquals(Status.BUFFER_TOO_SMALL, failure(TensorDescriptor.builder(ElementType.FLOAT32, 4).buffer(BufferSpec.cpu(15))));
        assertEquals(Status.BUFFER_TOO_SMALL, failure(TensorDescriptor.builder(ElementType.FLOAT32, 4).byteOffset(1)
                .buffer(BufferSpec.cpu(16))));
        assertEquals(Status.INVALID_ALIGNMENT, failure(TensorDescriptor.builder(ElementType.UINT8, 4)
                .buffer(new BufferSpec(4, 32, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED))));
        assertEquals(Status.INVALID_ALIGNMENT, failure(TensorDescriptor.builder(ElementType.UINT8, 4)
                .buffer(new BufferSpec(4, 96, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED))));
        assertEquals(Status.INVALID_ALIGNMENT, failure(TensorDescriptor.builder(ElementType.UINT8, 4)
                .buffer(new BufferSpec(4, 64, DeviceTag.CUDA, SyncMode.PRODUCER_SYNCED))));
        assertEquals(Status.INVALID_SHAPE, failure(TensorDescriptor.builder(ElementType.COMPLEX128, Long.MAX_VALUE / 2)));
        assertEquals(Status.INVALID_TYPE, failure(TensorDescriptor.builder(ElementType.FLOAT32, 4)
                .quantization(new Quantization.PerTensorAffine(1, 0, ElementType.FLOAT32))));
        assertEquals(Status.INVALID_ARGUMENT, failure(TensorDescriptor.builder(ElementType.UINT8, 4)
                .quantization(new Quantization.PerTensorAffine(Double.NaN, 0, ElementType.FLOAT32))));
        assertEquals(Status.INVALID_LAYOUT, failure(TensorDescriptor.builder(ElementType.UINT8, 4)
                .quantization(new Quantization.PerChannelAffine(0, ElementType.FLOAT32))));
        assertEquals(Status.INVALID_ARGUMENT, failure(TensorDescriptor.builder(ElementType.UINT8, 4).name("a\0b")));
        assertEquals(Status.INVALID_ARGUMENT, failure(TensorDescriptor.builder(ElementType.UINT8, 4).metadata("", "v")));
        assertEquals(Status.LIMIT_EXCEEDED, failure(TensorDescriptor.builder(ElementType.UINT8, 4)
                .metadata("k", new byte[64 * 1024 + 1])));
        HurrayException e = TestSupport.refusedBuild(
                TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).layout(Layout.strided(1))::build);
        assertTrue(e.nativeMessage().contains("strides"), e.nativeMessage());
        IllegalArgumentException iae = assertThrows(IllegalArgumentException.class,
                () -> TensorDescriptor.of(ElementType.COMPLEX128, Long.MAX_VALUE / 2));
        assertTrue(iae.getCause() instanceof HurrayException);
    }

    @Test
    void quantizationKindsRoundTrip() throws HurrayException {
        for (Quantization q : List.of(new Quantization.PerTensorAffine(0.25, -8, ElementType.FLOAT16),
                new Quantization.Cast(ElementType.FLOAT64))) {
            ElementType stored = q instanceof Quantization.Cast ? ElementType.BFLOAT16 : ElementType.INT4;
            TensorDescriptor d = TensorDescriptor.builder(stored, 5).quantization(q).build();
            assertEquals(q, d.quantization().orElseThrow());
            assertEquals(d, TensorDescriptor.decode(d.encode()));
        }
    }

    @Test
    void withNameReplacesOnlyTheName() throws HurrayException {
        TensorDescriptor t = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("template")
                .metadata("source", "bench").build();
        TensorDescriptor r = t.withName("emb-17");
        assertEquals("emb-17", r.name().orElseThrow());
        assertEquals(t.shape(), r.shape());
        assertEquals(t.buffers(), r.buffers());
        assertArrayEquals(t.metadata().get("source"), r.metadata().get("source"));
        // Exactly what the builder makes with that name, byte for byte.
        TensorDescriptor b = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("emb-17")
                .metadata("source", "bench").build();
        assertArrayEquals(b.encode(), r.encode());
        assertEquals(b, r);
        // Long names take the slow path; bad names are refused with the native status.
        String longName = "n".repeat(3000);
        assertEquals(longName, t.withName(longName).name().orElseThrow());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> t.withName("a\0b"));
        assertEquals(Status.INVALID_ARGUMENT, ((HurrayException) e.getCause()).status());
        e = assertThrows(IllegalArgumentException.class, () -> t.withName("x".repeat(4097)));
        assertEquals(Status.LIMIT_EXCEEDED, ((HurrayException) e.getCause()).status());
        assertEquals("template", t.name().orElseThrow());
    }

    @Test
    void aBuilderReusedAfterBuildOrTakenFromToBuilderNeverChangesADescriptorItMade() throws HurrayException {
        byte[] value = {1, 2, 3};
        TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.FLOAT32, 4).name("a").metadata("k", value);
        TensorDescriptor first = b.build();
        value[0] = 9; // the builder copied the value
        b.replaceMetadata("k", new byte[] {7}).metadata("k2", "v2");
        TensorDescriptor second = b.build();
        assertArrayEquals(new byte[] {1, 2, 3}, first.metadata().get("k"));
        assertEquals(1, first.metadata().size());
        assertArrayEquals(new byte[] {7}, second.metadata().get("k"));
        assertEquals(List.of("k", "k2"), List.copyOf(second.metadata().keySet()));

        TensorDescriptor.Builder again = second.toBuilder();
        again.metadata("k3", "v3");
        TensorDescriptor third = again.build();
        assertEquals(2, second.metadata().size(), "toBuilder's changes stay out of the descriptor it came from");
        assertEquals(List.of("k", "k2", "k3"), List.copyOf(third.metadata().keySet()));
        assertEquals(second, second.toBuilder().build());
        assertTrue(TensorDescriptor.builder(ElementType.FLOAT32, 4).build().metadata().isEmpty());
    }

    @Test
    void aSecondValueForOneMetadataKeyIsRefusedAndReplaceMetadataChangesItInPlace() {
        TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.FLOAT32, 4).metadata("unit", "m").metadata("k", "v");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.metadata("unit", "s"));
        assertTrue(e.getMessage().contains("'unit'"), e.getMessage());
        assertEquals(Status.DUPLICATE_NAME, ((HurrayException) e.getCause()).status());
        assertThrows(IllegalArgumentException.class, () -> b.metadata("k", new byte[] {1}));
        TensorDescriptor d = b.build();
        assertEquals("m", d.metadataString("unit").orElseThrow(), "the refused value was not kept");
        // toBuilder carries the keys, so a second value for one of them is refused there too.
        assertThrows(IllegalArgumentException.class, () -> d.toBuilder().metadata("unit", "s"));
        TensorDescriptor r = d.toBuilder().replaceMetadata("unit", "s").replaceMetadata("new", "n").build();
        assertEquals(List.of("unit", "k", "new"), List.copyOf(r.metadata().keySet()), "replaced in place, added at the end");
        assertEquals("s", r.metadataString("unit").orElseThrow());
        assertEquals("m", d.metadataString("unit").orElseThrow());
    }

    @Test
    void aSingleMetadataEntryBehavesAsAnyOther() {
        TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.FLOAT32, 4).metadata("only", "1");
        assertThrows(IllegalArgumentException.class, () -> b.metadata("only", "2"), "a second value after a single entry");
        TensorDescriptor one = b.build();
        assertEquals(List.of("only"), List.copyOf(one.metadata().keySet()));
        TensorDescriptor two = b.metadata("next", "2").build();
        assertEquals(List.of("only", "next"), List.copyOf(two.metadata().keySet()), "insertion order kept");
        assertEquals(1, one.metadata().size(), "the first build keeps its single entry");
        assertEquals("3", b.replaceMetadata("only", "3").build().metadataString("only").orElseThrow());
        assertEquals("1", one.metadataString("only").orElseThrow());
        assertTrue(one.metadataString("absent").isEmpty());
        assertThrows(NullPointerException.class, () -> one.metadataString(null));
    }

    @Test
    void theReaderOptionsMaximumIsTheLibrarysDescriptorMaximum() throws HurrayException {
        assertEquals(dev.hurray.ffm.hurray_h.HURRAY_MAX_DESCRIPTOR_BYTES(), ReaderOptions.MAX_DESCRIPTOR_BYTES);
        // The library takes it as a reader limit, and refuses one byte more.
        try (Reader r = Reader.of(new byte[0],
                ReaderOptions.defaults().withMaxDescriptorBytes(ReaderOptions.MAX_DESCRIPTOR_BYTES))) {
            assertNull(r.read());
        } catch (HurrayException e) {
            assertEquals(Status.TRUNCATED, e.status());
        }
        assertThrows(HurrayException.class, () -> Reader.of(new byte[0],
                ReaderOptions.defaults().withMaxDescriptorBytes(ReaderOptions.MAX_DESCRIPTOR_BYTES + 1)).read());
    }

    @Test
    void everyNameAndMetadataLimitAtOnceIsRefusedByBuildWithTheEncodedSizeAndTheLimit() {
        String limit = Integer.toString(dev.hurray.ffm.hurray_h.HURRAY_MAX_DESCRIPTOR_BYTES());
        TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.FLOAT32, 4)
                .name("n".repeat(dev.hurray.ffm.hurray_h.HURRAY_MAX_NAME_BYTES()));
        byte[] value = new byte[dev.hurray.ffm.hurray_h.HURRAY_MAX_METADATA_VALUE_BYTES()];
        for (int i = 0; i < dev.hurray.ffm.hurray_h.HURRAY_MAX_METADATA_ENTRIES(); i++) {
            b.metadata(String.format("key-%03d", i), value);
        }
        // Each entry is within its limit; together they encode past HURRAY_MAX_DESCRIPTOR_BYTES.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::build);
        assertEquals(Status.LIMIT_EXCEEDED, ((HurrayException) e.getCause()).status());
        assertTrue(e.getMessage().contains(limit) && e.getMessage().contains("encoded descriptor is 1"), e.getMessage());
        // A plain descriptor just under the limit still builds and encodes.
        TensorDescriptor.Builder fits = TensorDescriptor.builder(ElementType.FLOAT32, 4);
        for (int i = 0; i < 255; i++) {
            fits.metadata(String.format("key-%03d", i), value);
        }
        TensorDescriptor d = fits.build();
        assertTrue(d.encode().length <= dev.hurray.ffm.hurray_h.HURRAY_MAX_DESCRIPTOR_BYTES());
        // Renaming a descriptor near the limit is measured as well.
        TensorDescriptor.Builder near = TensorDescriptor.builder(ElementType.FLOAT32, 4);
        for (int i = 0; i < 255; i++) {
            near.metadata(String.format("key-%03d", i), value);
        }
        byte[] rest = new byte[dev.hurray.ffm.hurray_h.HURRAY_MAX_DESCRIPTOR_BYTES() - d.encode().length - 112];
        TensorDescriptor t = near.metadata("last", rest).build();
        e = assertThrows(IllegalArgumentException.class, () -> t.withName("x".repeat(4096)));
        assertEquals(Status.LIMIT_EXCEEDED, ((HurrayException) e.getCause()).status());
    }
}
