package dev.hurray;

import java.util.Optional;

/**
 * One item of a stream's assembled view ({@link Reader#nextItem()}): a tensor outside any
 * composite, or a whole {@link Composite} with its members. Owned by the caller; closing it
 * closes what it holds.
 */
public final class Item implements AutoCloseable {
    private final Tensor tensor;
    private final Composite composite;

    Item(Tensor tensor, Composite composite) {
        this.tensor = tensor;
        this.composite = composite;
    }

    /** True for a composite. */
    public boolean isComposite() {
        return composite != null;
    }

    /** The tensor, unless this is a composite. */
    public Optional<Tensor> tensor() {
        return Optional.ofNullable(tensor);
    }

    /** The composite, if this is one. */
    public Optional<Composite> composite() {
        return Optional.ofNullable(composite);
    }

    /** The tensor's or the composite's {@code toString}. */
    @Override
    public String toString() {
        return tensor != null ? tensor.toString() : composite.toString();
    }

    /** Closes the tensor or the composite. Idempotent. */
    @Override
    public void close() {
        if (tensor != null) {
            tensor.close();
        } else {
            composite.close();
        }
    }
}
