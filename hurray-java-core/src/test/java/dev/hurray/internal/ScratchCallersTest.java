package dev.hurray.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Shape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The callers moved from per-thread scratch to {@link ScratchPool}: with one short-lived virtual
 * thread per call, the areas made stay at the pool's bound, and the buffer accessors make no
 * per-thread area at all.
 */
class ScratchCallersTest {
    private static final int THREADS = 20_000;
    /** Areas another test's threads (a cleaner, a late close) may take meanwhile. */
    private static final int MARGIN = 4;

    private static void onVirtualThreads(ThrowingTask task) throws Exception {
        try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < THREADS; i++) {
                int n = i;
                fs.add(vt.submit(() -> {
                    task.run(n);
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        }
    }

    private interface ThrowingTask {
        void run(int i) throws Exception;
    }

    @Test
    void bufferAccessorsOnManyVirtualThreadsUseOnlyPooledAreas() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mem = arena.allocate(256, 64);
            long pooled = ScratchPool.made();
            long perThread = Native.scratchAreasMade();
            onVirtualThreads(i -> {
                MemorySegment b = NativeBuffers.fromPtr(mem, 256, 64, 0, 0);
                try {
                    long[] info = NativeBuffers.info(b);
                    assertEquals(mem.address(), info[0]);
                    assertEquals(256, info[1]);
                    MemorySegment c = NativeBuffers.clone(b);
                    NativeBuffers.destroy(c);
                } finally {
                    NativeBuffers.destroy(b);
                }
            });
            long made = ScratchPool.made() - pooled;
            assertTrue(made <= ScratchPool.KEEP + MARGIN, made + " pooled areas for " + THREADS + " threads");
            assertEquals(0, Native.scratchAreasMade() - perThread, "per-thread scratch areas made");
        }
    }

    @Test
    void descriptorBuildsOnManyVirtualThreadsShareAFewBuildAreas() throws Exception {
        long before = ScratchPool.BUILD.count();
        onVirtualThreads(i -> {
            DescriptorFields f = new DescriptorFields(ElementType.FLOAT32, Shape.of(1 + i % 97), Layout.rowMajor(), 0,
                    List.of(), null, "t" + i, Map.of());
            NativeDescriptor.Built built = NativeDescriptor.build(f);
            assertEquals(List.of(BufferSpec.cpu(4L * (1 + i % 97))), built.fields().buffers());
            assertEquals(1 + i % 97, NativeDescriptor.checkedTable(new DescriptorFields(ElementType.FLOAT32,
                    Shape.of(1 + i % 97), Layout.rowMajor(), 0, List.of(), null, null, Map.of())).get(0).byteSize() / 4);
        });
        long made = ScratchPool.BUILD.count() - before;
        assertTrue(made <= ScratchPool.KEEP + MARGIN, made + " build areas for " + THREADS + " threads");
    }
}
