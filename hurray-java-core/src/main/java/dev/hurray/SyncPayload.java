package dev.hurray;

import dev.hurray.internal.Releases;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The per-mode payload of a buffer handoff ({@code HurraySyncPayload}; docs/spec/c-abi.md
 * "Buffer handoff and sync modes"). Device handles (a CUDA/HIP event, a stream) are opaque
 * addresses carried as zero-length {@link MemorySegment}s; Hurray never dereferences them.
 *
 * <ul>
 *   <li>{@link SyncMode#PRODUCER_SYNCED}: {@link #none()} (or no payload at all);</li>
 *   <li>{@link SyncMode#EVENT}: {@link #event(MemorySegment, DeviceTag, Consumer)} (a Java release
 *       action, called through a process-wide upcall stub) or
 *       {@link #event(MemorySegment, DeviceTag, MemorySegment, MemorySegment)} (a native function
 *       such as a wrapper of {@code cudaEventDestroy});</li>
 *   <li>{@link SyncMode#CONSUMER_STREAM}: {@link #consumerStream(MemorySegment, DeviceTag)}.</li>
 * </ul>
 * The canonical constructor accepts any combination so that mismatching payloads can be made on
 * purpose; {@link ExternalBuffer#handoff} cross-checks them natively.
 *
 * <h2>Ownership of the event</h2>
 * The event stays the producer's until a handoff succeeds; then the consumer releases it,
 * exactly once, with {@link ExternalBuffer#releaseEvent()} after issuing its stream-waits.
 * Hurray never releases it, not even when the buffer is released. A Java release action given to
 * {@link #event(MemorySegment, DeviceTag, Consumer)} is registered until it runs; if it never
 * runs (the handoff failed and the producer dropped the payload) call {@link #discard()}.
 *
 * @param syncHandle the event ({@code sync_handle}), or {@link MemorySegment#NULL}
 * @param syncHandleDeviceTag device tag code of the event ({@code sync_handle_device_tag})
 * @param consumerStream the consumer's stream, or {@link MemorySegment#NULL}
 * @param consumerStreamDeviceTag device tag code of the stream
 * @param eventReleaseFn a native {@code HurrayEventReleaseFn}, or {@link MemorySegment#NULL}
 * @param eventReleaseContext its context pointer
 */
public record SyncPayload(MemorySegment syncHandle, int syncHandleDeviceTag, MemorySegment consumerStream,
        int consumerStreamDeviceTag, MemorySegment eventReleaseFn, MemorySegment eventReleaseContext) {

    /** Null-checks; device tag codes must fit one byte. */
    public SyncPayload {
        Objects.requireNonNull(syncHandle, "syncHandle");
        Objects.requireNonNull(consumerStream, "consumerStream");
        Objects.requireNonNull(eventReleaseFn, "eventReleaseFn");
        Objects.requireNonNull(eventReleaseContext, "eventReleaseContext");
        if ((syncHandleDeviceTag & ~0xFF) != 0 || (consumerStreamDeviceTag & ~0xFF) != 0) {
            throw new IllegalArgumentException("device tag codes are one byte");
        }
    }

    /** The all-zero payload of {@link SyncMode#PRODUCER_SYNCED}. */
    public static SyncPayload none() {
        return new SyncPayload(MemorySegment.NULL, 0, MemorySegment.NULL, 0, MemorySegment.NULL, MemorySegment.NULL);
    }

    /**
     * A {@link SyncMode#EVENT} payload whose event is released by a Java action. The action runs
     * at most once, on the thread that calls {@link ExternalBuffer#releaseEvent()} (or on any
     * thread of native code that calls the function pointer: it is an upcall, which catches and
     * logs everything the action throws).
     *
     * @param event the event handle (opaque address)
     * @param deviceTag the event's device, which must equal the buffer's
     * @param release receives {@code event}
     */
    public static SyncPayload event(MemorySegment event, DeviceTag deviceTag, Consumer<MemorySegment> release) {
        Objects.requireNonNull(release, "release");
        long key = Releases.register(() -> release.accept(event));
        return new SyncPayload(event, deviceTag.code(), MemorySegment.NULL, 0, Releases.EVENT_RELEASE,
                Releases.keyPointer(key));
    }

    /** A {@link SyncMode#EVENT} payload whose event is released by a native function. */
    public static SyncPayload event(MemorySegment event, DeviceTag deviceTag, MemorySegment releaseFn,
            MemorySegment releaseContext) {
        return new SyncPayload(event, deviceTag.code(), MemorySegment.NULL, 0, releaseFn, releaseContext);
    }

    /** A {@link SyncMode#CONSUMER_STREAM} payload. */
    public static SyncPayload consumerStream(MemorySegment stream, DeviceTag deviceTag) {
        return new SyncPayload(MemorySegment.NULL, 0, stream, deviceTag.code(), MemorySegment.NULL, MemorySegment.NULL);
    }

    /** True if the event release is a Java action of {@link #event(MemorySegment, DeviceTag, Consumer)}. */
    public boolean hasJavaRelease() {
        return eventReleaseFn.equals(Releases.EVENT_RELEASE);
    }

    /**
     * Forgets a Java event-release action that will never run (a failed handoff), without
     * running it. A no-op for other payloads and after the action ran.
     */
    public void discard() {
        if (hasJavaRelease()) {
            Releases.forget(eventReleaseContext.address());
        }
    }
}
