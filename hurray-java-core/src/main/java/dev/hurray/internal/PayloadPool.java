package dev.hurray.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Native blocks for small tensor buffers that are filled completely as soon as they are made
 * ({@code Tensor.copyOf}, {@code Tensor.of(array)}), so that making one costs neither a
 * {@code malloc} nor a zero fill, and closing one no {@code free}.
 *
 * <p>Blocks come in power-of-two size classes from 64 bytes to {@value #MAX_BYTES} bytes, each
 * 64-byte aligned, carved from slabs of {@value #SLAB_BYTES} bytes. A block is either scoped to
 * a tensor's own arena ({@link #filledLater}, {@link #scoped}: the segment is invalid once the
 * tensor closes, as with any arena allocation, and the arena's close gives the block back) or
 * held by address ({@link #block}) by a tensor that gives it back itself when it closes. The pool retains at most
 * {@value #RETAIN_BYTES} bytes of slabs for the life of the process; once that much is in use,
 * further buffers are ordinary arena allocations. A block is reused without clearing, which is
 * why only callers that overwrite every byte at once take from here.
 */
public final class PayloadPool {
    /** The largest buffer served from the pool; larger ones are arena allocations. */
    public static final long MAX_BYTES = 64 * 1024;
    static final long SLAB_BYTES = 256 * 1024;
    static final long RETAIN_BYTES = 8L * 1024 * 1024;
    private static final int MIN_SHIFT = 6;
    private static final int CLASSES = 64 - Long.numberOfLeadingZeros(MAX_BYTES - 1) - MIN_SHIFT + 1;
    private static final long ALIGN = 64;

    private static final Object LOCK = new Object();
    private static final long[][] FREE = new long[CLASSES][];
    private static final int[] FREE_COUNT = new int[CLASSES];
    private static long slabAt;
    private static long slabLeft;
    private static long retained;

    private PayloadPool() {
    }

    /**
     * A buffer of {@code size} bytes at {@code alignment}, scoped to {@code arena}, whose bytes
     * are unspecified: the caller overwrites all of them before anyone reads it.
     */
    public static MemorySegment filledLater(Arena arena, long size, long alignment) {
        if (size == 0 || size > MAX_BYTES || alignment > ALIGN) {
            return arena.allocate(size, alignment);
        }
        long block = take(classOf(size));
        if (block == 0) {
            return arena.allocate(size, alignment);
        }
        return MemorySegment.ofAddress(block).reinterpret(size, arena, PayloadPool::giveBack);
    }

    /**
     * A block of at least {@code size} bytes at {@code alignment} whose bytes are unspecified, as
     * an address the caller owns until it gives it back with {@link #giveBack(long, long)} (or
     * scopes it with {@link #scoped}); 0 when the pool does not serve that size (empty, above
     * {@value #MAX_BYTES} bytes, alignment above 64) or is exhausted.
     */
    public static long block(long size, long alignment) {
        if (size == 0 || size > MAX_BYTES || alignment > ALIGN) {
            return 0;
        }
        return take(classOf(size));
    }

    /** {@code block} (from {@link #block}) as a segment of {@code size} bytes scoped to {@code arena}, whose close gives it back. */
    public static MemorySegment scoped(Arena arena, long block, long size) {
        return MemorySegment.ofAddress(block).reinterpret(size, arena, PayloadPool::giveBack);
    }

    /** Gives back {@code block} (from {@link #block} with this {@code size}) that was never scoped. */
    public static void giveBack(long block, long size) {
        put(classOf(size), block);
    }

    /** Blocks of the pool now free, for tests. */
    static int freeBlocks() {
        synchronized (LOCK) {
            int n = 0;
            for (int c : FREE_COUNT) {
                n += c;
            }
            return n;
        }
    }

    /** Slab bytes the pool retains, for tests. */
    static long retainedBytes() {
        synchronized (LOCK) {
            return retained;
        }
    }

    private static int classOf(long size) {
        int shift = 64 - Long.numberOfLeadingZeros(size - 1);
        return Math.max(shift, MIN_SHIFT) - MIN_SHIFT;
    }

    private static long take(int c) {
        synchronized (LOCK) {
            int n = FREE_COUNT[c];
            if (n > 0) {
                FREE_COUNT[c] = n - 1;
                return FREE[c][n - 1];
            }
            long bytes = 1L << (c + MIN_SHIFT);
            if (slabLeft < bytes) {
                if (retained + SLAB_BYTES > RETAIN_BYTES) {
                    return 0;
                }
                // Slabs live as long as the process: the pool's whole footprint is RETAIN_BYTES.
                slabAt = Arena.global().allocate(SLAB_BYTES, ALIGN).address();
                slabLeft = SLAB_BYTES;
                retained += SLAB_BYTES;
            }
            long block = slabAt;
            slabAt += bytes;
            slabLeft -= bytes;
            return block;
        }
    }

    private static void giveBack(MemorySegment s) {
        put(classOf(s.byteSize()), s.address());
    }

    private static void put(int c, long block) {
        synchronized (LOCK) {
            long[] stack = FREE[c];
            int n = FREE_COUNT[c];
            if (stack == null || n == stack.length) {
                stack = java.util.Arrays.copyOf(stack == null ? new long[0] : stack, Math.max(16, 2 * n));
                FREE[c] = stack;
            }
            stack[n] = block;
            FREE_COUNT[c] = n + 1;
        }
    }
}
