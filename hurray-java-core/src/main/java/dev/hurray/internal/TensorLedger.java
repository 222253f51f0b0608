package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

/**
 * The native tensors one reader has handed out, so that a tensor needs no cleaner and no
 * downcall of its own: closing a small tensor queues its handle, and the queue is freed with
 * one {@code hurray_tensor_destroy_many} call per {@link #CAPACITY} tensors (or sooner, see
 * {@link #release}). One cleaner watches the ledger: every tensor's arena holds the ledger (its
 * release action does), so once the reader and every tensor and buffer segment of it are
 * unreachable, tensors nobody closed are freed and reported as leaks.
 *
 * <p>Thread-safe: tensors of {@code TensorScope.SHARED} may be closed from any thread.
 */
public final class TensorLedger {
    /** Handles queued before one batch destroy. */
    static final int CAPACITY = 64;
    /** Tensors of more bytes than this are freed at once (their memory goes back to the pool). */
    static final long SMALL_BYTES = 64 * 1024;
    /** Queued bytes that trigger a batch destroy. */
    static final long QUEUE_BYTES = 1 << 20;

    private final State state = new State();

    private TensorLedger() {
    }

    /** A ledger for a new reader, watched by the leak cleaner. */
    public static TensorLedger create() {
        TensorLedger l = new TensorLedger();
        Leaks.watch(l, l.state);
        return l;
    }

    /**
     * Records that {@code tensor} (the address of an owned {@code HurrayTensor*} of {@code bytes} payload bytes)
     * is handed out, and returns the release action to attach to its arena (run when the arena
     * closes; it holds this ledger, so that the leak cleaner cannot run while any segment of the
     * tensor is reachable).
     */
    public Consumer<MemorySegment> add(long tensor, long bytes) {
        int slot = state.add(tensor);
        return new Release(this, slot, tensor, bytes);
    }

    /** The reader closed: the queue is freed now and later releases are not queued. */
    public void readerClosed() {
        state.close();
    }

    private record Release(TensorLedger ledger, int slot, long tensor, long bytes) implements Consumer<MemorySegment> {
        @Override
        public void accept(MemorySegment ignored) {
            ledger.state.release(slot, tensor, bytes);
        }
    }

    /** The ledger's state; also the cleaner's action (it never refers to the ledger). */
    private static final class State implements Runnable {
        private long[] open = new long[16];
        private int[] free = new int[16];
        private int freeCount;
        private int used;
        /**
         * The handles waiting for one batch destroy: lent from a pool when the reader is made and
         * given back when it closes (a reader per message then allocates none); null after that.
         */
        private MemorySegment queue = ScratchPool.LEDGER_QUEUES.lend();
        private int queued;
        private long queuedBytes;
        private boolean readerClosed;

        synchronized int add(long handle) {
            int slot;
            if (freeCount > 0) {
                slot = free[--freeCount];
            } else {
                if (used == open.length) {
                    open = java.util.Arrays.copyOf(open, used * 2);
                    free = java.util.Arrays.copyOf(free, used * 2);
                }
                slot = used++;
            }
            open[slot] = handle;
            return slot;
        }

        /** Never throws: it runs inside {@code Arena.close()}. */
        synchronized void release(int slot, long handle, long bytes) {
            if (open[slot] != handle) {
                return;
            }
            open[slot] = 0;
            free[freeCount++] = slot;
            if (readerClosed || bytes > SMALL_BYTES) {
                destroyOne(handle);
                return;
            }
            queue.set(JAVA_LONG, 8L * queued++, handle);
            queuedBytes += bytes;
            if (queued == CAPACITY || queuedBytes >= QUEUE_BYTES) {
                flush();
            }
        }

        private void flush() {
            if (queued > 0) {
                hurray_h.hurray_tensor_destroy_many$raw(queue.address(), queued);
                java.lang.ref.Reference.reachabilityFence(queue); // passed by address
                queued = 0;
                queuedBytes = 0;
            }
        }

        synchronized void close() {
            flush();
            readerClosed = true;
            giveBackQueue();
        }

        private void giveBackQueue() {
            if (queue != null) {
                ScratchPool.LEDGER_QUEUES.takeBack(queue);
                queue = null;
            }
        }

        /** The cleaner: nothing refers to the ledger any more, so every open tensor leaked. */
        @Override
        public synchronized void run() {
            flush();
            giveBackQueue();
            long leaked = 0;
            for (int i = 0; i < used; i++) {
                if (open[i] != 0) {
                    destroyOne(open[i]);
                    open[i] = 0;
                    leaked++;
                }
            }
            if (leaked > 0) {
                Leaks.reportLeaked("Tensor", leaked);
            }
        }

        /** Destroys one tensor now, through a pooled slot (the destroy never calls back into Java). */
        private void destroyOne(long handle) {
            MemorySegment slot = ScratchPool.borrow();
            try {
                slot.set(JAVA_LONG, 0, handle);
                hurray_h.hurray_tensor_destroy_many$raw(slot.address(), 1);
            } finally {
                ScratchPool.giveBack(slot);
            }
        }
    }
}
