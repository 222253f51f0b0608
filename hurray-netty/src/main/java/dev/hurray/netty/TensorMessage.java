package dev.hurray.netty;

import dev.hurray.Item;
import dev.hurray.Tensor;
import io.netty.util.AbstractReferenceCounted;
import io.netty.util.ReferenceCounted;
import java.util.Objects;

/**
 * A decoded {@link Tensor} (or, from a decoder made for items, an {@link Item}) travelling
 * down a Netty pipeline as a reference-counted message, so that Netty's own rules release it:
 * the handler that consumes it calls {@link #release()} (or extends
 * {@code SimpleChannelInboundHandler<TensorMessage>}, which does), and a message that reaches
 * the pipeline's tail is released there. The last release closes the tensor or item, exactly
 * once. {@link #retain()} keeps it past a handler, as for a {@code ByteBuf}.
 *
 * <p>Tensors made by {@link TensorInboundHandler} are confined to the channel's event loop
 * unless the handler was given {@code TensorScope.SHARED} options: release them there, or ask
 * for shared tensors to hand them to other threads.
 */
public final class TensorMessage extends AbstractReferenceCounted {
    private final Tensor tensor;
    private final Item item;

    /** Wraps a tensor; the message now owns it. */
    public TensorMessage(Tensor tensor) {
        this.tensor = Objects.requireNonNull(tensor, "tensor");
        this.item = null;
    }

    /** Wraps an item (a tensor or a whole composite); the message now owns it. */
    public TensorMessage(Item item) {
        this.item = Objects.requireNonNull(item, "item");
        this.tensor = null;
    }

    /**
     * The tensor, valid until the last release.
     *
     * @throws IllegalStateException for an item message holding a composite
     */
    public Tensor tensor() {
        if (tensor != null) {
            return tensor;
        }
        return item.tensor().orElseThrow(() -> new IllegalStateException("this message holds a composite: use item()"));
    }

    /** The item, or, for a tensor message, null. */
    public Item item() {
        return item;
    }

    @Override
    protected void deallocate() {
        if (tensor != null) {
            tensor.close();
        } else {
            item.close();
        }
    }

    @Override
    public TensorMessage retain() {
        super.retain();
        return this;
    }

    @Override
    public TensorMessage touch(Object hint) {
        return this;
    }

    @Override
    public String toString() {
        return "TensorMessage(" + (tensor != null ? tensor : "item") + ", refCnt: " + refCnt() + ")";
    }

    /** Releases {@code msg} if it is reference-counted; for a bare tensor, closes it. */
    static void dispose(Object msg) {
        if (msg instanceof Tensor t) {
            t.close();
        } else if (msg instanceof ReferenceCounted rc && rc.refCnt() > 0) {
            rc.release();
        }
    }
}
