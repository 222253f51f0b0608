package dev.hurray;

import java.lang.foreign.MemorySegment;
import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * A tensor's buffers in buffer-table order (element {@code i} is buffer {@code i} of the
 * descriptor; docs/spec/c-abi.md §Buffers and buffer lists), as a read-only
 * {@code List<MemorySegment>}.
 *
 * <p>The segments are <em>borrowed</em> from the {@link Tensor}: they stay valid until the tensor
 * is closed and then throw {@link IllegalStateException} on access. Closing this view releases
 * nothing; it only makes the view itself refuse further use (so a consumer handed the list can
 * be cut off), and is idempotent. Each segment is exactly its buffer's byte size and is aligned
 * as its {@link BufferSpec} declares. Thread rules are the tensor's {@link TensorScope}.
 */
public final class BufferList extends AbstractList<MemorySegment> implements RandomAccess, AutoCloseable {
    private final Tensor tensor;
    private final MemorySegment[] segments;
    private volatile boolean closed;

    BufferList(Tensor tensor, MemorySegment[] segments) {
        this.tensor = tensor;
        this.segments = segments;
    }

    /**
     * Buffer {@code index}, borrowed from the tensor.
     *
     * @throws IllegalStateException if this view or the tensor is closed
     * @throws IndexOutOfBoundsException for a bad index
     */
    @Override
    public MemorySegment get(int index) {
        check();
        return segments[index];
    }

    /** Number of buffers (the descriptor's buffer count). */
    @Override
    public int size() {
        return segments.length;
    }

    /**
     * The buffer-table entry describing buffer {@code index}, as the producer declared it
     * (its {@link BufferSpec#syncMode()} is the declared mode; see {@link #syncMode(int)}).
     */
    public BufferSpec spec(int index) {
        return tensor.descriptor().buffers().get(index);
    }

    /**
     * How buffer {@code index}'s bytes are synchronised as handed to you: always
     * {@link SyncMode#PRODUCER_SYNCED}. A segment here is host memory that a reader (or your
     * own code) finished writing before you got it, and no event or consumer stream travels
     * with it; the mode the producer declared for its device writes stays readable through
     * {@code spec(index).syncMode()} (docs/spec/c-abi.md, "Buffer handoff and sync modes").
     *
     * @throws IndexOutOfBoundsException for a bad index
     */
    public SyncMode syncMode(int index) {
        java.util.Objects.checkIndex(index, segments.length);
        return SyncMode.PRODUCER_SYNCED;
    }

    /** Sum of the buffers' sizes in bytes. */
    public long totalBytes() {
        long sum = 0;
        for (MemorySegment s : segments) {
            sum += s.byteSize();
        }
        return sum;
    }

    /** The tensor the buffers belong to. */
    public Tensor tensor() {
        return tensor;
    }

    private void check() {
        if (closed) {
            throw new IllegalStateException("the buffer list view is closed");
        }
        if (!tensor.isOpen()) {
            throw new IllegalStateException("the tensor is closed");
        }
    }

    /** Ends this view (releases nothing: the tensor owns the buffers). Idempotent. */
    @Override
    public void close() {
        closed = true;
    }
}
