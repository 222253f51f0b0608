package dev.hurray.netty;

import dev.hurray.HurrayException;
import dev.hurray.Item;
import dev.hurray.ReaderOptions;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorDecoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.netty.util.ReferenceCountUtil;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Objects;

/**
 * Turns the {@code ByteBuf}s of one Hurray stream (docs/spec/stream.md) into
 * {@link TensorMessage}s, one per tensor (or per item, see {@link #forItems}), through a
 * {@link TensorDecoder}.
 *
 * <pre>{@code
 * pipeline.addLast(new TensorInboundHandler(ReaderOptions.defaults().withMaxTensorBytes(64 << 20)));
 * pipeline.addLast(new SimpleChannelInboundHandler<TensorMessage>() {
 *     protected void channelRead0(ChannelHandlerContext ctx, TensorMessage m) {
 *         float[] v = m.tensor().toFloatArray(); // released (the tensor closed) after this returns
 *     }
 * });
 * }</pre>
 *
 * <h2>Copies</h2>
 * Each {@code ByteBuf}'s memory ({@code nioBuffers()}, so a {@code CompositeByteBuf} is read
 * component by component) is copied once: small items into the decoder's read-ahead, and the
 * rest of a payload of 64 KiB or more straight into the tensor's own aligned allocation. There
 * is no cumulation buffer, so a large payload is not copied twice.
 *
 * <h2>Reference counting</h2>
 * Every {@code ByteBuf} that reaches this handler is released by it, at once. Every
 * {@code TensorMessage} it fires belongs to the next handler, which releases it (the last
 * release closes the tensor); one that reaches the pipeline's tail is released there.
 *
 * <h2>Events and errors</h2>
 * The stream metadata is fired as a {@link StreamMetadata} user event before the first tensor,
 * and the end-of-stream marker as {@link StreamEnd#INSTANCE}; the handler's decoder closes then
 * (its native memory is freed without waiting for the channel to close). A stream failure (damaged bytes,
 * a declared size over {@link ReaderOptions#maxTensorBytes()}, or the connection closing inside
 * an item or before the end marker, which is {@code Status.TRUNCATED}) is fired once as a {@link DecoderException} whose cause is the
 * {@link HurrayException}, the channel is closed, and every later {@code ByteBuf} is released
 * unread. Tensors completed before the failure are fired first.
 *
 * <h2>One stream per connection</h2>
 * A connection carries one stream. Bytes after its end marker are a stream failure
 * ({@code Status.CORRUPT}, "N bytes after the end-of-stream marker"), whether they arrive in the
 * marker's {@code ByteBuf} or a later one: the peer sent something this handler cannot read, and
 * dropping it would hide that. When they share the marker's {@code ByteBuf},
 * {@link StreamEnd} is not fired. A protocol that sends more on a connection after a stream
 * frames each stream itself and decodes it with a {@link TensorDecoder} ({@code reset()} per
 * stream).
 *
 * <h2>Threads and sharing</h2>
 * Not {@code @Sharable}: one handler per channel. Tensors follow the options'
 * {@link ReaderOptions#tensorScope()} (default: confined to the event loop).
 */
public class TensorInboundHandler extends ChannelInboundHandlerAdapter {
    /** The stream metadata (docs/spec/stream.md §Stream metadata), fired once as a user event. */
    public record StreamMetadata(Map<String, byte[]> entries) {
    }

    /** Fired as a user event when the end-of-stream marker was decoded. */
    public enum StreamEnd {
        INSTANCE
    }

    private final ReaderOptions options;
    private final boolean items;
    private TensorDecoder decoder;
    private boolean failed;
    private boolean metadataFired;
    private boolean endFired;
    /** Tensors of one {@link TensorDecoder#drainTo} call, fired in order (reused). */
    private final java.util.ArrayList<Tensor> batch = new java.util.ArrayList<>();

    /** A handler with default options. */
    public TensorInboundHandler() {
        this(ReaderOptions.defaults());
    }

