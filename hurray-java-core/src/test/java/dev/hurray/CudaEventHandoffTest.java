package dev.hurray;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A real CUDA event handed off with {@link SyncMode#EVENT}, through libcudart via FFM. Skipped
 * where libcudart cannot be loaded or no device is present (the ordinary build machines); run it
 * on a GPU machine with {@code -Dtest=CudaEventHandoffTest}.
 */
class CudaEventHandoffTest {
    private static final Linker L = Linker.nativeLinker();

    @Test
    void aRecordedEventCrossesTheHandoffAndIsReleasedOnce() throws Throwable {
        SymbolLookup cudart = loadCudart();
        Assumptions.assumeTrue(cudart != null, "libcudart not found: no CUDA runtime on this machine");
        MethodHandle malloc = fn(cudart, "cudaMalloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        MethodHandle free = fn(cudart, "cudaFree", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        MethodHandle memset = fn(cudart, "cudaMemset", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG));
        MethodHandle memcpy = fn(cudart, "cudaMemcpy", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        MethodHandle eventCreate = fn(cudart, "cudaEventCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        MethodHandle eventRecord = fn(cudart, "cudaEventRecord", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        MethodHandle eventDestroy = fn(cudart, "cudaEventDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        MethodHandle streamWait = fn(cudart, "cudaStreamWaitEvent",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        MethodHandle deviceCount = fn(cudart, "cudaGetDeviceCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        try (Arena a = Arena.ofShared()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            Assumptions.assumeTrue((int) deviceCount.invokeExact(out) == 0 && out.get(JAVA_INT, 0) > 0,
                    "no CUDA device");
            long size = 8192;
            assertEquals(0, (int) malloc.invokeExact(out, size + 4096));
            MemorySegment raw = out.get(ADDRESS, 0);
            long aligned = (raw.address() + 4095) & ~4095L; // device buffers are 4096-byte aligned
            MemorySegment dev = MemorySegment.ofAddress(aligned).reinterpret(size);
            // producer: write on the default stream, record an event after the write
            assertEquals(0, (int) memset.invokeExact(dev, 7, size));
            assertEquals(0, (int) eventCreate.invokeExact(out));
            MemorySegment event = out.get(ADDRESS, 0);
            assertEquals(0, (int) eventRecord.invokeExact(event, MemorySegment.NULL));

            AtomicInteger eventReleased = new AtomicInteger();
            AtomicInteger bufferReleased = new AtomicInteger();
            SyncPayload payload = SyncPayload.event(event, DeviceTag.CUDA, e -> {
                try {
                    assertEquals(0, (int) eventDestroy.invokeExact(e));
                    eventReleased.incrementAndGet();
                } catch (Throwable t) {
                    throw new IllegalStateException(t);
                }
            });
            byte[] handle = HandoffTest.handle(size, 4096, DeviceTag.CUDA, SyncMode.EVENT.code());
            try (ExternalBuffer b = ExternalBuffer.handoff(handle, dev, payload, () -> {
                try {
                    int rc = (int) free.invokeExact(raw);
                    assertEquals(0, rc);
                    bufferReleased.incrementAndGet();
                } catch (Throwable t) {
                    throw new IllegalStateException(t);
                }
            })) {
                // consumer: stream-wait on the event, then release it once
                SyncPayload got = b.syncPayload();
                assertEquals(event.address(), got.syncHandle().address());
                assertEquals(0, (int) streamWait.invokeExact(MemorySegment.NULL, got.syncHandle(), 0));
                assertTrue(b.releaseEvent());
                MemorySegment host = a.allocate(size);
                assertEquals(0, (int) memcpy.invokeExact(host, b.segment(), size, 2)); // device to host
                for (long i = 0; i < size; i++) {
                    assertEquals(7, host.get(JAVA_BYTE, i));
                }
            }
            assertEquals(1, eventReleased.get());
            assertEquals(1, bufferReleased.get());
        }
    }

    private static MethodHandle fn(SymbolLookup lib, String name, FunctionDescriptor d) {
        return L.downcallHandle(lib.find(name).orElseThrow(), d);
    }

    private static SymbolLookup loadCudart() {
        for (String name : List.of("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0")) {
            try {
                return SymbolLookup.libraryLookup(name, Arena.global());
            } catch (IllegalArgumentException absent) {
                // try the next name
            }
        }
        return null;
    }
}
