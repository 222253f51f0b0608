package dev.hurray;

import java.util.Arrays;

/**
 * The extents of a tensor, in elements, outermost dimension first.
 *
 * <p>Rank 0 (a scalar: one element) through {@link #MAX_RANK} is allowed, and so are zero-size
 * dimensions (zero elements). The format stores dimensions as unsigned 64-bit integers; a Java
 * {@code Shape} holds them as {@code long}s in {@code 0..Long.MAX_VALUE} and guarantees that
 * {@link #elementCount()} fits a {@code long} (a shape with a zero dimension has zero elements
 * whatever its other dimensions). A stream descriptor beyond that range is reported by the
 * reader as {@link Status#LIMIT_EXCEEDED}.
 *
 * <p>Immutable and thread-safe; {@code equals} compares the dimensions.
 */
public final class Shape {
    /** Largest rank ({@code HURRAY_MAX_RANK}). */
    public static final int MAX_RANK = 32;

    private static final Shape SCALAR = new Shape(new long[0], 1);
    /**
     * The shape {@link #of} made last: code that builds one descriptor per tensor asks for the
     * same shape again and again, and gets this one (immutable, so sharing it is safe).
     */
    private static volatile Shape last = SCALAR;

    private final long[] dims;
    private final long elementCount;

    private Shape(long[] dims, long elementCount) {
        this.dims = dims;
        this.elementCount = elementCount;
    }

    /**
     * A shape with the given dimensions (elements, outermost first); no arguments gives the
     * scalar shape.
     *
     * @throws IllegalArgumentException if the rank exceeds {@link #MAX_RANK}, a dimension is
     *     negative, or the element count overflows a {@code long}
     */
    public static Shape of(long... dims) {
        if (dims.length == 0) {
            return SCALAR;
        }
        Shape l = last;
        if (sameDims(l.dims, dims)) {
            return l;
        }
        if (dims.length > MAX_RANK) {
            throw new IllegalArgumentException("rank " + dims.length + " exceeds the maximum rank " + MAX_RANK);
        }
        long[] copy = dims.clone();
        boolean zero = false;
        for (long d : copy) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension in " + Arrays.toString(copy));
            }
            zero |= d == 0;
        }
        long count = 1;
        if (zero) {
            count = 0;
        } else {
            for (long d : copy) {
                try {
                    count = Math.multiplyExact(count, d);
                } catch (ArithmeticException e) {
                    throw new IllegalArgumentException("shape " + Arrays.toString(copy) + " has more than Long.MAX_VALUE elements");
                }
            }
        }
        Shape made = new Shape(copy, count);
        last = made;
        return made;
    }

    private static boolean sameDims(long[] a, long[] b) {
        if (a.length != b.length) {
            return false;
        }
        for (int i = 0; i < a.length; i++) {
            if (a[i] != b[i]) {
                return false;
            }
        }
        return true;
    }

    /** The rank-0 shape: one element. */
    public static Shape scalar() {
        return SCALAR;
    }

    /** Number of dimensions (0 for a scalar). */
    public int rank() {
        return dims.length;
    }

    /**
     * Dimension {@code axis}, in elements.
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= axis < rank()}
     */
    public long dim(int axis) {
        return dims[axis];
    }

    /** A copy of the dimensions, outermost first. */
    public long[] dims() {
        return dims.clone();
    }

    /** Number of elements: the product of the dimensions (1 for a scalar, 0 with a zero dimension). */
    public long elementCount() {
        return elementCount;
    }

    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof Shape s && Arrays.equals(dims, s.dims);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(dims);
    }

    /** The dimensions in brackets, comma-separated without spaces: {@code [2,3]}; {@code []} for a scalar. */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < dims.length; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(dims[i]);
        }
        return b.append(']').toString();
    }
}
