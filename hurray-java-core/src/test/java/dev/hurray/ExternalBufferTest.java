package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.internal.Releases;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** External memory with a release action: exactly once, on the last drop, on any thread. */
class ExternalBufferTest {

    @Test
    void releaseRunsOnceWhenTheLastReferenceDrops() throws Exception {
        AtomicInteger released = new AtomicInteger();
        Arena arena = Arena.ofShared();
        MemorySegment mem = arena.allocate(256, 64);
        ExternalBuffer a = ExternalBuffer.wrap(mem, () -> {
            released.incrementAndGet();
            arena.close();
        });
        ExternalBuffer b = a.retain();
        ExternalBuffer c = b.retain();
        assertEquals(256, a.byteSize());
        assertEquals(64, c.alignment());
        assertEquals(DeviceTag.CPU, b.deviceTag());
        assertEquals(SyncMode.PRODUCER_SYNCED, a.syncMode());
        a.close();
        a.close();
        b.close();
        assertEquals(0, released.get());
        c.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
        c.close();
        assertEquals(1, released.get());
        // use after release: the handle and the memory both refuse, never crash
        assertThrows(IllegalStateException.class, c::byteSize);
        assertThrows(IllegalStateException.class, c::retain);
        assertThrows(IllegalStateException.class, () -> mem.get(ValueLayout.JAVA_BYTE, 0));
    }

