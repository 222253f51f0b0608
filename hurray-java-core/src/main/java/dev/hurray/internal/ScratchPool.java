package dev.hurray.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Scratch areas lent for one call sequence and given back, so that their number follows the
 * calls in progress, not the threads that ever made one: the out-parameter areas
 * ({@link Native#SCRATCH_LAYOUT}, {@link #borrow()}), the areas a descriptor spec is laid out
 * in ({@link #BUILD}), and areas held by one object for its life ({@link #LEDGER_QUEUES},
 * {@link #FILE_READERS}).
 *
 * <p>Why: a per-thread area in an automatic arena is freed only when a garbage collection finds
 * the thread's entry unreachable. With one virtual thread per request, 100,000 requests that
 * each read one tensor leave tens of MiB of such areas behind until the next collection
 * (hurray-java-bench's {@code ScratchFootprint}). Areas lent here are kept in {@link #KEEP}
 * slots per pool and reused; only calls beyond that many at once (which a non-blocking call
 * sequence on a machine with fewer cores never reaches) get an area of their own, from an
 * automatic arena.
 *
 * <p>Rule: {@code borrow()} and {@code giveBack(area)} bracket a sequence of downcalls that
 * cannot reach Java code, on one thread, in {@code try/finally}; the area is not used after it
 * was given back (another thread may hold it by then), and everything read out of it is copied
 * before. Nothing is allocated per borrow when a slot is free.
 */
public final class ScratchPool {
    /** Areas kept for reuse per pool: enough for every carrier thread of the default scheduler, and a margin. */
    static final int KEEP = Math.max(16, 4 * Runtime.getRuntime().availableProcessors());
    /** The scope of kept areas (the global arena's), which tells them from areas of their own. */
    private static final MemorySegment.Scope KEPT_SCOPE = Arena.global().scope();

    /** The out-parameter areas: {@link Native#SCRATCH_BYTES} bytes laid out as {@link Native#SCRATCH_LAYOUT}. */
    private static final ScratchPool SCRATCH = new ScratchPool(Native.SCRATCH_BYTES);
    /** Bytes of a {@link #BUILD} area. */
    static final long BUILD_BYTES = 16 * 1024;
    /** Areas a {@code HurrayDescriptorSpec}, its arrays and bytes are laid out in ({@code NativeDescriptor}). */
    static final ScratchPool BUILD = new ScratchPool(BUILD_BYTES);
    /**
     * The batch-destroy queues of tensor ledgers ({@code TensorLedger}, 64 handles): unlike the
     * other pools, an area is held from a reader's creation to its close, so the slots are
     * shared by the readers open at once; a reader beyond them gets an area of its own, and one
     * never closed keeps its area.
     */
    static final ScratchPool LEDGER_QUEUES = new ScratchPool(8L * 64);
    /**
     * The areas of container readers over a path or a memory region ({@code NativeFileReader};
     * {@link Native#SCRATCH_BYTES} bytes laid out as {@link Native#SCRATCH_LAYOUT}): an area is
     * held from the reader's open to its close (or its leak cleanup), so its calls borrow
     * nothing. Only kept areas are lent ({@link #lendKept()}): a reader opened while all of
     * them are held borrows an out-parameter area per call instead, so that readers open at
     * once (each parked virtual thread may hold one) never multiply areas.
     */
    static final ScratchPool FILE_READERS = new ScratchPool(Native.SCRATCH_BYTES);

    private final long bytes;
    private final AtomicReferenceArray<MemorySegment> free = new AtomicReferenceArray<>(KEEP);
    /** Areas made for the slots so far (at most {@link #KEEP}: they live as long as the class). */
    private final AtomicLong kept = new AtomicLong();
    /** Areas made beyond the slots because all of them were lent at once. */
    private final AtomicLong extra = new AtomicLong();

    private ScratchPool(long bytes) {
        this.bytes = bytes;
    }

    /** Lends an area of {@link Native#SCRATCH_BYTES} bytes, 64-aligned; its contents are undefined. */
    public static MemorySegment borrow() {
        return SCRATCH.lend();
    }

    /** Gives back an area from {@link #borrow()}; see {@link #takeBack}. */
    public static void giveBack(MemorySegment area) {
        SCRATCH.takeBack(area);
    }

    /**
     * Calls {@code call} with a lent area as its one pointer out-parameter, checks its status
     * and returns the pointer it wrote. {@code call} must not reach Java code.
     */
    static MemorySegment outAddress(java.util.function.ToIntFunction<MemorySegment> call) throws dev.hurray.HurrayException {
        MemorySegment s = borrow();
        try {
            Native.check(call.applyAsInt(s));
            return s.get(java.lang.foreign.ValueLayout.ADDRESS, 0);
        } finally {
            giveBack(s);
        }
    }

    /** As {@link #outAddress}, for a {@code uint64_t}/{@code size_t} out-parameter. */
    static long outLong(java.util.function.ToIntFunction<MemorySegment> call) throws dev.hurray.HurrayException {
        MemorySegment s = borrow();
        try {
            Native.check(call.applyAsInt(s));
            return s.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0);
        } finally {
            giveBack(s);
        }
    }

    /**
     * Calls a {@code hurray_*_destroy(T **)} that cannot reach Java code on {@code handle},
     * through a slot in a lent area.
     */
    static void destroyThroughSlot(MemorySegment handle, java.util.function.ToIntFunction<MemorySegment> destroy) {
        MemorySegment s = borrow();
        try {
            s.set(java.lang.foreign.ValueLayout.ADDRESS, 0, handle);
            destroy.applyAsInt(s);
        } finally {
            giveBack(s);
        }
    }

    /** Lends an area of this pool's size, 64-aligned; its contents are undefined. */
    MemorySegment lend() {
        MemorySegment s = lendKept();
        if (s != null) {
            return s;
        }
        extra.incrementAndGet();
        return Arena.ofAuto().allocate(bytes, 64);
    }

    /**
     * As {@link #lend()}, but only a kept area (a free one, or a new one while fewer than
     * {@link #KEEP} were made): null when every kept area is lent.
     */
    MemorySegment lendKept() {
        int start = (int) (Thread.currentThread().threadId() % KEEP);
        for (int i = 0; i < KEEP; i++) {
            int at = (start + i) % KEEP;
            MemorySegment s = free.getAndSet(at, null);
            if (s != null) {
                return s;
            }
        }
        // Every kept area is lent: make one that is kept while there is room.
        if (kept.incrementAndGet() <= KEEP) {
            return Arena.global().allocate(bytes, 64);
        }
        kept.decrementAndGet();
        return null;
    }

    /**
     * Gives back an area from {@link #lend()} of this pool; the caller no longer touches it.
     * Only kept areas go back into the slots, and there are never more of them than slots, so
     * one always finds a free slot; an area of its own is dropped, and its arena frees it once
     * unreachable.
     */
    void takeBack(MemorySegment area) {
        if (!area.scope().equals(KEPT_SCOPE)) {
            return;
        }
        int start = (int) (Thread.currentThread().threadId() % KEEP);
        for (int i = 0; ; i++) {
            if (free.compareAndSet((start + i) % KEEP, null, area)) {
                return;
            }
        }
    }

    /** Out-parameter areas made so far: kept ones plus ones beyond the slots (for tests and measurements). */
    static long made() {
        return SCRATCH.count();
    }

    /** Areas of this pool made so far. */
    long count() {
        return Math.min(kept.get(), KEEP) + extra.get();
    }
}
