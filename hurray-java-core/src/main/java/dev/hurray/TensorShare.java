package dev.hurray;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A keep-alive on a {@link Tensor}'s memory, from {@link Tensor#share()}: while it is open the
 * tensor cannot be closed ({@link Tensor#close()} throws {@link IllegalStateException} and leaves
 * it open), so memory handed to another library is neither freed nor reused by a reader's
 * buffer pool for a later tensor while that library may still read it.
 *
 * <h2>The lifetime rule for zero-copy hand-off</h2>
 * Open the share before giving the memory away, and close it only after the other library has
 * let go of it; close the tensor last. With try-with-resources that is the natural order:
 * <pre>{@code
 * try (Tensor t = reader.next(); TensorShare s = t.share();
 *      OnnxTensor in = OnnxTensor.createTensor(env, s.asFloatBuffer(), t.descriptor().shape().dims())) {
 *     ... session.run(Map.of("x", in)) ...
 * }
 * }</pre>
 * Closing the share early cannot make the other library see another tensor's bytes by itself:
 * the memory stays the tensor's until the tensor too is closed.
 *
 * <h2>Threads</h2>
 * A share may be closed from any thread (once; racing closes count once). Its views follow the
 * tensor's {@link TensorScope} when touched from Java; native code reading the address is not
 * confined.
 */
public final class TensorShare implements AutoCloseable {
    private final Tensor tensor;
    private final AtomicBoolean closed = new AtomicBoolean();

    TensorShare(Tensor tensor) {
        tensor.pin();
        this.tensor = tensor;
    }

    /** The shared tensor. */
    public Tensor tensor() {
        return tensor;
    }

    /** True until {@link #close()}. */
    public boolean isOpen() {
        return !closed.get();
    }

    /** Buffer {@code index} of the tensor. @throws IllegalStateException if this share is closed */
    public MemorySegment buffer(int index) {
        requireOpen();
        return tensor.rawBuffers()[index];
    }

    /** As {@link Tensor#asByteBuffer()}. @throws IllegalStateException if this share is closed */
    public ByteBuffer asByteBuffer() {
        requireOpen();
        return TensorViews.bytes(tensor.descriptor(), tensor.rawBuffers()[0]);
    }

    /** As {@link Tensor#asFloatBuffer()}. @throws IllegalStateException if this share is closed */
    public FloatBuffer asFloatBuffer() {
        requireOpen();
        return TensorViews.elements(tensor.descriptor(), tensor.rawBuffers()[0], 4, ElementType.FLOAT32).asFloatBuffer();
    }

    /** As {@link Tensor#asDoubleBuffer()}. @throws IllegalStateException if this share is closed */
    public java.nio.DoubleBuffer asDoubleBuffer() {
        requireOpen();
        return TensorViews.elements(tensor.descriptor(), tensor.rawBuffers()[0], 8, ElementType.FLOAT64).asDoubleBuffer();
    }

    /** As {@link Tensor#asIntBuffer()}. @throws IllegalStateException if this share is closed */
    public java.nio.IntBuffer asIntBuffer() {
        requireOpen();
        return TensorViews.elements(tensor.descriptor(), tensor.rawBuffers()[0], 4, ElementType.INT32,
                ElementType.UINT32).asIntBuffer();
    }

    /** As {@link Tensor#asLongBuffer()}. @throws IllegalStateException if this share is closed */
    public java.nio.LongBuffer asLongBuffer() {
        requireOpen();
        return TensorViews.elements(tensor.descriptor(), tensor.rawBuffers()[0], 8, ElementType.INT64,
                ElementType.UINT64).asLongBuffer();
    }

    /** As {@link Tensor#asShortBuffer()}. @throws IllegalStateException if this share is closed */
    public java.nio.ShortBuffer asShortBuffer() {
        requireOpen();
        return TensorViews.elements(tensor.descriptor(), tensor.rawBuffers()[0], 2, ElementType.INT16,
                ElementType.UINT16, ElementType.FLOAT16, ElementType.BFLOAT16).asShortBuffer();
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException("the tensor share is closed");
        }
    }

    /** Ends the keep-alive (the tensor may be closed afterwards). Idempotent, any thread. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            tensor.unpin();
        }
    }

    @Override
    public String toString() {
        return "TensorShare of " + tensor + (isOpen() ? "" : " (closed)");
    }
}
