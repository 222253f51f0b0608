package dev.hurray.internal;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The safety net for native resources nobody closed: a reader, writer, file or tensor that
 * becomes unreachable while still open has its native memory freed by a {@link Cleaner}
 * (thread {@code hurray-cleaner}), and one SLF4J WARN says so (the first 10 leaks, then every
 * 1,000th). With {@code -Dhurray.leaks.track=true} each resource records where it was
 * created and the warning shows that stack trace.
 *
 * <p>Closing is still the rule: the cleaner runs only after a garbage collection finds the
 * object, which may be long after the memory was needed. What a cleaner frees must not be
 * reachable from Java any more, so a tensor's action is tied to the scope of its buffer
 * segments: while any segment obtained from it is reachable, nothing is freed.
 */
public final class Leaks {
    private static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "hurray-cleaner");
        t.setDaemon(true);
        return t;
    });
    private static final boolean TRACK = Boolean.getBoolean("hurray.leaks.track");
    private static final AtomicLong LEAKED = new AtomicLong();

    private Leaks() {
    }

    /** A registered resource: {@link #close()} releases it now; the cleaner releases it if leaked. */
    public static final class Resource implements Runnable {
        private final String what;
        private final Runnable release;
        private final Throwable origin;
        private volatile boolean explicit;
        /** Set by whichever comes first: the release action's one run, or {@link #disarm()}. */
        private final java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        private Cleaner.Cleanable cleanable;

        private Resource(String what, Runnable release) {
            this.what = what;
            this.release = release;
            this.origin = TRACK ? new Throwable("created here") : null;
        }

        /** Runs the release action now, on this thread, exactly once (later calls do nothing). */
        public void close() {
            explicit = true;
            cleanable.clean();
        }

        /**
         * Unregisters without running the release action (the caller releases it itself).
         *
         * @return true if the release action has not run and now never will; false if the
         *     cleaner ran it first (the owner was unreachable), so the resource is gone or going
         */
        public boolean disarm() {
            boolean won = done.compareAndSet(false, true);
            cleanable.clean();
            return won;
        }

        @Override
        public void run() {
            if (!done.compareAndSet(false, true)) {
                return;
            }
            if (!explicit) {
                report(what, origin);
            }
            try {
                release.run();
            } catch (Throwable t) {
                if (!explicit) {
                    Log.leaks().warn("releasing a leaked {} failed", what, t);
                } else {
                    throw t;
                }
            }
        }
    }

    /**
     * Registers {@code release} to run once: on {@link Resource#close()}, or from the cleaner
     * thread once {@code owner} is phantom-reachable. {@code release} must not refer to
     * {@code owner}.
     */
    public static Resource track(Object owner, String what, Runnable release) {
        Resource r = new Resource(what, release);
        r.cleanable = CLEANER.register(owner, r);
        return r;
    }

    /**
     * Runs {@code action} once, from the cleaner thread, when {@code owner} is phantom-reachable
     * (or when the returned handle is cleaned). {@code action} must not refer to {@code owner};
     * it reports what it finds leaked with {@link #reportLeaked}.
     */
    public static Cleaner.Cleanable watch(Object owner, Runnable action) {
        return CLEANER.register(owner, action);
    }

    /** Counts and logs {@code count} unclosed resources of kind {@code what} that a watcher freed. */
    public static void reportLeaked(String what, long count) {
        for (long i = 0; i < count; i++) {
            report(what, null);
        }
    }

    /** Number of resources released by the cleaner because nobody closed them. */
    public static long leaked() {
        return LEAKED.get();
    }

    private static void report(String what, Throwable origin) {
        long n = LEAKED.incrementAndGet();
        if (n <= 10 || n % 1000 == 0) {
            String hint = origin == null ? " (run with -Dhurray.leaks.track=true to see where it was created)" : "";
            Log.leaks().warn("a {} was never closed; its native memory was freed by the garbage collector's cleaner "
                    + "({} such leaks so far){}. Close every Reader, Writer, HurrayFile and Tensor (try-with-resources).",
                    what, n, hint, origin);
        }
    }
}
