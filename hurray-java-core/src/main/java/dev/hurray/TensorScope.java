package dev.hurray;

/**
 * Which threads may touch a {@link Tensor}'s buffers, and close it.
 *
 * <p>Each tensor owns one arena for its buffer segments. {@link #CONFINED} (the default) uses
 * a confined arena: only the thread that read or made the tensor can access its buffers or
 * close it; any other thread gets {@link WrongThreadException}, never a crash. Closing is cheap.
 * {@link #SHARED} uses a shared arena: any thread may access the buffers and close the tensor
 * (at most one closes it), at the price of a JVM-wide handshake on every close (microseconds or
 * more), so use it only for tensors that cross threads (e.g. read on an I/O thread, consumed
 * by a worker pool).
 */
public enum TensorScope {
    /** Buffers accessible by the owning thread only; cheap close. The default. */
    CONFINED,
    /** Buffers accessible by any thread; each close costs a shared-arena handshake. */
    SHARED
}