    @Test
    void aFailedWrapNeverRunsTheRelease() {
        AtomicInteger released = new AtomicInteger();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(128, 64).asSlice(8, 64);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ExternalBuffer.wrap(mem, released::incrementAndGet));
            assertEquals(Status.INVALID_ALIGNMENT, ((HurrayException) e.getCause()).status());
            assertThrows(IllegalArgumentException.class,
                    () -> ExternalBuffer.wrap(MemorySegment.ofArray(new byte[64]), released::incrementAndGet));
        }
        assertEquals(0, released.get());
    }

    @Test
    void concurrentDropsReleaseExactlyOnce() throws Exception {
        int threads = 16;
        int iterations = 500;
        AtomicInteger releasedTotal = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        ExternalBuffer[] refs = new ExternalBuffer[threads];
        AtomicInteger released = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        CyclicBarrier done = new CyclicBarrier(threads + 1);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int me = t;
            Thread w = new Thread(() -> {
                try {
                    for (int i = 0; i < iterations; i++) {
                        start.await();
                        refs[me].close();
                        done.await();
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "dropper-" + t);
            w.start();
            workers.add(w);
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mem = arena.allocate(64, 64);
            for (int i = 0; i < iterations; i++) {
                released.set(0);
                ExternalBuffer first = ExternalBuffer.wrap(mem, () -> {
                    released.incrementAndGet();
                    releasedTotal.incrementAndGet();
                });
                refs[0] = first;
                for (int t = 1; t < threads; t++) {
                    refs[t] = first.retain();
                }
                start.await();
                done.await();
                assertEquals(1, released.get(), "iteration " + i);
            }
        }
        for (Thread w : workers) {
            w.join();
        }
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
        assertEquals(iterations, releasedTotal.get());
    }

    @Test
    void releaseUpcallOnANonJavaThread() throws Throwable {
        AtomicReference<Thread> on = new AtomicReference<>();
        CountDownLatch ran = new CountDownLatch(1);
        Arena arena = Arena.ofShared();
        MemorySegment mem = arena.allocate(64, 64);
        ExternalBuffer b = ExternalBuffer.wrap(mem, () -> {
            on.set(Thread.currentThread());
            arena.close();
            ran.countDown();
        });
        // Native code takes its own reference and drops it last, on a thread it started.
        MemorySegment nativeClone = cloneNative(b);
        b.close();
        assertEquals(1, ran.getCount());
        int rc = InteropNative.destroyOnNativeThread(InteropNative.hurrayFunction("hurray_buffer_destroy"), nativeClone);
        assertEquals(0, rc);
        assertEquals(0, ran.getCount());
        assertTrue(on.get() != Thread.currentThread());
        assertFalse(arena.scope().isAlive());
    }

    @Test
    void anExceptionInTheReleaseActionNeverKillsTheJvm() throws Throwable {
        long before = Releases.failureCount();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mem = arena.allocate(64, 64);
            // dropped by Java: rethrown from close(), after the buffer is released
            ExternalBuffer b = ExternalBuffer.wrap(mem, () -> {
                throw new IllegalStateException("release failed on purpose");
            });
            IllegalStateException e = assertThrows(IllegalStateException.class, b::close);
            assertEquals("release failed on purpose", e.getMessage());
            assertFalse(b.isOpen());
            // an Error too
            ExternalBuffer c = ExternalBuffer.wrap(mem, () -> {
                throw new StackOverflowError("on purpose");
            });
            assertThrows(StackOverflowError.class, c::close);
            // dropped by a native thread: logged and counted, the process lives on
            ExternalBuffer d = ExternalBuffer.wrap(mem, () -> {
                throw new IllegalStateException("release failed on a native thread");
            });
            MemorySegment clone = cloneNative(d);
            d.close();
            assertEquals(0, InteropNative.destroyOnNativeThread(InteropNative.hurrayFunction("hurray_buffer_destroy"), clone));
        }
        assertEquals(before + 3, Releases.failureCount());
        assertEquals(null, Releases.takeFailure());
    }

    @Test
    void tensorOverExternalBuffersReleasesWhenClosedLast() throws Exception {
        AtomicInteger released = new AtomicInteger();
        Arena arena = Arena.ofShared();
        MemorySegment mem = arena.allocate(16, 64);
        mem.copyFrom(MemorySegment.ofArray(new float[] {1, 2, 3, 4}));
        Tensor t;
        try (ExternalBuffer b = ExternalBuffer.wrap(mem, () -> {
            released.incrementAndGet();
            arena.close();
        })) {
            t = b.asTensor(TensorDescriptor.of(ElementType.FLOAT32, 2, 2));
        }
        assertEquals(0, released.get());
        assertArrayEquals(new float[] {1, 2, 3, 4}, t.toFloatArray());
        MemorySegment view = t.buffer(0);
        Thread closer = new Thread(t::close);
        closer.start();
        closer.join();
        assertEquals(1, released.get());
        assertThrows(IllegalStateException.class, () -> view.get(ValueLayout.JAVA_BYTE, 0));
        assertThrows(IllegalStateException.class, t::toFloatArray);
        assertThrows(IllegalStateException.class, () -> t.buffer(0));
    }

    @Test
    void tensorOverExternalBuffersChecksTheBufferTable() throws Exception {
        try (Arena arena = Arena.ofConfined(); ExternalBuffer b = ExternalBuffer.wrap(arena.allocate(8, 64), null)) {
            assertThrows(IllegalArgumentException.class, () -> b.asTensor(TensorDescriptor.of(ElementType.FLOAT32, 4)));
            assertThrows(IllegalArgumentException.class,
                    () -> ExternalBuffer.asTensor(TensorDescriptor.of(ElementType.FLOAT32, 2), b, b));
            assertTrue(b.isOpen());
        }
        MemorySegment device = MemorySegment.ofAddress(0x7f00_0000_0000L).reinterpret(4096);
        try (ExternalBuffer d = ExternalBuffer.wrap(device, 4096, DeviceTag.CUDA, null)) {
            assertThrows(IllegalArgumentException.class, () -> d.asTensor(TensorDescriptor.of(ElementType.FLOAT32, 4)));
        }
    }

    @Test
    void bufferListDropsItsReferences() throws Throwable {
        AtomicInteger released = new AtomicInteger();
        try (Arena arena = Arena.ofShared()) {
            ExternalBuffer a = ExternalBuffer.wrap(arena.allocate(64, 64), released::incrementAndGet);
            ExternalBuffer b = ExternalBuffer.wrap(arena.allocate(128, 64), released::incrementAndGet);
            ExternalBufferList list = ExternalBufferList.of(a, b);
            assertEquals(2, list.size());
            a.close();
            b.close();
            assertEquals(0, released.get());
            list.close();
            assertEquals(2, released.get());
            assertThrows(IllegalStateException.class, list::nativeHandle);

            // handed to native code, destroyed on a native thread
            ExternalBuffer c = ExternalBuffer.wrap(arena.allocate(64, 64), released::incrementAndGet);
            ExternalBufferList list2 = ExternalBufferList.of(c);
            c.close();
            MemorySegment raw = list2.release();
            assertFalse(list2.isOpen());
            assertEquals(0, InteropNative.destroyOnNativeThread(InteropNative.hurrayFunction("hurray_buffer_list_destroy"), raw));
            assertEquals(3, released.get());
        }
    }

    @Test
    void concurrentCloseOfOneHandleDestroysOnce() throws Exception {
        for (int i = 0; i < 200; i++) {
            AtomicInteger released = new AtomicInteger();
            try (Arena arena = Arena.ofShared()) {
                ExternalBuffer b = ExternalBuffer.wrap(arena.allocate(64, 64), released::incrementAndGet);
                Thread x = new Thread(b::close);
                x.start();
                b.close();
                x.join();
            }
            assertEquals(1, released.get());
        }
        assertSame(null, Releases.takeFailure());
    }

    private static MemorySegment cloneNative(ExternalBuffer b) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            assertEquals(0, dev.hurray.ffm.hurray_h.hurray_buffer_clone(b.nativeHandle(), out));
            return out.get(ValueLayout.ADDRESS, 0);
        }
    }
}
