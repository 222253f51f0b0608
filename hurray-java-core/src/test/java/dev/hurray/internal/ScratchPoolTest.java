package dev.hurray.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.HurrayBlockQuant;
import dev.hurray.ffm.HurrayBufferSpec;
import dev.hurray.ffm.HurrayDescriptorFields;
import dev.hurray.ffm.HurrayFileBufferLocation;
import dev.hurray.ffm.HurrayFileReaderOptions;
import dev.hurray.ffm.HurrayPaging;
import dev.hurray.ffm.HurraySparse;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Lent scratch areas: as many as the calls in progress, not as many as the threads that made one. */
class ScratchPoolTest {
    @Test
    void oneHundredThousandVirtualThreadsShareAFewAreas() throws Exception {
        long before = ScratchPool.made();
        try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < 100_000; i++) {
                long mark = i;
                fs.add(vt.submit(() -> {
                    MemorySegment s = ScratchPool.borrow();
                    try {
                        // Exclusive while lent: what this thread wrote is what it reads.
                        s.set(ValueLayout.JAVA_LONG, 0, mark);
                        s.set(ValueLayout.JAVA_LONG, Native.TEXT_OFFSET, ~mark);
                        Thread.onSpinWait();
                        assertEquals(mark, s.get(ValueLayout.JAVA_LONG, 0));
                        assertEquals(~mark, s.get(ValueLayout.JAVA_LONG, Native.TEXT_OFFSET));
                    } finally {
                        ScratchPool.giveBack(s);
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        }
        long made = ScratchPool.made() - before;
        assertTrue(made <= ScratchPool.KEEP, made + " areas for 100,000 threads (at most " + ScratchPool.KEEP + ")");
    }

    @Test
    void areasLentAtOnceAreDistinctAndPastTheSlotsStillWork() {
        List<MemorySegment> lent = new ArrayList<>();
        for (int i = 0; i < ScratchPool.KEEP + 3; i++) {
            MemorySegment s = ScratchPool.borrow();
            assertEquals(Native.SCRATCH_BYTES, s.byteSize());
            assertEquals(0, s.address() % 64);
            for (MemorySegment other : lent) {
                assertNotEquals(other.address(), s.address());
            }
            lent.add(s);
        }
        lent.forEach(ScratchPool::giveBack);
        // Given back, the kept ones are lent again: no new area for the next borrow.
        long made = ScratchPool.made();
        ScratchPool.giveBack(ScratchPool.borrow());
        assertEquals(made, ScratchPool.made());
    }

    @Test
    void theLayoutHoldsEveryPartAtItsOffset() {
        assertEquals(4096, Native.SCRATCH_BYTES);
        assertEquals(64, Native.SLOTS_BYTES);
        // The written-out offsets are the layout's own.
        String[] parts = {"options", "fields", "pointers", "name", "text"};
        long[] offsets = {Native.OPTIONS_OFFSET, Native.FIELDS_OFFSET, Native.POINTERS_OFFSET, Native.NAME_OFFSET,
            Native.TEXT_OFFSET};
        for (int i = 0; i < parts.length; i++) {
            assertEquals(Native.SCRATCH_LAYOUT.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement(parts[i])),
                    offsets[i], parts[i]);
        }
        assertEquals(Native.NAME_BYTES, Native.TEXT_OFFSET - Native.NAME_OFFSET);
        assertEquals(Native.SLOTS_BYTES, Native.OPTIONS_OFFSET);
        assertTrue(Native.OPTIONS_OFFSET + HurrayFileReaderOptions.sizeof() <= Native.FIELDS_OFFSET);
        // The structs the descriptor accessors write into the slots fit there.
        for (long size : new long[] {HurraySparse.sizeof(), HurrayPaging.sizeof(), HurrayBlockQuant.sizeof(),
                HurrayBufferSpec.sizeof(), HurrayFileBufferLocation.sizeof(), 4 * 8}) {
            assertTrue(size <= Native.SLOTS_BYTES, size + " bytes in the slots");
        }
        assertEquals(128, Native.FIELDS_OFFSET);
        assertTrue(Native.FIELDS_OFFSET + HurrayDescriptorFields.layout().byteSize() <= Native.POINTERS_OFFSET);
        assertEquals(256, Native.POINTERS_OFFSET);
        assertEquals(768, Native.NAME_OFFSET);
        assertEquals(1024, Native.TEXT_OFFSET);
        assertEquals(Native.NAME_OFFSET + Native.NAME_BYTES, Native.TEXT_OFFSET);
    }
}
