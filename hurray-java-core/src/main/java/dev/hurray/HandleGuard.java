package dev.hurray;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Enforces "one handle, one thread at a time" (docs/spec/c-abi.md §Threads) for a {@link Reader}
 * or {@link Writer}: a call that finds the handle busy on another thread, a call from inside the
 * handle's own transport callback (docs/spec/stream.md §Transport rules, rule 4), and a close
 * while a call is in progress are refused with {@link IllegalStateException} instead of racing
 * on the native handle.
 */
final class HandleGuard {
    private static final int IDLE = 0;
    private static final int BUSY = 1;
    private static final int CLOSED = 2;

    private final String what;
    private final AtomicInteger state = new AtomicInteger(IDLE);
    private volatile Thread owner;

    HandleGuard(String what) {
        this.what = what;
    }

    /**
     * Starts a call.
     *
     * @throws IllegalStateException if closed or busy
     */
    void enter() {
        int s = state.compareAndExchange(IDLE, BUSY);
        if (s != IDLE) {
            throw refused(s);
        }
        owner = Thread.currentThread();
    }

    /** Ends a call started by {@link #enter()}. */
    void exit() {
        owner = null;
        state.set(IDLE);
    }

    /**
     * Moves to closed. Returns false if already closed.
     *
     * @throws IllegalStateException if a call is in progress
     */
    boolean close() {
        int s = state.compareAndExchange(IDLE, CLOSED);
        if (s == IDLE) {
            return true;
        }
        if (s == CLOSED) {
            return false;
        }
        throw refused(s);
    }

    boolean isClosed() {
        return state.get() == CLOSED;
    }

    private IllegalStateException refused(int s) {
        if (s == CLOSED) {
            return new IllegalStateException("the " + what + " is closed");
        }
        Thread t = owner;
        if (t == Thread.currentThread()) {
            return new IllegalStateException("the " + what + " was called from inside its own transport callback "
                    + "(a source or sink must never call back into the handle that invoked it)");
        }
        return new IllegalStateException("the " + what + " is in use by thread " + (t == null ? "?" : t.getName())
                + " (one handle, one thread at a time; to interrupt a blocked call, close the underlying source or sink)");
    }
}
