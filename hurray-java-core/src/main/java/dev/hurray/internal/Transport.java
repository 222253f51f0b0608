package dev.hurray.internal;

import dev.hurray.ffm.HurrayTransportReleaseFn;
import java.io.Closeable;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The Java side of a native transport vtable (docs/spec/c-abi.md §Transports): the object the
 * upcall stubs of one reader or writer call into.
 *
 * <p><b>Upcalls never throw.</b> Every upcall catches {@link Throwable}, records it here, stores
 * 0 in the native out-count, and returns {@code HURRAY_ERR_TRANSPORT} having moved no bytes
 * (docs/spec/stream.md §Transport rules, rule 3). The Java caller of the downcall that triggered
 * the upcall then takes the recorded exception with {@link #takeFailure()} and throws it as the
 * cause of a {@link dev.hurray.HurrayException}. Recording and taking happen on the same thread
 * (upcalls run on the thread that made the downcall), and a handle is used by one thread at a time.
 *
 * <p><b>Upcall stubs.</b> The stubs ({@code read}, {@code write}, {@code release}) are made once
 * per process, in the global arena, and shared by every reader and writer: making a stub
 * generates code (~100 µs) and a fresh stub runs interpreted until the JIT catches up, so a stub
 * per handle made short-lived handles slow. The native {@code ctx} of a transport is its slot
 * number in a process-wide table ({@link #register()}); a stub looks the transport up by it.
 * A slot is freed ({@link #unregister()}) only after the native handle was destroyed (or never
 * made), so no native call can reach a freed or reused slot.
 */
public abstract class Transport {
    /** The shared release stub ({@code HurrayTransportReleaseFn}). */
    static final MemorySegment RELEASE_STUB =
            HurrayTransportReleaseFn.allocate(Transport::dispatchRelease, Arena.global());

    private static final Object TABLE_LOCK = new Object();
    /** Registered transports by slot; replaced (never mutated in place) when it grows. */
    private static volatile Transport[] table = new Transport[64];
    /** Guarded by TABLE_LOCK: the lowest slot that may be free. */
    private static int searchFrom;
    /** Guarded by TABLE_LOCK: how many times a transport was registered, for tests. */
    private static long registrations;

    private final Closeable onClose;
    private Throwable failure;
    /** The first failure that makes the source or sink unusable (never cleared). */
    private Throwable dead;
    private Throwable closeFailure;
    private boolean released;
    /** The native ctx: slot + 1 while registered (never 0, which is NULL), else 0. */
    private long ctx;

    /** @param onClose what the native release callback runs (closes the source or sink), or null */
    protected Transport(Closeable onClose) {
        this.onClose = onClose;
    }

    /**
     * Enters this transport in the process-wide table and returns the {@code ctx} value to put
     * in the native transport struct. Call once, before the native handle is made.
     */
    final MemorySegment register() {
        synchronized (TABLE_LOCK) {
            Transport[] t = table;
            int i = searchFrom;
            while (i < t.length && t[i] != null) {
                i++;
            }
            if (i == t.length) {
                t = Arrays.copyOf(t, t.length * 2);
            } else {
                t = t.clone();
            }
            t[i] = this;
            table = t;
            searchFrom = i + 1;
            registrations++;
            ctx = i + 1L;
            return MemorySegment.ofAddress(ctx);
        }
    }

    /**
     * Frees this transport's slot. Call only once the native handle that holds the
     * {@code ctx} is destroyed, or was never made. Idempotent.
     */
    final void unregister() {
        synchronized (TABLE_LOCK) {
            if (ctx == 0) {
                return;
            }
            int i = (int) (ctx - 1);
            Transport[] t = table.clone();
            t[i] = null;
            table = t;
            searchFrom = Math.min(searchFrom, i);
            ctx = 0;
        }
    }

    /**
     * How many times a transport was entered in the table since the process started: one per
     * native handle made over a Java transport. Lets tests check that a path does not take
     * the upcall route.
     */
    public static long registrations() {
        synchronized (TABLE_LOCK) {
            return registrations;
        }
    }

    /** The transport registered under {@code ctx}, or null. Never throws. */
    static Transport lookup(MemorySegment ctx) {
        long c = ctx.address();
        Transport[] t = table;
        return c > 0 && c <= t.length ? t[(int) (c - 1)] : null;
    }

    private static void dispatchRelease(MemorySegment ctx) {
        try {
            Transport t = lookup(ctx);
            if (t != null) {
                t.upcallRelease(ctx);
            }
        } catch (Throwable ignored) {
            // upcallRelease records its own failures; nothing may escape into native code
        }
    }

    /** Records the first failure of the current downcall; a fatal one is kept for {@link #deadFailure()}. */
    final void record(Throwable t) {
        if (failure == null) {
            failure = t;
        }
        if (dead == null && !dev.hurray.HurrayException.isRetryableCause(t)) {
            dead = t;
        }
    }

    /**
     * The fatal failure of an earlier upcall (see {@link dev.hurray.HurrayException#isRetryableCause}),
     * recorded again for the current downcall; null if the source or sink is still usable.
     * Upcalls call it first and fail at once when it is not null, so a dead connection keeps
     * reporting its reset instead of, say, a later end of input (TRUNCATED) on a channel.
     */
    final Throwable deadFailure() {
        if (dead != null) {
            record(dead);
        }
        return dead;
    }

    /** Clears any stale failure before a downcall. */
    final void clearFailure() {
        failure = null;
    }

    /** The failure recorded during the last downcall, cleared; null if none. */
    public final Throwable takeFailure() {
        Throwable t = failure;
        failure = null;
        return t;
    }

    /** The exception the release callback caught while closing the source or sink, or null. */
    public final Throwable closeFailure() {
        return closeFailure;
    }

    /** The release upcall ({@code HurrayTransportReleaseFn}): closes the source or sink once. */
    final void upcallRelease(MemorySegment ctx) {
        try {
            if (!released) {
                released = true;
                if (onClose != null) {
                    onClose.close();
                }
            }
        } catch (Throwable t) {
            closeFailure = t;
        }
    }
}
