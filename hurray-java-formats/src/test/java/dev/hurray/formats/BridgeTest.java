package dev.hurray.formats;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.TensorDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BridgeTest {
    @Test
    void foreignTensorsBecomeDescriptorsAndBack() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(6, 64);
            ForeignTensor t = new ForeignTensor("w", ElementType.UINT8, new long[] {2, 3}, Layout.Kind.COLUMN_MAJOR,
                    data, new Quantization.PerTensorAffine(0.5, -1.25, ElementType.FLOAT32), 17);
            TensorDescriptor d = t.descriptor();
            assertEquals(ElementType.UINT8, d.elementType());
            assertArrayEquals(new long[] {2, 3}, d.shape().dims());
            assertEquals(Layout.columnMajor(), d.layout());
            assertEquals(new dev.hurray.Quantization.PerTensorAffine(0.5, -1.25, ElementType.FLOAT32), d.quantization().orElseThrow());
            assertEquals("w", d.name().orElseThrow());
            assertEquals(List.of(BufferSpec.cpu(6)), d.buffers());
            ForeignTensor back = Bridge.foreign(d, List.of(data), 17);
            assertEquals(t.toString(), back.toString());
            assertEquals(17, back.sourceOffset());

            ForeignTensor h = new ForeignTensor("h", ElementType.FLOAT16, new long[0], Layout.Kind.ROW_MAJOR,
                    arena.allocate(2, 64), new Quantization.Cast(ElementType.FLOAT32), -1);
            assertEquals(new dev.hurray.Quantization.Cast(ElementType.FLOAT32), Bridge.descriptor(h).quantization().orElseThrow());
            assertEquals(0, Bridge.descriptor(h).shape().rank());
        }
    }

    @Test
    void whatForeignFormatsCannotHoldIsRefused() throws Exception {
        TensorDescriptor strided = TensorDescriptor.builder(ElementType.INT16, 2, 3).layout(Layout.strided(1, 2)).name("s")
                .buffer(BufferSpec.cpu(12)).build();
        MemorySegment twelve = MemorySegment.ofArray(new byte[12]);
        assertTrue(assertThrows(ForeignFormatException.class, () -> Bridge.foreign(strided, List.of(twelve), -1))
                .getMessage().contains("strided"));
        TensorDescriptor unnamed = TensorDescriptor.of(ElementType.INT16, 2, 3);
        assertTrue(assertThrows(ForeignFormatException.class, () -> Bridge.foreign(unnamed, List.of(twelve), -1))
                .getMessage().contains("without a name"));
        TensorDescriptor offset = TensorDescriptor.builder(ElementType.INT8, 4).byteOffset(4).name("o")
                .buffer(BufferSpec.cpu(8)).build();
        assertTrue(assertThrows(ForeignFormatException.class,
                () -> Bridge.foreign(offset, List.of(MemorySegment.ofArray(new byte[8])), -1)).getMessage().contains("byte offset 4"));
        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor deep = new ForeignTensor("deep", ElementType.UINT8, new long[33], Layout.Kind.ROW_MAJOR,
                    arena.allocate(0), null, -1);
            assertTrue(assertThrows(ForeignFormatException.class, () -> Bridge.descriptor(deep)).getMessage()
                    .contains("cannot be a Hurray tensor"));
        }
    }

    @Test
    void unalignedPayloadsAreCopiedAligned() {
        try (Arena arena = Arena.ofConfined(); Arena scratch = Arena.ofConfined()) {
            MemorySegment base = arena.allocate(200, 64);
            for (int i = 0; i < 200; i++) {
                base.set(ValueLayout.JAVA_BYTE, i, (byte) i);
            }
            assertSame(base, Bridge.aligned(base, scratch));
            MemorySegment odd = base.asSlice(3, 100);
            MemorySegment copy = Bridge.aligned(odd, scratch);
            assertNotSame(odd, copy);
            assertEquals(0, copy.address() % 64);
            assertEquals(-1, odd.mismatch(copy));
            MemorySegment heap = MemorySegment.ofArray(new byte[] {1, 2, 3});
            MemorySegment fromHeap = Bridge.aligned(heap, scratch);
            assertTrue(fromHeap.isNative());
            assertEquals(-1, heap.mismatch(fromHeap));
            assertEquals(0, Bridge.aligned(MemorySegment.ofArray(new byte[0]), scratch).byteSize());
        }
    }
}
