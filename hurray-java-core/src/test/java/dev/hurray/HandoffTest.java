package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.internal.Releases;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every cross-check rule of {@code hurray_buffer_handoff} (docs/spec/c-abi.md "Buffer handoff
 * and sync modes"), from Java, with opaque fake device handles: no GPU needed.
 */
class HandoffTest {
    private static final MemorySegment EVENT = MemorySegment.ofAddress(0xE0E0_0000L);
    private static final MemorySegment STREAM = MemorySegment.ofAddress(0x5770_0000L);

    private Arena arena;
    private MemorySegment data;
    private final AtomicInteger released = new AtomicInteger();

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
        data = arena.allocate(256, 64);
    }

    @AfterEach
    void tearDown() {
        arena.close();
    }

    /** A 16-byte binary buffer handle as docs/spec/descriptor.md "Buffer handle" lays it out. */
    static byte[] handle(long size, int alignment, DeviceTag tag, int syncMode) {
        ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(0, size).putInt(8, alignment).put(12, (byte) tag.code()).put(13, (byte) syncMode);
        return b.array();
    }

    private ExternalBuffer handoff(int mode, SyncPayload p) throws HurrayException {
        return ExternalBuffer.handoff(handle(256, 64, DeviceTag.CPU, mode), data, p, released::incrementAndGet);
    }

    private void assertFails(Status status, int mode, SyncPayload p) {
        HurrayException e = assertThrows(HurrayException.class, () -> handoff(mode, p));
        assertEquals(status, e.status(), e.getMessage());
        assertEquals(0, released.get(), "a failed handoff releases nothing");
    }

    @Test
    void producerSyncedAcceptsNoPayloadOrAnEmptyOne() throws Exception {
        try (ExternalBuffer b = handoff(0, null)) {
            assertEquals(SyncMode.PRODUCER_SYNCED, b.syncMode());
            assertEquals(MemorySegment.NULL, b.syncPayload().syncHandle());
            assertFalse(b.releaseEvent());
        }
        try (ExternalBuffer b = handoff(0, SyncPayload.none())) {
            assertEquals(SyncMode.PRODUCER_SYNCED, b.syncMode());
        }
        assertEquals(2, released.get());
    }

    @Test
    void producerSyncedRefusesAHandleOrAStream() {
        assertFails(Status.SYNC_MODE_MISMATCH, 0, SyncPayload.event(EVENT, DeviceTag.CPU, MemorySegment.ofAddress(16),
                MemorySegment.NULL));
        assertFails(Status.SYNC_MODE_MISMATCH, 0, SyncPayload.consumerStream(STREAM, DeviceTag.CPU));
    }

    @Test
    void eventNeedsAHandleAReleaseFunctionAndTheBuffersDeviceTag() {
        assertFails(Status.SYNC_MODE_MISMATCH, 1, null);
        assertFails(Status.SYNC_MODE_MISMATCH, 1, SyncPayload.none());
        SyncPayload noHandle = SyncPayload.event(MemorySegment.NULL, DeviceTag.CPU, e -> { });
        assertFails(Status.SYNC_MODE_MISMATCH, 1, noHandle);
        noHandle.discard();
        assertFails(Status.SYNC_MODE_MISMATCH, 1, new SyncPayload(EVENT, DeviceTag.CPU.code(), MemorySegment.NULL, 0,
                MemorySegment.NULL, MemorySegment.NULL));
        SyncPayload wrongDevice = SyncPayload.event(EVENT, DeviceTag.CUDA, e -> { });
        assertFails(Status.SYNC_MODE_MISMATCH, 1, wrongDevice);
        wrongDevice.discard();
        assertFalse(Releases.isPending(wrongDevice.eventReleaseContext().address()));
    }

    @Test
    void eventHandoffCarriesTheEventAndTheConsumerReleasesItOnce() throws Exception {
        AtomicReference<MemorySegment> releasedEvent = new AtomicReference<>();
        AtomicInteger eventReleases = new AtomicInteger();
        SyncPayload p = SyncPayload.event(EVENT, DeviceTag.CPU, e -> {
            releasedEvent.set(e);
            eventReleases.incrementAndGet();
        });
        try (ExternalBuffer b = handoff(1, p); ExternalBuffer other = b.retain()) {
            assertEquals(SyncMode.EVENT, b.syncMode());
            SyncPayload back = other.syncPayload();
            assertEquals(EVENT.address(), back.syncHandle().address());
            assertEquals(DeviceTag.CPU.code(), back.syncHandleDeviceTag());
            assertTrue(back.hasJavaRelease());
            assertEquals(0, eventReleases.get(), "Hurray never releases the event itself");
            assertTrue(b.releaseEvent());
            assertFalse(other.releaseEvent(), "exactly once per handed-off buffer");
            assertEquals(1, eventReleases.get());
            assertEquals(EVENT.address(), releasedEvent.get().address());
        }
        assertEquals(1, released.get());
        assertEquals(1, eventReleases.get(), "releasing the buffer does not release the event");
    }

    @Test
    void anExceptionInTheEventReleaseIsRethrownNotFatal() throws Exception {
        SyncPayload p = SyncPayload.event(EVENT, DeviceTag.CPU, e -> {
            throw new IllegalArgumentException("event release failed on purpose");
        });
        try (ExternalBuffer b = handoff(1, p)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::releaseEvent);
            assertEquals("event release failed on purpose", e.getMessage());
            assertFalse(b.releaseEvent());
        }
    }

    @Test
    void eventHandoffOnADeviceBuffer() throws Exception {
        // A CUDA-tagged buffer with a fake device pointer: Hurray never dereferences either.
        MemorySegment devicePtr = MemorySegment.ofAddress(0x7f00_0000_0000L).reinterpret(8192);
        AtomicInteger events = new AtomicInteger();
        try (ExternalBuffer b = ExternalBuffer.handoff(handle(8192, 4096, DeviceTag.CUDA, 1), devicePtr,
                SyncPayload.event(EVENT, DeviceTag.CUDA, e -> events.incrementAndGet()), released::incrementAndGet)) {
            assertEquals(DeviceTag.CUDA, b.deviceTag());
            assertEquals(4096, b.alignment());
            assertTrue(b.releaseEvent());
        }
        assertEquals(1, events.get());
        assertEquals(1, released.get());
    }

    @Test
    void consumerStreamNeedsAStreamOfTheBuffersDevice() throws Exception {
        assertFails(Status.SYNC_MODE_MISMATCH, 2, null);
        assertFails(Status.SYNC_MODE_MISMATCH, 2, SyncPayload.none());
        assertFails(Status.SYNC_MODE_MISMATCH, 2, SyncPayload.consumerStream(MemorySegment.NULL, DeviceTag.CPU));
        assertFails(Status.SYNC_MODE_MISMATCH, 2, SyncPayload.consumerStream(STREAM, DeviceTag.CUDA));
        try (ExternalBuffer b = handoff(2, SyncPayload.consumerStream(STREAM, DeviceTag.CPU))) {
            assertEquals(SyncMode.CONSUMER_STREAM, b.syncMode());
            assertEquals(STREAM.address(), b.syncPayload().consumerStream().address());
            assertFalse(b.releaseEvent());
        }
        assertEquals(1, released.get());
    }

    @Test
    void reservedAndInvalidModesAreRefused() {
        for (int mode = 3; mode <= 255; mode++) {
            assertFails(Status.INVALID_SYNC_MODE, mode, null);
            assertFails(Status.INVALID_SYNC_MODE, mode, SyncPayload.consumerStream(STREAM, DeviceTag.CPU));
        }
    }

    @Test
    void malformedHandlesAndSegments() {
        assertThrows(IllegalArgumentException.class,
                () -> ExternalBuffer.handoff(new byte[15], data, null, null));
        assertThrows(IllegalArgumentException.class,
                () -> ExternalBuffer.handoff(handle(512, 64, DeviceTag.CPU, 0), data, null, null));
        HurrayException e = assertThrows(HurrayException.class,
                () -> ExternalBuffer.handoff(handle(256, 48, DeviceTag.CPU, 0), data, null, released::incrementAndGet));
        assertEquals(Status.INVALID_ALIGNMENT, e.status());
        assertEquals(0, released.get());
    }
}
