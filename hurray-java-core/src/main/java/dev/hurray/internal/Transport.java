package dev.hurray.internal;

import java.io.Closeable;
import java.lang.foreign.MemorySegment;

/**
 * The Java side of a native transport vtable (seed 000 "Streaming from C"): the object the
 * upcall stubs of one reader or writer call into.
 *
 * <p><b>Upcalls never throw.</b> Every upcall catches {@link Throwable}, records it here, stores
 * 0 in the native out-count, and returns {@code HURRAY_ERR_TRANSPORT} having moved no bytes
 * (seed 000 rule 3). The Java caller of the downcall that triggered the upcall then takes the
 * recorded exception with {@link #takeFailure()} and throws it as the cause of a
 * {@link dev.hurray.HurrayException}. Recording and taking happen on the same thread (upcalls
 * run on the thread that made the downcall), and a handle is used by one thread at a time.
 */
public abstract class Transport {
    private final Closeable onClose;
    private Throwable failure;
    private Throwable closeFailure;
    private boolean released;

    /** @param onClose what the native release callback runs (closes the source or sink), or null */
    protected Transport(Closeable onClose) {
        this.onClose = onClose;
    }

    /** Records the first failure of the current downcall. */
    final void record(Throwable t) {
        if (failure == null) {
            failure = t;
        }
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
