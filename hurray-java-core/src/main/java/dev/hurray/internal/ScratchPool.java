package dev.hurray.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Scratch areas ({@link Native#SCRATCH_LAYOUT}) lent for one call sequence and given back, so
 * that their number follows the calls in progress, not the threads that ever made one.
 *
 * <p>Why: {@link Native#scratch()} is one area per thread in an automatic arena, freed only when
 * a garbage collection finds the thread's entry unreachable. With one virtual thread per
 * request, 100,000 requests that each read one tensor leave about 76 MiB of such areas behind
 * until the next collection (hurray-java-bench's {@code ScratchFootprint}). Areas lent here are
 * kept in {@link #KEEP} slots and reused; only calls beyond that many at once (which a
 * non-blocking call sequence on a machine with fewer cores never reaches) get an area of their
 * own, from an automatic arena.
 *
 * <p>Rule: {@code borrow()} and {@code giveBack(area)} bracket a sequence of downcalls that
 * cannot reach Java code, on one thread, in {@code try/finally}; the area is not used after it
 * was given back (another thread may hold it by then), and everything read out of it is copied
 * before. Nothing is allocated per borrow when a slot is free.
 */
public final class ScratchPool {
    /** Areas kept for reuse: enough for every carrier thread of the default scheduler, and a margin. */
    static final int KEEP = Math.max(16, 4 * Runtime.getRuntime().availableProcessors());

    private static final AtomicReferenceArray<MemorySegment> FREE = new AtomicReferenceArray<>(KEEP);
    /** The scope of kept areas (the global arena's), which tells them from areas of their own. */
    private static final MemorySegment.Scope KEPT_SCOPE = Arena.global().scope();
    /** Areas made for the slots so far (at most {@link #KEEP}: they live as long as the class). */
    private static final AtomicLong KEPT = new AtomicLong();
    /** Areas made beyond the slots because all of them were lent at once. */
    private static final AtomicLong EXTRA = new AtomicLong();

    private ScratchPool() {
    }

    /** Lends an area of {@link Native#SCRATCH_BYTES} bytes, 64-aligned; its contents are undefined. */
    public static MemorySegment borrow() {
        int start = (int) (Thread.currentThread().threadId() % KEEP);
        for (int i = 0; i < KEEP; i++) {
            int at = (start + i) % KEEP;
            MemorySegment s = FREE.getAndSet(at, null);
            if (s != null) {
                return s;
            }
        }
        // Every kept area is lent: make one that is kept (while there is room) or one of its own.
        if (KEPT.incrementAndGet() <= KEEP) {
            return Arena.global().allocate(Native.SCRATCH_LAYOUT);
        }
        KEPT.decrementAndGet();
        EXTRA.incrementAndGet();
        return Arena.ofAuto().allocate(Native.SCRATCH_LAYOUT);
    }

    /**
     * Gives back an area from {@link #borrow()}; the caller no longer touches it. Only kept
     * areas go back into the slots, and there are never more of them than slots, so one always
     * finds a free slot; an area of its own is dropped, and its arena frees it once unreachable.
     */
    public static void giveBack(MemorySegment area) {
        if (!area.scope().equals(KEPT_SCOPE)) {
            return;
        }
        int start = (int) (Thread.currentThread().threadId() % KEEP);
        for (int i = 0; ; i++) {
            if (FREE.compareAndSet((start + i) % KEEP, null, area)) {
                return;
            }
        }
    }

    /** Areas made so far: kept ones plus ones beyond the slots (for tests and measurements). */
    static long made() {
        return Math.min(KEPT.get(), KEEP) + EXTRA.get();
    }
}
