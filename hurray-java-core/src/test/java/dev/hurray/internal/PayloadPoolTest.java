package dev.hurray.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorShare;
import dev.hurray.Writer;
import dev.hurray.TensorDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * {@code Tensor.copyOf} and {@code Tensor.of(array)} take small buffers from {@link PayloadPool}:
 * a closed tensor's block is reused by the next one, a closed tensor's segments still throw,
 * the pool keeps no more than its bound however many tensors are open, and buffers that must
 * start zeroed ({@code Tensor.allocate}) never come from it. Such a tensor makes its arena only
 * when its buffers are first asked for: one written and closed without that gives its block
 * back, and the CONFINED rules hold either way.
 */
class PayloadPoolTest {
    private static float[] row(int seed, int n) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = seed * 1000 + i;
        }
        return f;
    }

    @Test
    void aClosedTensorsBlockIsReusedAndItsSegmentsThrowAfterClose() {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("a").build();
        Tensor first = Tensor.copyOf(d, MemorySegment.ofArray(row(1, 768)));
        MemorySegment kept = first.buffer(0);
        long address = kept.address();
        assertEquals(0, address % 64, "pooled blocks are 64-byte aligned");
        first.close();
        assertThrows(IllegalStateException.class, () -> kept.get(ValueLayout.JAVA_FLOAT, 0));
        try (Tensor second = Tensor.copyOf(d, MemorySegment.ofArray(row(2, 768)))) {
            assertEquals(address, second.buffer(0).address(), "the block of the closed tensor is taken again");
            assertArrayEquals(row(2, 768), second.toFloatArray());
        }
    }

    @Test
    void allocateIsZeroFilledEvenAfterPooledBlocksWereUsed() {
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, 256);
        for (int i = 0; i < 50; i++) {
            Tensor.of(row(7, 256), 256).close();
        }
        try (Tensor t = Tensor.allocate(d)) {
            for (long i = 0; i < t.buffer(0).byteSize(); i++) {
                assertEquals(0, t.buffer(0).get(ValueLayout.JAVA_BYTE, i));
            }
        }
    }

    @Test
    void manyOpenTensorsStayCorrectAndThePoolKeepsItsBound() {
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, 256); // 1 KiB each
        List<Tensor> open = new ArrayList<>();
        try {
            for (int i = 0; i < 12_000; i++) { // 12 MiB in all: more than the pool retains
                open.add(Tensor.copyOf(d, MemorySegment.ofArray(row(i, 256))));
            }
            assertTrue(PayloadPool.retainedBytes() <= PayloadPool.RETAIN_BYTES, "retained " + PayloadPool.retainedBytes());
            for (int i = 0; i < open.size(); i += 997) {
                assertArrayEquals(row(i, 256), open.get(i).toFloatArray());
            }
        } finally {
            open.forEach(Tensor::close);
        }
        assertTrue(PayloadPool.freeBlocks() <= PayloadPool.RETAIN_BYTES / 64);
        assertTrue(PayloadPool.retainedBytes() <= PayloadPool.RETAIN_BYTES);
    }

    @Test
    void largeAndEmptyBuffersAreOrdinaryAllocations() {
        int big = (int) (PayloadPool.MAX_BYTES / 4) + 1;
        try (Tensor t = Tensor.of(row(3, big), big)) {
            assertArrayEquals(row(3, big), t.toFloatArray());
        }
        try (Tensor t = Tensor.of(new float[0], 0)) {
            assertEquals(0, t.buffer(0).byteSize());
        }
        TensorDescriptor empty = TensorDescriptor.of(ElementType.FLOAT32, 0);
        try (Tensor t = Tensor.copyOf(empty, MemorySegment.ofArray(new float[0]))) {
            assertFalse(t.buffer(0).byteSize() > 0);
        }
    }

    @Test
    void threadsTakingAndGivingBackConcurrentlyKeepEveryTensorIntact() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int seed = t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 2_000; i++) {
                        int n = 16 + (i % 7) * 100;
                        float[] want = row(seed * 10_000 + i, n);
                        try (Tensor a = Tensor.of(want, n); Tensor b = Tensor.of(row(i, n), n)) {
                            assertArrayEquals(want, a.toFloatArray());
                            assertArrayEquals(row(i, n), b.toFloatArray());
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aCopyFromAClosedSourceFailsAndGivesItsBlockBack() {
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, 256);
        Tensor.of(row(1, 256), 256).close(); // the pool has a slab and a free block of this class
        long retained = PayloadPool.retainedBytes();
        int free = PayloadPool.freeBlocks();
        MemorySegment gone;
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            gone = a.allocate(1024, 64);
        }
        MemorySegment closed = gone;
        for (int i = 0; i < 20_000; i++) { // 20 MiB of blocks if each failure kept its tensor
            assertThrows(IllegalStateException.class, () -> Tensor.copyOf(d, closed));
        }
        assertEquals(retained, PayloadPool.retainedBytes(), "failed copies took slabs");
        assertEquals(free, PayloadPool.freeBlocks(), "failed copies kept blocks");
    }

    /** Runs {@code body} on a new thread and returns what it threw, or null. */
    private static Throwable onAnotherThread(Runnable body) throws InterruptedException {
        Throwable[] thrown = new Throwable[1];
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                thrown[0] = e;
            }
        });
        t.start();
        t.join();
        return thrown[0];
    }

    @Test
    void aTensorWrittenWithoutTouchingItsBuffersGivesItsBlockBackOnClose() throws Exception {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 100).name("p").build();
        Tensor.copyOf(d, MemorySegment.ofArray(row(0, 100))).close(); // a free block of this class
        int free = PayloadPool.freeBlocks();
        Writer w = Writer.toMemory();
        Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row(5, 100)));
        assertEquals(free - 1, PayloadPool.freeBlocks(), "the tensor holds a pooled block");
        w.write(t);
        t.close();
        assertEquals(free, PayloadPool.freeBlocks(), "close gave the block back");
        assertThrows(IllegalStateException.class, () -> t.buffer(0));
        w.close();
        try (Reader r = Reader.of(w.toByteArray()); Tensor back = r.read()) {
            assertArrayEquals(row(5, 100), back.toFloatArray());
        }
    }

    @Test
    void anotherThreadCanNeitherTouchNorCloseAConfinedPooledTensor() throws Exception {
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, 64);
        Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row(9, 64)));
        assertTrue(onAnotherThread(() -> t.buffer(0)) instanceof WrongThreadException);
        assertTrue(onAnotherThread(t::toFloatArray) instanceof WrongThreadException);
        assertTrue(onAnotherThread(t::close) instanceof WrongThreadException);
        assertTrue(t.isOpen(), "a refused close leaves the tensor open");
        assertArrayEquals(row(9, 64), t.toFloatArray());
        MemorySegment before = t.buffer(0);
        assertTrue(onAnotherThread(t::close) instanceof WrongThreadException, "refused after its arena exists too");
        t.close();
        assertThrows(IllegalStateException.class, () -> before.get(ValueLayout.JAVA_FLOAT, 0));
    }

    @Test
    void aWriterOnAnotherThreadRelaysAPooledTensor() throws Exception {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 64).name("relay").build();
        Writer w = Writer.toMemory();
        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row(4, 64)))) {
            Throwable e = onAnotherThread(() -> {
                try {
                    w.write(t);
                    w.close();
                } catch (Exception x) {
                    throw new RuntimeException(x);
                }
            });
            assertEquals(null, e);
        }
        try (Reader r = Reader.of(w.toByteArray()); Tensor back = r.read()) {
            assertArrayEquals(row(4, 64), back.toFloatArray());
        }
    }

    @Test
    void aShareTakenToAnotherThreadGivesSegmentsThatFailAfterTheTensorCloses() throws Exception {
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, 32);
        Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row(6, 32)));
        TensorShare share = t.share();
        MemorySegment[] seen = new MemorySegment[1];
        float[] first = new float[1];
        assertEquals(null, onAnotherThread(() -> {
            seen[0] = share.buffer(0);
            first[0] = seen[0].get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4);
        }));
        assertEquals(row(6, 32)[1], first[0]);
        assertThrows(IllegalStateException.class, t::close, "a shared tensor cannot be closed");
        share.close();
        t.close();
        assertThrows(IllegalStateException.class, () -> seen[0].get(ValueLayout.JAVA_FLOAT, 0));
    }
}
