package dev.hurray.internal;

import dev.hurray.ffm.HurrayEventReleaseFn;
import dev.hurray.ffm.HurrayOwnerReleaseFn;
import dev.hurray.ffm.HurrayReleaseCallback;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The process-wide release upcalls: one stub per callback kind, made once in the global arena,
 * never one per buffer or tensor. Native code is given a stub plus a context that is a key
 * into {@link #ACTIONS} (a small integer carried as a pointer, never a real address), so an
 * unknown or repeated key is detected instead of dereferenced.
 *
 * <p><b>Upcalls never throw.</b> Each stub catches {@link Throwable}. A failure is handed to
 * {@link #recordFailure}: it is logged and counted ({@link #failureCount()}) and, when a Java
 * caller on this thread is waiting for it (between {@link #enter()} and {@link #exit()}, around
 * the downcall that may release), kept for that caller, which rethrows it after the downcall
 * ({@link #rethrowFailure()}). On a native thread, or during a downcall that did not expect a
 * release, it is only logged, so a later unrelated {@code close()} never rethrows it.
 *
 * <p><b>Threads.</b> A release runs on the thread that drops the last reference. When that is a
 * thread the JVM did not start, its first upcall attaches it to the JVM (a {@code Thread} object
 * is made; it stays attached until the thread exits): ~60–180 µs once per thread, measured by
 * hurray-java-bench's {@code ReleaseUpcallCost}; later upcalls on it, like upcalls on Java
 * threads, cost well under a microsecond.
 */
public final class Releases {

    /** Pending actions by key. */
    private static final ConcurrentHashMap<Long, Runnable> ACTIONS = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT = new AtomicLong(1);
    private static final AtomicLong FAILURES = new AtomicLong();
    private static final AtomicLong UNKNOWN = new AtomicLong();
    private static final ThreadLocal<Throwable> PENDING = new ThreadLocal<>();
    /** Per thread: how many Java downcalls that may run a release are in progress (see {@link #enter()}). */
    private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);

    /** {@code HurrayReleaseCallback(void *buffer, void *context)}: runs the action keyed by {@code context}. */
    public static final MemorySegment BUFFER_RELEASE =
            HurrayReleaseCallback.allocate((buffer, context) -> run(context.address(), "buffer release"), Arena.global());
    /** {@code HurrayOwnerReleaseFn(void *owner)}: runs the action keyed by {@code owner}. */
    public static final MemorySegment OWNER_RELEASE =
            HurrayOwnerReleaseFn.allocate(owner -> run(owner.address(), "owner release"), Arena.global());
    /** {@code HurrayEventReleaseFn(void *sync_handle, void *context)}: runs the action keyed by {@code context}. */
    public static final MemorySegment EVENT_RELEASE =
            HurrayEventReleaseFn.allocate((handle, context) -> run(context.address(), "event release"), Arena.global());

    private Releases() {
    }

    /** Registers {@code action} and returns its key (never 0), to pass to native code as the context pointer. */
    public static long register(Runnable action) {
        long key = NEXT.getAndIncrement();
        ACTIONS.put(key, action);
        return key;
    }

    /** Forgets {@code key} without running it (the native call that would have run it failed). */
    public static void forget(long key) {
        ACTIONS.remove(key);
    }

    /** True while {@code key}'s action has neither run nor been forgotten. */
    public static boolean isPending(long key) {
        return ACTIONS.containsKey(key);
    }

    /**
     * Runs and forgets the action for {@code key}, at most once however many threads race;
     * never throws (the body of every release upcall).
     */
    public static void run(long key, String kind) {
        try {
            Runnable r = ACTIONS.remove(key);
            if (r == null) {
                UNKNOWN.incrementAndGet();
                Log.core().warn("{} upcall for unknown or already released key {}", kind, key);
                return;
            }
            r.run();
        } catch (Throwable t) {
            recordFailure(kind, t);
        }
    }

    /** Marks the start of a Java downcall that may run release upcalls on this thread. */
    public static void enter() {
        DEPTH.get()[0]++;
    }

    /** Marks its end; then call {@link #rethrowFailure()}. */
    public static void exit() {
        DEPTH.get()[0]--;
    }

    /** Logs {@code t} and keeps it for this thread's waiting Java caller, if any. Never throws. */
    public static void recordFailure(String kind, Throwable t) {
        try {
            FAILURES.incrementAndGet();
            Throwable prev = PENDING.get();
            if (DEPTH.get()[0] <= 0) {
                // nobody on this thread waits for it (a native thread, an unexpected caller)
            } else if (prev == null) {
                PENDING.set(t);
            } else if (prev != t) {
                prev.addSuppressed(t);
            }
            Log.core().warn("{} action failed on thread {}", kind, Thread.currentThread().getName(), t);
        } catch (Throwable ignored) {
            // Logging itself failed (e.g. out of memory): nothing more can be done inside an upcall.
        }
    }

    /** The failure a release upcall recorded on this thread since the last call, or null; clears it. */
    public static Throwable takeFailure() {
        Throwable t = PENDING.get();
        if (t != null) {
            PENDING.remove();
        }
        return t;
    }

    /**
     * Rethrows a failure recorded on this thread by a release upcall that the just-returned
     * downcall triggered: unchecked throwables as they are, checked ones wrapped in an
     * {@link IllegalStateException}.
     */
    public static void rethrowFailure() {
        Throwable t = takeFailure();
        if (t == null) {
            return;
        }
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException("a release action failed", t);
    }

    /** Release actions that threw since the process started (all threads). */
    public static long failureCount() {
        return FAILURES.get();
    }

    /** Upcalls that named a key with no pending action (a second release attempt). */
    public static long unknownKeyCount() {
        return UNKNOWN.get();
    }

    /** The key as the pointer native code carries. */
    public static MemorySegment keyPointer(long key) {
        return MemorySegment.ofAddress(key);
    }
}
