package dev.hurray;

/**
 * Which threads may touch a {@link Tensor}'s buffers, and close it.
 *
 * <p>Each tensor owns one arena for its buffer segments. {@link #CONFINED} (the default) uses
 * a confined arena: only the thread that read or made the tensor can access its buffers or
 * close it; any other thread gets {@link WrongThreadException}, never a crash. Closing is cheap.
 * {@link #SHARED} uses a shared arena: any thread may access the buffers and close the tensor
 * (at most one closes it), at the price of a JVM-wide handshake when a shared arena closes
 * (microseconds or more), so use it only for tensors that cross threads (e.g. read on an I/O
 * thread, consumed by a worker pool). Small tensors from one {@link TensorDecoder} batch (up to
 * 64 tensors, 64 KiB each, 256 KiB in all) share one shared arena, closed with the batch's last
 * tensor on a daemon thread of the library, so they cost one handshake per batch and their
 * threads do not wait for it (see {@link TensorDecoder} for what that means for memory taken
 * from a closed tensor).
 */
public enum TensorScope {
    /** Buffers accessible by the owning thread only; cheap close. The default. */
    CONFINED,
    /** Buffers accessible by any thread; closing a shared arena costs a handshake. */
    SHARED
}