    /** A handler yielding tensors (the flat view: a composite as its head, then each member). */
    public TensorInboundHandler(ReaderOptions options) {
        this(options, false);
    }

    private TensorInboundHandler(ReaderOptions options, boolean items) {
        this.options = Objects.requireNonNull(options, "options");
        this.items = items;
    }

    /** A handler yielding items: a tensor, or a whole composite ({@link TensorMessage#item()}). */
    public static TensorInboundHandler forItems(ReaderOptions options) {
        return new TensorInboundHandler(options, true);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
        decoder = items ? TensorDecoder.createForItems(options) : TensorDecoder.create(options);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        closeDecoder();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf buf)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            if (failed) {
                return;
            }
            if (decoder == null) {
                if (endFired && buf.isReadable()) {
                    // The decoder closed with the end marker: whatever follows is a stream failure.
                    throw new HurrayException(Status.CORRUPT, buf.readableBytes() + " bytes after the end-of-stream marker", null);
                }
                return;
            }
            int count = buf.nioBufferCount();
            if (count == 1) {
                decoder.feed(buf.internalNioBuffer(buf.readerIndex(), buf.readableBytes()));
            } else if (count > 1) {
                for (ByteBuffer b : buf.nioBuffers()) {
                    decoder.feed(b);
                }
            } else {
                // No NIO view (rare: a custom ByteBuf): one copy into a heap array.
                decoder.feed(ByteBuffer.wrap(ByteBufUtil.getBytes(buf)));
            }
            fireDecoded(ctx);
        } catch (HurrayException | RuntimeException e) {
            fail(ctx, e);
        } finally {
            ReferenceCountUtil.release(buf);
        }
    }

    /** Fires the metadata, every complete tensor or item, and the end event. */
    private void fireDecoded(ChannelHandlerContext ctx) throws HurrayException {
        if (!metadataFired) {
            Map<String, byte[]> m = decoder.metadata();
            if (m == null) {
                return;
            }
            metadataFired = true;
            ctx.fireUserEventTriggered(new StreamMetadata(m));
        }
        if (items) {
            for (Item it; decoder != null && (it = decoder.nextItem()) != null;) {
                ctx.fireChannelRead(new TensorMessage(it));
            }
        } else if (decoder != null) {
            // Every tensor the bytes completed, taken in one call; those taken before a
            // failure are still fired.
            try {
                decoder.drainTo(batch);
            } finally {
                fireBatch(ctx);
            }
        }
        if (decoder != null && decoder.isEndOfStream() && !endFired) {
            endFired = true;
            // Nothing more is decoded on this connection: the decoder closes now, not with the
            // channel (one never closed would otherwise leave it to the leak cleaner).
            closeDecoder();
            ctx.fireUserEventTriggered(StreamEnd.INSTANCE);
        }
    }

    private void fireBatch(ChannelHandlerContext ctx) {
        int i = 0;
        try {
            for (; i < batch.size(); i++) {
                ctx.fireChannelRead(new TensorMessage(batch.get(i)));
            }
        } finally {
            // Only if firing itself threw: the tensors not fired are still ours.
            for (i++; i < batch.size(); i++) {
                batch.get(i).close();
            }
            batch.clear();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (!failed && decoder != null) {
            try {
                decoder.endOfInput();
                fireDecoded(ctx);
            } catch (HurrayException | RuntimeException e) {
                fail(ctx, e);
            }
        }
        closeDecoder();
        super.channelInactive(ctx);
    }

    private void fail(ChannelHandlerContext ctx, Exception e) {
        failed = true;
        // Items the bytes completed before the failure still go down the pipeline.
        try {
            fireDecoded(ctx);
        } catch (HurrayException | RuntimeException again) {
            // The same sticky failure: reported below.
        }
        closeDecoder();
        ctx.fireExceptionCaught(e instanceof DecoderException d ? d : new DecoderException(e));
        ctx.close();
    }

    private void closeDecoder() {
        if (decoder != null) {
            decoder.close();
            decoder = null;
        }
    }
}
