package dev.hurray.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One shared arena for the small {@code TensorScope.SHARED} tensors of one decoder, up to
 * {@link #MAX_TENSORS} tensors or {@link #MAX_BYTES} payload bytes: closing a shared arena costs a
 * JVM-wide handshake, so one close per batch instead of one per tensor. Each tensor gets a
 * {@link #member()} arena whose close ends that tensor only; the shared arena (and with it the
 * native tensors, through their release actions) closes when the decoder has let go of the batch
 * and every member is closed. A closed tensor's accessors throw at once; segments taken from it
 * before its close stay valid until the whole batch closes.
 *
 * <p>Thread-safe: members close from any thread; the decoder adds members from one thread.
 */
public final class SharedBatch {
    /** Tensors per batch at most. */
    public static final int MAX_TENSORS = 64;
    /** Payload bytes per batch at most. */
    public static final long MAX_BYTES = 256 * 1024;
    /** Tensors of more payload bytes than this get an arena of their own. */
    public static final long MAX_TENSOR_BYTES = 64 * 1024;

    private final Arena shared = Arena.ofShared();
    /** Open members, plus one while the decoder holds the batch. */
    private final AtomicInteger refs = new AtomicInteger(1);
    private int tensors;
    private long bytes;

    /** A new batch, held by the calling decoder until {@link #release()}. */
    public SharedBatch() {
    }

    /** True if a tensor of {@code payload} bytes may join this batch. */
    public boolean fits(long payload) {
        return payload <= MAX_TENSOR_BYTES && tensors < MAX_TENSORS && bytes + payload <= MAX_BYTES;
    }

    /** A member arena for one tensor of {@code payload} bytes (the caller checked {@link #fits}). */
    public Arena member(long payload) {
        tensors++;
        bytes += payload;
        refs.incrementAndGet();
        return new Member();
    }

    /** The decoder lets go of the batch (it is full, or the decoder closes). */
    public void release() {
        unref();
    }

    private void unref() {
        if (refs.decrementAndGet() == 0) {
            shared.close();
        }
    }

    /** One tensor's arena: its segments live in the batch's shared arena. */
    private final class Member implements Arena {
        private final AtomicBoolean closed = new AtomicBoolean();

        @Override
        public MemorySegment.Scope scope() {
            return shared.scope();
        }

        @Override
        public MemorySegment allocate(long byteSize, long byteAlignment) {
            if (closed.get()) {
                throw new IllegalStateException("the tensor is closed");
            }
            return shared.allocate(byteSize, byteAlignment);
        }

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            if (refs.decrementAndGet() == 0) {
                try {
                    shared.close();
                } catch (RuntimeException | Error e) {
                    // A segment of the batch is in use on another thread: this tensor stays open.
                    refs.incrementAndGet();
                    closed.set(false);
                    throw e;
                }
            }
        }
    }
}
