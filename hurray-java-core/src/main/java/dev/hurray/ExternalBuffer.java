package dev.hurray;

import dev.hurray.ffm.HurrayEventReleaseFn;
import dev.hurray.internal.NativeBuffers;
import dev.hurray.internal.Releases;
import dev.hurray.internal.TensorAdopters;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One owned reference to a native buffer ({@code HurrayBuffer*}) over memory the caller owns,
 * made without copying (docs/spec/c-abi.md "Buffers and buffer lists").
 *
 * <h2>Ownership and the release action</h2>
 * {@link #wrap} and {@link #handoff} take a release action: a {@link Runnable} (for example
 * {@code arena::close} of the arena that owns the memory, or returning it to a pool). The action
 * runs <b>exactly once</b>, when the <b>last</b> reference sharing the buffer is dropped: this
 * handle, every {@link #retain()}ed handle, every {@link ExternalBufferList} and {@link Tensor}
 * made from it ({@link #asTensor}), and native code's own clones. It never runs if the factory
 * throws. Until it runs the memory must stay valid and unmodified.
 *
 * <h2>Threads</h2>
 * Handles may be used and closed from any thread; closing one handle from two threads destroys
 * it once. Do not race a handle's other methods with its own {@code close()} (give each thread
 * its own {@link #retain()}ed handle instead). The release action runs on the thread that drops the last reference, through a
 * process-wide upcall stub. On a Java thread that costs a plain upcall (~0.1–0.5 µs measured
 * here); on a thread the JVM did not start (native code destroying its clone) the first upcall
 * attaches that thread to the JVM, once (~60–180 µs measured here, a {@code Thread} object
 * included; it stays attached until it exits), and later ones cost about what they cost on a
 * Java thread (hurray-java-bench/README.md, "Release upcalls"). So the action must be safe to
 * run on any thread: close a {@linkplain java.lang.foreign.Arena#ofShared
 * shared} arena there, not a confined one.
 *
 * <h2>Errors in the release action</h2>
 * Whatever the action throws is caught inside the upcall (it never reaches native code or kills
 * the JVM) and logged. When the release was triggered by a Java {@code close()} the failure is
 * rethrown from that {@code close()} (after the buffer is released); on a native thread it is
 * only logged.
 *
 * <h2>Use after close</h2>
 * Every method of a closed handle throws {@link IllegalStateException}. The segment from
 * {@link #segment()} keeps the caller's scope: if the release action closes the caller's arena,
 * touching the segment afterwards throws {@link IllegalStateException} too.
 */
public final class ExternalBuffer implements AutoCloseable {
    private final MemorySegment handle;
    private final MemorySegment data;
    /** Shared by every handle retained from the same buffer: the event is released once. */
    private final AtomicBoolean eventReleased;
    private final AtomicBoolean closed = new AtomicBoolean();

    private ExternalBuffer(MemorySegment handle, MemorySegment data, AtomicBoolean eventReleased) {
        this.handle = handle;
        this.data = data;
        this.eventReleased = eventReleased;
    }

    /**
     * Wraps host memory at the default 64-byte alignment as a {@link DeviceTag#CPU} buffer.
     *
     * @see #wrap(MemorySegment, int, DeviceTag, Runnable)
     */
    public static ExternalBuffer wrap(MemorySegment data, Runnable release) {
        return wrap(data, DeviceTag.MIN_ALIGNMENT, DeviceTag.CPU, release);
    }

    /**
     * Wraps {@code data} ({@code hurray_buffer_from_ptr}): a buffer of {@code data.byteSize()}
     * bytes, {@link SyncMode#PRODUCER_SYNCED}.
     *
     * @param data native memory (for a device buffer, a segment whose address is the device
     *     pointer and whose size is the buffer's, e.g. {@code MemorySegment.ofAddress(p).reinterpret(n)})
     * @param alignment the buffer's alignment in bytes: a power of two, at least the device's
     *     minimum, and {@code data}'s address must be a multiple of it
     * @param deviceTag where the memory lives
     * @param release run exactly once when the last reference drops, or null (then the memory
     *     must outlive every reference)
     * @throws IllegalArgumentException for a heap segment, or a bad or unmet alignment (a
     *     caller mistake: the cause is the {@link HurrayException} with
     *     {@link Status#INVALID_ALIGNMENT}); nothing is released then
     */
    public static ExternalBuffer wrap(MemorySegment data, int alignment, DeviceTag deviceTag, Runnable release) {
        requireNative(data);
        long key = release == null ? 0 : Releases.register(release);
        try {
            MemorySegment h = NativeBuffers.fromPtr(data, data.byteSize(), alignment, deviceTag.code(), key);
            return new ExternalBuffer(h, data, new AtomicBoolean());
        } catch (HurrayException e) {
            Releases.forget(key);
            throw e.asCallerMistake();
        } catch (RuntimeException | Error e) {
            Releases.forget(key);
            throw e;
        }
    }

    /**
     * Takes a producer's buffer ({@code hurray_buffer_handoff}), cross-checking the sync mode in
     * byte 13 of its 16-byte binary handle (docs/spec/descriptor.md "Buffer handle") against
     * {@code sync}.
     *
     * @param handleBytes the 16-byte binary buffer handle (byte size, alignment, device tag,
     *     sync mode); {@code data.byteSize()} must be at least its byte size
     * @param data the memory (device memory as an opaque address segment)
     * @param sync the payload, or null (allowed for {@link SyncMode#PRODUCER_SYNCED} only)
     * @param release as for {@link #wrap(MemorySegment, int, DeviceTag, Runnable)}
     * @throws HurrayException {@link Status#INVALID_SYNC_MODE} for a reserved mode byte,
     *     {@link Status#SYNC_MODE_MISMATCH} for a payload that does not fit the mode, and the
     *     handle's decoding errors; nothing is released then, and the event stays the caller's
     * @throws IllegalArgumentException if {@code handleBytes} is not 16 bytes, or the segment
     *     is a heap segment or smaller than the handle's byte size
     */
    public static ExternalBuffer handoff(byte[] handleBytes, MemorySegment data, SyncPayload sync, Runnable release)
            throws HurrayException {
        if (handleBytes.length != 16) {
            throw new IllegalArgumentException("a binary buffer handle is 16 bytes, got " + handleBytes.length);
        }
        requireNative(data);
        long declared = java.nio.ByteBuffer.wrap(handleBytes).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong(0);
        if (declared < 0 || Long.compareUnsigned(declared, data.byteSize()) > 0) {
            throw new IllegalArgumentException("the handle declares " + Long.toUnsignedString(declared)
                    + " bytes, the segment has " + data.byteSize());
        }
        NativeBuffers.Payload p = sync == null ? null : new NativeBuffers.Payload(sync.syncHandle(),
                sync.syncHandleDeviceTag(), sync.consumerStream(), sync.consumerStreamDeviceTag(), sync.eventReleaseFn(),
                sync.eventReleaseContext());
        long key = release == null ? 0 : Releases.register(release);
        try {
            MemorySegment h = NativeBuffers.handoff(handleBytes, data, p, key);
            return new ExternalBuffer(h, data.asSlice(0, declared), new AtomicBoolean());
        } catch (HurrayException | RuntimeException | Error e) {
            Releases.forget(key);
            throw e;
        }
    }

    private static void requireNative(MemorySegment data) {
        Objects.requireNonNull(data, "data");
        if (!data.isNative()) {
            throw new IllegalArgumentException("a heap segment cannot be handed to native code; allocate it from an Arena");
        }
    }

    /**
     * Another owned reference to the same buffer ({@code hurray_buffer_clone}, an atomic
     * reference count); close each one.
     *
     * @throws IllegalStateException if this handle is closed
     */
    public ExternalBuffer retain() {
        requireOpen();
        try {
            return new ExternalBuffer(NativeBuffers.clone(handle), data, eventReleased);
        } catch (HurrayException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** The memory, in the caller's scope, of exactly the buffer's byte size. @throws IllegalStateException if closed */
    public MemorySegment segment() {
        requireOpen();
        return data;
    }

    /** The buffer's size in bytes. @throws IllegalStateException if closed */
    public long byteSize() {
        return info()[1];
    }

    /** The buffer's alignment in bytes. @throws IllegalStateException if closed */
    public int alignment() {
        return (int) info()[2];
    }

    /** Where the memory lives. @throws IllegalStateException if closed */
    public DeviceTag deviceTag() {
        return DeviceTag.fromCode((int) info()[3]);
    }

    /** The sync mode the buffer was handed off with ({@link SyncMode#PRODUCER_SYNCED} for {@link #wrap}). */
    public SyncMode syncMode() {
        return SyncMode.fromCode((int) info()[4]);
    }

    /** The handoff payload ({@code hurray_buffer_sync_payload}; all zero for {@link SyncMode#PRODUCER_SYNCED}). */
    public SyncPayload syncPayload() {
        requireOpen();
        try {
            NativeBuffers.Payload p = NativeBuffers.syncPayload(handle);
            return new SyncPayload(p.syncHandle(), p.syncHandleDeviceTag(), p.consumerStream(),
                    p.consumerStreamDeviceTag(), p.eventReleaseFn(), p.eventReleaseContext());
        } catch (HurrayException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /**
     * The consumer's side of {@link SyncMode#EVENT}: after issuing its stream-waits on
     * {@code syncPayload().syncHandle()}, calls {@code event_release_fn(sync_handle, context)}
     * exactly once for this buffer (shared by its retained handles). Returns false if it was
     * already called, or the mode carries no event. A Java release action runs on this thread;
     * what it throws is rethrown here.
     *
     * @throws IllegalStateException if this handle is closed
     */
    public boolean releaseEvent() {
        SyncPayload p = syncPayload();
        if (p.eventReleaseFn().equals(MemorySegment.NULL) || !eventReleased.compareAndSet(false, true)) {
            return false;
        }
        Releases.enter();
        try {
            HurrayEventReleaseFn.invoke(p.eventReleaseFn(), p.syncHandle(), p.eventReleaseContext());
        } finally {
            Releases.exit();
        }
        Releases.rethrowFailure();
        return true;
    }

    /**
     * The borrowed native handle ({@code HurrayBuffer*}) for native code, valid while this
     * handle is open. Native code that keeps the buffer longer clones it with
     * {@code hurray_buffer_clone} and destroys its clone itself.
     */
    public MemorySegment nativeHandle() {
        requireOpen();
        return handle;
    }

    /**
     * A tensor over this one buffer (see {@link #asTensor(TensorDescriptor, ExternalBuffer...)}).
     */
    public Tensor asTensor(TensorDescriptor descriptor) {
        return asTensor(descriptor, this);
    }

    /**
     * A tensor over external buffers, without copying: buffer {@code i} of {@code descriptor}
     * is {@code buffers[i]}. The tensor holds its own reference to each (the caller may close
     * theirs at once); closing the tensor ends its views ({@link IllegalStateException} after)
     * and drops those references, so the release actions run then if no other reference is left,
     * on the closing thread. The tensor is {@link TensorScope#SHARED}.
     *
     * @throws IllegalArgumentException if the count differs from the buffer table, a buffer is
     *     too small for its entry, or misaligned for it, or is device memory (Java cannot view
     *     {@link DeviceTag#CUDA}, ROCm, Metal or Vulkan memory; hand those over with
     *     {@link ExternalBufferList} instead)
     * @throws IllegalStateException if a handle is closed
     */
    public static Tensor asTensor(TensorDescriptor descriptor, ExternalBuffer... buffers) {
        Objects.requireNonNull(descriptor, "descriptor");
        if (buffers.length != descriptor.buffers().size()) {
            throw new IllegalArgumentException(buffers.length + " buffers for a descriptor with "
                    + descriptor.buffers().size() + " buffers");
        }
        ExternalBuffer[] refs = new ExternalBuffer[buffers.length];
        MemorySegment[] raw = new MemorySegment[buffers.length];
        try {
            for (int i = 0; i < buffers.length; i++) {
                DeviceTag tag = buffers[i].deviceTag();
                if (tag != DeviceTag.CPU && tag != DeviceTag.CUDA_HOST && tag != DeviceTag.IPC) {
                    throw new IllegalArgumentException("buffer " + i + " is " + tag
                            + " memory, which Java cannot view; pass it to native code in an ExternalBufferList");
                }
                refs[i] = buffers[i].retain();
                raw[i] = MemorySegment.ofAddress(refs[i].data.address()).reinterpret(refs[i].data.byteSize());
                if (refs[i].data.isReadOnly()) {
                    raw[i] = raw[i].asReadOnly();
                }
            }
            return TensorAdopters.adoptViews(descriptor, raw, TensorScope.SHARED, () -> closeAll(refs));
        } catch (RuntimeException | Error e) {
            closeAll(refs);
            throw e;
        }
    }

    private static void closeAll(ExternalBuffer[] refs) {
        RuntimeException first = null;
        for (ExternalBuffer r : refs) {
            if (r == null) {
                continue;
            }
            try {
                r.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** True until {@link #close()}. */
    public boolean isOpen() {
        return !closed.get();
    }

    /**
     * Drops this reference ({@code hurray_buffer_destroy}); if it was the last, the release action
     * runs now, on this thread, and what it threw is rethrown here. Idempotent and safe to race.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            NativeBuffers.destroy(handle);
        }
    }

    /** Moves ownership of the native handle to the caller (used by {@link ExternalBufferList}). */
    MemorySegment detach() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException("the buffer handle is closed");
        }
        return handle;
    }

    /** {data address, byte size, alignment, device tag, sync mode}: fixed for the handle's life, read once. */
    private volatile long[] info;

    private long[] info() {
        requireOpen();
        long[] i = info;
        if (i == null) {
            try {
                i = NativeBuffers.info(handle);
            } catch (HurrayException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
            info = i;
        }
        return i;
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException("the buffer handle is closed");
        }
    }

    @Override
    public String toString() {
        return "ExternalBuffer[" + data.byteSize() + " bytes" + (isOpen() ? "" : ", closed") + "]";
    }
}
