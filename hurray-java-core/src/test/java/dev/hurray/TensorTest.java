package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Tensor factories, typed copies, buffer views, lifetimes and thread rules. */
class TensorTest {
    @Test
    void allocateIsZeroedAndAligned() throws Exception {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT64, 3, 5)
                .buffer(new BufferSpec(120, 4096, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED)).build();
        try (Tensor t = Tensor.allocate(d)) {
            MemorySegment b = t.buffer(0);
            assertEquals(120, b.byteSize());
            assertEquals(0, b.address() % 4096);
            assertEquals(-1, b.mismatch(MemorySegment.ofArray(new byte[120])));
            assertArrayEquals(new double[15], t.toDoubleArray());
        }
    }

    @Test
    void allocateRefusesDeviceMemory() throws Exception {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 4)
                .buffer(new BufferSpec(16, 4096, DeviceTag.CUDA, SyncMode.PRODUCER_SYNCED)).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tensor.allocate(d));
        assertTrue(e.getMessage().contains("CUDA"));
    }

    @Test
    void ofChecksShapeAgainstData() throws Exception {
        assertThrows(IllegalArgumentException.class, () -> Tensor.of(new float[5], 2, 3));
        assertThrows(IllegalArgumentException.class, () -> Tensor.of(ElementType.FLOAT32, new byte[4]));
        assertThrows(IllegalArgumentException.class, () -> Tensor.of(ElementType.INT64, new int[1]));
        try (Tensor t = Tensor.of(new float[] {7f}, new long[0]);
                Tensor s = Tensor.of(new float[] {7f})) {
            // an empty shape argument means "one dimension of data.length"
            assertEquals(Shape.of(1), t.descriptor().shape());
            assertEquals(Shape.of(1), s.descriptor().shape());
        }
        try (Tensor scalar = Tensor.copyOf(TensorDescriptor.of(ElementType.FLOAT32), MemorySegment.ofArray(new float[] {2.5f}))) {
            assertEquals(0, scalar.descriptor().shape().rank());
            assertArrayEquals(new float[] {2.5f}, scalar.toFloatArray());
        }
    }

    @Test
    void typedCopiesConvertEveryTypeAndCheckTheLayout() throws Exception {
        try (Tensor t = Tensor.of(new int[] {1, 2, 3, 4}, 2, 2)) {
            // Every typed copy gives the values as its Java type (through the native core).
            assertArrayEquals(new float[] {1, 2, 3, 4}, t.toFloatArray());
            assertArrayEquals(new long[] {1, 2, 3, 4}, t.toLongArray());
            assertArrayEquals(new byte[] {1, 2, 3, 4}, t.toByteArray());
            assertArrayEquals(new int[] {1, 2, 3, 4}, t.toIntArray());
        }
        TensorDescriptor cm = TensorDescriptor.builder(ElementType.INT32, 2, 2).layout(Layout.columnMajor()).build();
        try (Tensor t = Tensor.allocate(cm)) {
            assertThrows(IllegalStateException.class, t::toIntArray);
            IllegalStateException e = assertThrows(IllegalStateException.class, t::toLongArray);
            assertTrue(e.getMessage().contains("row-major"), e.getMessage());
        }
        TensorDescriptor offset = TensorDescriptor.builder(ElementType.INT32, 2).byteOffset(4)
                .buffer(BufferSpec.cpu(12)).build();
        try (Tensor t = Tensor.copyOf(offset, MemorySegment.ofArray(new int[] {9, 5, 6}))) {
            assertArrayEquals(new int[] {5, 6}, t.toIntArray());
        }
    }

    @Test
    void wrapBorrowsAlignedNativeMemoryOnly() throws Exception {
        TensorDescriptor d = TensorDescriptor.of(ElementType.INT64, 4);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment aligned = arena.allocate(64, 64);
            aligned.setAtIndex(ValueLayout.JAVA_LONG, 2, 42);
            try (Tensor t = Tensor.wrap(aligned, d)) {
                assertEquals(aligned.address(), t.buffer(0).address());
                assertEquals(42, t.toLongArray()[2]);
                aligned.setAtIndex(ValueLayout.JAVA_LONG, 3, 43); // no copy: the tensor sees it
                assertEquals(43, t.toLongArray()[3]);
            }
            assertEquals(42, aligned.getAtIndex(ValueLayout.JAVA_LONG, 2), "closing the tensor leaves the memory alone");
            MemorySegment misaligned = arena.allocate(128, 64).asSlice(8, 32);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tensor.wrap(misaligned, d));
            assertTrue(e.getMessage().contains("not aligned to the 64 bytes"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> Tensor.wrap(arena.allocate(16, 64), d));
        }
        IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                () -> Tensor.wrap(MemorySegment.ofArray(new long[4]), d));
        assertTrue(heap.getMessage().contains("heap segment"));
    }

    @Test
    void useAfterCloseThrowsAndDoubleCloseIsANoOp() throws Exception {
        Tensor t = Tensor.of(new float[] {1, 2, 3});
        MemorySegment b = t.buffer(0);
        BufferList list = t.buffers();
        t.close();
        assertFalse(t.isOpen());
        assertThrows(IllegalStateException.class, () -> b.get(ValueLayout.JAVA_FLOAT, 0));
        assertThrows(IllegalStateException.class, () -> b.set(ValueLayout.JAVA_FLOAT, 0, 1f));
        assertThrows(IllegalStateException.class, () -> list.get(0));
        assertThrows(IllegalStateException.class, t::buffers);
        assertThrows(IllegalStateException.class, t::toFloatArray);
        assertDoesNotThrow(t::close);
        assertEquals("float32[3] row-major", t.descriptor().toString(), "the descriptor outlives the tensor");
    }

    @Test
    void readTensorsOutliveTheirReaderAndDieWithClose() throws IOException {
        byte[] wire;
        try (Tensor t = Tensor.of(new long[] {5, 6, 7})) {
            wire = TestSupport.stream(List.of(t), WriterOptions.defaults());
        }
        Tensor t;
        try (Reader r = Reader.of(wire)) {
            t = r.read();
        }
        MemorySegment b = t.buffer(0);
        assertArrayEquals(new long[] {5, 6, 7}, t.toLongArray());
        t.close();
        assertThrows(IllegalStateException.class, () -> b.get(ValueLayout.JAVA_LONG, 0));
        t.close();
    }

    @Test
    void bufferListIsABorrowedView() throws Exception {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.UINT8, 4, 2)
                .quantization(new Quantization.PerChannelAffine(0, ElementType.FLOAT32))
                .buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(16)).buffer(BufferSpec.cpu(16)).build();
        try (Tensor t = Tensor.allocate(d)) {
            BufferList list = t.buffers();
            assertEquals(3, list.size());
            assertEquals(40, list.totalBytes());
            assertEquals(16, list.spec(2).byteSize());
            assertThrows(UnsupportedOperationException.class, () -> list.add(MemorySegment.NULL));
            list.close();
            assertThrows(IllegalStateException.class, () -> list.get(0));
            assertEquals(8, t.buffers().get(0).byteSize(), "closing the view leaves the tensor open");
        }
    }

    @Test
    void confinedTensorRejectsOtherThreads() throws Exception {
        Tensor t = Tensor.of(new int[] {1, 2});
        MemorySegment b = t.buffer(0);
        ExecutionException access = assertThrows(ExecutionException.class,
                () -> CompletableFuture.runAsync(() -> b.get(ValueLayout.JAVA_INT, 0)).get(10, TimeUnit.SECONDS));
        assertTrue(access.getCause() instanceof WrongThreadException);
        ExecutionException close = assertThrows(ExecutionException.class,
                () -> CompletableFuture.runAsync(t::close).get(10, TimeUnit.SECONDS));
        assertTrue(close.getCause() instanceof WrongThreadException);
        assertTrue(t.isOpen(), "a refused close leaves the tensor open");
        assertArrayEquals(new int[] {1, 2}, t.toIntArray());
        t.close();
        assertFalse(t.isOpen());
    }

    @Test
    void sharedTensorsReadOnOneThreadAreConsumedAndClosedOnAnother() throws Exception {
        byte[] wire;
        try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4})) {
            wire = TestSupport.stream(List.of(t, t), WriterOptions.defaults());
        }
        Tensor shared;
        Tensor confined;
        try (Reader r = Reader.of(wire, ReaderOptions.defaults().withTensorScope(TensorScope.SHARED))) {
            shared = r.read();
        }
        try (Reader r = Reader.of(wire)) {
            confined = r.read();
        }
        assertEquals(TensorScope.SHARED, shared.scope());
        float[] sum = CompletableFuture.supplyAsync(() -> {
            try (shared) {
                return shared.toFloatArray();
            }
        }).get(10, TimeUnit.SECONDS);
        assertArrayEquals(new float[] {1, 2, 3, 4}, sum);
        assertFalse(shared.isOpen());
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> CompletableFuture.supplyAsync(confined::toFloatArray).get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof WrongThreadException);
        confined.close();
    }

    @Test
    void allocateSharedCrossesThreads() throws Exception {
        Tensor t = Tensor.allocate(TensorDescriptor.of(ElementType.INT32, 2), TensorScope.SHARED);
        CompletableFuture.runAsync(() -> t.buffer(0).setAtIndex(ValueLayout.JAVA_INT, 1, 9)).get(10, TimeUnit.SECONDS);
        assertArrayEquals(new int[] {0, 9}, t.toIntArray());
        CompletableFuture.runAsync(t::close).get(10, TimeUnit.SECONDS);
        assertFalse(t.isOpen());
    }

    @Test
    void aTensorCannotBeClosedWhileItIsBeingWritten() throws IOException {
        try (Tensor t = Tensor.of(new byte[] {1, 2, 3})) {
            java.io.OutputStream closesTheTensor = new java.io.ByteArrayOutputStream() {
                @Override
                public void write(byte[] b, int off, int len) {
                    t.close(); // refused: the write is in progress
                    super.write(b, off, len);
                }
            };
            // Unbatched, so that the sink runs inside write().
            try (Writer w = Writer.of(closesTheTensor, WriterOptions.defaults().withBatchBytes(0))) {
                HurrayException e = assertThrows(HurrayException.class, () -> w.write(t));
                assertTrue(e.getCause() instanceof IllegalStateException, String.valueOf(e.getCause()));
                assertTrue(t.isOpen());
            } catch (HurrayException closeFailure) {
                // the end marker write at close hits the same sink: its failure is expected too
                assertTrue(closeFailure.getCause() instanceof IllegalStateException);
            }
        }
    }
}
