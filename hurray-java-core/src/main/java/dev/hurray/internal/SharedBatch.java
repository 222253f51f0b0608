package dev.hurray.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * <p>A shared arena cannot close while another thread is inside one of its segments (a downcall
 * that was passed one). A member's close then throws and leaves the tensor open, for its owner
 * to close again. The decoder's {@link #release()} has no owner to retry it: the batch then
 * waits in a process-wide queue, and every later {@link #release()} (of any decoder's batch) and
 * {@link #retryWaiting()} tries to close it again, so its memory is freed once that thread is out.
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

    /** Batches whose last close failed because another thread was inside a segment; closed again later. */
    private static final ConcurrentLinkedQueue<SharedBatch> WAITING = new ConcurrentLinkedQueue<>();

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

    /**
     * The decoder lets go of the batch (it is full, or the decoder closes). If that was the last
     * hold and the arena cannot close now (another thread is inside one of its segments), the
     * batch keeps one hold and waits for a later {@link #retryWaiting()}. Also retries the
     * batches already waiting.
     */
    public void release() {
        if (refs.decrementAndGet() == 0 && !tryClose()) {
            refs.incrementAndGet();
            WAITING.add(this);
            return;
        }
        retryWaiting();
    }

    /** Closes the shared arena; false, leaving it open, if another thread is inside a segment. */
    private boolean tryClose() {
        try {
            shared.close();
            return true;
        } catch (IllegalStateException e) {
            return false;
        }
    }

    /**
     * Tries once more to close every batch whose last close failed; those that still cannot
     * close keep waiting. Returns how many still wait.
     */
    public static int retryWaiting() {
        for (int n = WAITING.size(); n > 0; n--) {
            SharedBatch b = WAITING.poll();
            if (b == null) {
                break;
            }
            // Only the queue holds a waiting batch: its members are all closed and none joins.
            if (b.tryClose()) {
                b.refs.decrementAndGet();
            } else {
                WAITING.add(b);
            }
        }
        return WAITING.size();
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
