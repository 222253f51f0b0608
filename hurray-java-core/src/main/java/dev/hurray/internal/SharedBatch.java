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
 * <p><b>Where the close runs.</b> The handshake waits for every Java thread to reach a safepoint
 * poll, which takes from tens of microseconds to a scheduler time slice on a busy machine, so
 * the thread that lets go of the batch last (a decoder's {@link #release()}, a member's close)
 * does not run it: it hands the batch to one daemon thread of the library
 * ({@value #CLOSER_NAME}), which closes batches in the order given, and returns at once. While
 * {@link #MAX_QUEUED} batches already wait for that thread (or the thread cannot start), the
 * caller closes the batch itself, so the memory waiting to be freed stays bounded.
 *
 * <p>A shared arena cannot close while another thread is inside one of its segments (a downcall
 * that was passed one). The batch then waits in a process-wide queue and is tried again (by
 * the closing thread every {@value #RETRY_MILLIS} ms, by every later {@link #release()} and by
 * {@link #retryWaiting()}), so its memory is freed once that thread is out; the member closes
 * that handed it over have returned normally.
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

    /** Batches at most waiting for the closing thread before callers close their own. */
    public static final int MAX_QUEUED = 64;
    /** Name of the daemon thread that closes batches. */
    public static final String CLOSER_NAME = "hurray-shared-arena-closer";
    /** How often the closing thread retries batches that were in use, while any wait. */
    static final long RETRY_MILLIS = 10;

    /** Batches whose last close failed because another thread was inside a segment; closed again later. */
    private static final ConcurrentLinkedQueue<SharedBatch> WAITING = new ConcurrentLinkedQueue<>();
    /** Batches handed to the closing thread, with nothing holding them any more. */
    private static final java.util.concurrent.LinkedBlockingQueue<SharedBatch> TO_CLOSE =
            new java.util.concurrent.LinkedBlockingQueue<>();
    /** Batches handed over and not yet closed or filed as waiting (for {@link #awaitClosing}). */
    private static final AtomicInteger HANDED = new AtomicInteger();
    /** The closing thread, once started; {@code Boolean.FALSE} when it could not start. */
    private static volatile Object closer;

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
     * hold, the batch is closed (see the class comment for which thread closes it). Also retries
     * the batches waiting because they were in use.
     */
    public void release() {
        if (refs.decrementAndGet() == 0) {
            closeUnheld();
        }
        retryWaiting();
    }

    /** Closes a batch nothing holds any more: on the closing thread, or here while it is busy. */
    private void closeUnheld() {
        if (handOver()) {
            return;
        }
        closeOrWait();
    }

    /** Closes the arena now, or files the batch as waiting (with one hold) if it is in use. */
    private void closeOrWait() {
        if (!tryClose()) {
            refs.incrementAndGet();
            WAITING.add(this);
        }
    }

    /** Gives the batch to the closing thread; false when too many wait or the thread is missing. */
    private boolean handOver() {
        if (TO_CLOSE.size() >= MAX_QUEUED || !closerRunning()) {
            return false;
        }
        HANDED.incrementAndGet();
        TO_CLOSE.add(this);
        return true;
    }

    private static boolean closerRunning() {
        Object c = closer;
        if (c == null) {
            synchronized (SharedBatch.class) {
                c = closer;
                if (c == null) {
                    try {
                        Thread t = new Thread(SharedBatch::closeLoop, CLOSER_NAME);
                        t.setDaemon(true);
                        t.start();
                        c = t;
                    } catch (RuntimeException | Error e) {
                        // No thread (a resource limit): callers close their own batches.
                        c = Boolean.FALSE;
                    }
                    closer = c;
                }
            }
        }
        return c instanceof Thread;
    }

    /** The closing thread: closes batches as they come, and retries waiting ones while any wait. */
    private static void closeLoop() {
        while (true) {
            SharedBatch b;
            try {
                b = WAITING.isEmpty() ? TO_CLOSE.take()
                        : TO_CLOSE.poll(RETRY_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                // Nothing interrupts this thread on purpose; it keeps serving.
                continue;
            }
            if (b != null) {
                try {
                    b.closeOrWait();
                } catch (RuntimeException | Error e) {
                    // A release action failed: the batch's memory is as lost as on a caller's close.
                } finally {
                    HANDED.decrementAndGet();
                }
            }
            retryWaiting();
        }
    }

    /**
     * Waits until every batch handed to the closing thread is closed or filed as waiting (tests,
     * and code that measures memory). Returns false if that took longer than {@code millis}.
     */
    public static boolean awaitClosing(long millis) throws InterruptedException {
        long end = System.nanoTime() + millis * 1_000_000L;
        while (HANDED.get() > 0) {
            if (System.nanoTime() > end) {
                return false;
            }
            Thread.sleep(1);
        }
        return true;
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
                closeUnheld();
            }
        }
    }
}
