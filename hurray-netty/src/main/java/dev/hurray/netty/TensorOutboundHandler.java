package dev.hurray.netty;

import dev.hurray.Composite;
import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorEncoder;
import dev.hurray.WriterOptions;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Writes {@link Tensor}s, {@link TensorMessage}s and {@link Composite.Builder}s as one Hurray
 * stream (docs/spec/stream.md), through a {@link TensorEncoder}; any other message (a
 * {@code ByteBuf}) passes through in order.
 *
 * <pre>{@code
 * pipeline.addLast(new TensorOutboundHandler());
 * channel.write(tensor);              // the handler now owns the tensor and closes it
 * channel.writeAndFlush(TensorOutboundHandler.END_OF_STREAM);
 * }</pre>
 *
 * <h2>Copies and coalescing</h2>
 * A payload above the copy limit (16 KiB by default) is not copied: it goes out as an
 * {@code Unpooled.wrappedBuffer} over the tensor's own memory, and the tensor is closed once
 * Netty has written that buffer (or failed to: a closed channel fails the write and the tensor
 * is closed then). Headers, descriptors and smaller payloads are copied once, into a direct
 * {@code ByteBuf} from the channel's allocator; small tensors are closed at once and gathered
 * until {@code flush()} or until the batch size (64 KiB by default) is staged, so a stream of
 * small tensors leaves in few large buffers. A write's promise completes when the buffer
 * holding its bytes was written.
 *
 * <h2>Ownership</h2>
 * Writing a {@code Tensor} or a {@code TensorMessage} hands it to this handler, which closes
 * (releases) it exactly once, also when the write fails. A {@code Composite.Builder}'s
 * tensors are copied when it is written and stay the caller's: close them when the write's
 * future completes. A tensor written from a thread other than the channel's event loop must be
 * able to close there: {@code TensorScope.SHARED}, or memory of its own arena
 * ({@code Tensor.wrap}); a tensor confined to another thread is refused (the promise fails with
 * {@link IllegalArgumentException} and the tensor stays the caller's).
 *
 * <h2>Back-pressure</h2>
 * At most one batch is held here; everything else sits in Netty's outbound buffer, so
 * {@code Channel.isWritable()} and {@code channelWritabilityChanged} work as for
 * {@code ByteBuf}s: a producer writes while the channel is writable.
 *
 * <h2>End of stream</h2>
 * Writing {@link #END_OF_STREAM} stages the end-of-stream marker; closing the channel stages
 * and flushes it first if it was not written, so the peer sees a clean end. Once the marker is
 * handed to Netty the handler frees its native encoder (also on a channel that is never closed,
 * or whose event loop group shuts down without tearing its pipeline down): a tensor written
 * after it is closed and its write fails with {@code Status.INVALID_STATE}, and another
 * {@code END_OF_STREAM} succeeds with nothing to send. Not {@code @Sharable}: one handler per
 * channel.
 */
public class TensorOutboundHandler extends ChannelOutboundHandlerAdapter {
    /** A message that ends the stream with its end-of-stream marker. */
    public static final Object END_OF_STREAM = EndOfStream.INSTANCE;

    private enum EndOfStream {
        INSTANCE
    }

    /** Default bytes of small tensors gathered before they are handed to Netty. */
    public static final int DEFAULT_BATCH_BYTES = 64 * 1024;

    private final WriterOptions options;
    private final int batchBytes;
    private final long copyBytes;
    private TensorEncoder encoder;
    /** Promises of items staged and not yet handed to Netty. */
    private final List<ChannelPromise> waiting = new ArrayList<>();
    /**
     * About how many bytes were encoded since the last hand-over (payloads plus a frame's worth
     * each): counted here so that deciding when a batch is due stages nothing, which lets the
     * encoder stage a whole batch of small tensors with one native call.
     */
    private long gathered;
    /** What a frame, descriptor and payload padding add to a small tensor, about (batching only). */
    private static final long ITEM_OVERHEAD = 64;
    private boolean finished;
    /** Set once the handler left the pipeline. */
    private boolean removed;

    /** A handler with default options, batch size and copy limit. */
    public TensorOutboundHandler() {
        this(WriterOptions.defaults(), DEFAULT_BATCH_BYTES, TensorEncoder.DEFAULT_COPY_BYTES);
    }

    /**
     * @param options {@link WriterOptions#payloadChecksums()} is used; its batch size is not
     *     (use {@code batchBytes})
     * @param batchBytes bytes of small tensors gathered before they go to Netty without a
     *     flush (0: each tensor goes at once, still unflushed)
     * @param copyBytes payloads up to this size are copied, larger ones wrapped (0..64 KiB)
     */
    public TensorOutboundHandler(WriterOptions options, int batchBytes, long copyBytes) {
        this.options = Objects.requireNonNull(options, "options");
        if (batchBytes < 0) {
            throw new IllegalArgumentException("batchBytes " + batchBytes);
        }
        if (copyBytes < 0 || copyBytes > TensorEncoder.MAX_COPY_BYTES) {
            throw new IllegalArgumentException("copyBytes " + copyBytes + " is outside 0.." + TensorEncoder.MAX_COPY_BYTES);
        }
        this.batchBytes = batchBytes;
        this.copyBytes = copyBytes;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
        encoder = TensorEncoder.create(options, copyBytes);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        removed = true;
        failWaiting(new ClosedChannelException());
        closeEncoder();
    }

    /**
     * Frees the native encoder. Called once the end-of-stream marker was handed to Netty (every
     * staged byte is then in a {@code ByteBuf}), so that a finished stream holds no native memory
     * even on a channel that is never closed or never torn down (an event loop group shut down
     * with its channels open calls no handler), and when the handler is removed.
     */
    private void closeEncoder() {
        if (encoder != null) {
            encoder.close();
            encoder = null;
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof Tensor || msg instanceof TensorMessage || msg instanceof Composite.Builder
                || msg == END_OF_STREAM)) {
            try {
                emit(ctx, null);
            } catch (HurrayException | RuntimeException e) {
                ctx.fireExceptionCaught(e);
            }
            ctx.write(msg, promise);
            return;
        }
        if (msg instanceof TensorMessage m && m.item() != null && m.item().isComposite()) {
            m.release();
            promise.setFailure(new UnsupportedOperationException("a decoded composite cannot be relayed as a message; "
                    + "write a Composite.Builder"));
            return;
        }
        Tensor tensor = msg instanceof TensorMessage m ? m.tensor() : msg instanceof Tensor t ? t : null;
        if (tensor != null && !closableHere(tensor)) {
            promise.setFailure(new IllegalArgumentException("a tensor confined to another thread cannot be written "
                    + "through Netty (the handler closes it on the event loop): make it with TensorScope.SHARED"));
            return;
        }
        if (encoder == null) {
            if (msg == END_OF_STREAM && finished && !removed) {
                // The stream already ended (its encoder is closed): a second end is a no-op.
                promise.trySuccess();
                return;
            }
            TensorMessage.dispose(msg);
            promise.setFailure(finished && !removed
                    ? new HurrayException(Status.INVALID_STATE, "the stream was ended (END_OF_STREAM): nothing more can be "
                            + "written on it", null)
                    : new ClosedChannelException());
            return;
        }
        Object owner = null;
        try {
            if (tensor != null) {
                long bytes = tensor.descriptor().totalBufferBytes();
                encoder.encode(tensor);
                if (encoder.borrowsPayloads()) {
                    owner = msg;
                } else {
                    gathered += bytes + ITEM_OVERHEAD;
                    TensorMessage.dispose(msg);
                }
            } else if (msg instanceof Composite.Builder c) {
                encoder.encode(c);
                gathered = encoder.pendingBytes();
            } else {
                encoder.finish();
                finished = true;
            }
        } catch (HurrayException | RuntimeException e) {
            if (msg != END_OF_STREAM && !(msg instanceof Composite.Builder)) {
                TensorMessage.dispose(msg);
            }
            promise.setFailure(e);
            return;
        }
        waiting.add(promise);
        try {
            if (owner != null || msg == END_OF_STREAM || gathered >= batchBytes) {
                emit(ctx, owner);
            }
            if (msg == END_OF_STREAM) {
                closeEncoder();
            }
        } catch (HurrayException | RuntimeException e) {
            // Nothing left the encoder: the stream cannot go on.
            failWaiting(e);
            TensorMessage.dispose(owner);
            ctx.fireExceptionCaught(e);
            ctx.close();
        }
    }

    /** True if the event loop may close {@code t} (its buffers are not confined to another thread). */
    private static boolean closableHere(Tensor t) {
        int n = t.buffers().size();
        for (int i = 0; i < n; i++) {
            MemorySegment b = t.buffer(i);
            if (!b.isAccessibleBy(Thread.currentThread())) {
                return false;
            }
        }
        return true;
    }

    /**
     * Hands everything staged to Netty: staged bytes copied into direct buffers, borrowed
     * payloads wrapped. The waiting promises complete, and {@code owner} (the tensor whose
     * payload was borrowed) is released, when the last of those buffers was written. The
     * encoder is drained before the first {@code ctx.write}, since a write can re-enter this
     * handler (a writability change makes a producer write again).
     */
    private void emit(ChannelHandlerContext ctx, Object owner) throws HurrayException {
        if (encoder == null || (encoder.pendingBytes() == 0 && waiting.isEmpty())) {
            return;
        }
        List<ByteBuf> bufs = new ArrayList<>(4);
        try {
            while (encoder.pendingBytes() > 0) {
                List<TensorEncoder.Piece> pieces = encoder.output();
                long sent = 0;
                ByteBuf staged = null;
                for (TensorEncoder.Piece p : pieces) {
                    sent += p.bytes().remaining();
                    if (p.borrowed()) {
                        if (staged != null) {
                            bufs.add(staged);
                            staged = null;
                        }
                        bufs.add(Unpooled.wrappedBuffer(p.bytes()));
                    } else {
                        if (staged == null) {
                            staged = ctx.alloc().directBuffer(stagedBytes(pieces));
                        }
                        staged.writeBytes(p.bytes());
                    }
                }
                if (staged != null) {
                    bufs.add(staged);
                }
                encoder.consumed(sent);
            }
        } catch (HurrayException | RuntimeException e) {
            for (ByteBuf b : bufs) {
                b.release();
            }
            throw e;
        }
        gathered = 0;
        if (bufs.isEmpty()) {
            // Nothing to send (the bytes left with an earlier hand-over): the writes are done.
            TensorMessage.dispose(owner);
            for (ChannelPromise p : waiting) {
                p.trySuccess();
            }
            waiting.clear();
            return;
        }
        // One buffer, one write: staged bytes and a borrowed payload travel as one composite, so
        // its promise completes when all of them were written.
        ByteBuf out = bufs.size() == 1 ? bufs.get(0) : Unpooled.wrappedBuffer(bufs.size(), bufs.toArray(new ByteBuf[0]));
        if (owner == null && waiting.size() == 1) {
            ChannelPromise p = waiting.get(0);
            waiting.clear();
            ctx.write(out, p);
            return;
        }
        ChannelPromise[] done = waiting.toArray(new ChannelPromise[0]);
        waiting.clear();
        ChannelPromise aggregate = ctx.newPromise();
        aggregate.addListener(f -> {
            TensorMessage.dispose(owner);
            for (ChannelPromise p : done) {
                if (f.isSuccess()) {
                    p.trySuccess();
                } else {
                    p.tryFailure(f.cause());
                }
            }
        });
        ctx.write(out, aggregate);
    }

    private static int stagedBytes(List<TensorEncoder.Piece> pieces) {
        long n = 0;
        for (TensorEncoder.Piece p : pieces) {
            if (!p.borrowed()) {
                n += p.bytes().remaining();
            }
        }
        return (int) Math.min(n, Integer.MAX_VALUE);
    }

    private void failWaiting(Throwable cause) {
        for (ChannelPromise p : waiting) {
            p.tryFailure(cause);
        }
        waiting.clear();
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        try {
            emit(ctx, null);
        } catch (HurrayException | RuntimeException e) {
            failWaiting(e);
            ctx.fireExceptionCaught(e);
        }
        ctx.flush();
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        if (!finished && encoder != null && ctx.channel().isActive()) {
            finished = true;
            try {
                encoder.finish();
                waiting.add(ctx.newPromise());
                emit(ctx, null);
                closeEncoder();
                ctx.flush();
            } catch (HurrayException | RuntimeException e) {
                failWaiting(e);
            }
        }
        ctx.close(promise);
    }
}
