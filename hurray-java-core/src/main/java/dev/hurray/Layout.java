package dev.hurray;

import dev.hurray.ffm.hurray_h;
import java.util.Arrays;

/**
 * How a tensor's elements map onto buffer 0 (docs/spec/descriptor.md §Layout).
 *
 * <p>Three kinds exist in format version 1: {@linkplain #rowMajor() row-major} (C order, the
 * last dimension varies fastest), {@linkplain #columnMajor() column-major} (Fortran order, the
 * first dimension varies fastest), and {@linkplain #strided(long...) strided} with one explicit
 * stride per dimension, <em>in elements, not bytes</em>, which may be zero or negative. Whether
 * a layout fits a shape and a buffer is checked by the native library when a
 * {@link TensorDescriptor} is built ({@link Status#INVALID_LAYOUT}, {@link Status#BUFFER_TOO_SMALL}).
 *
 * <p>Immutable and thread-safe.
 */
public final class Layout {
    /** The layout kinds, with their one-byte wire codes ({@code HURRAY_LAYOUT_*}). */
    public enum Kind {
        /** C order ({@code HURRAY_LAYOUT_ROW_MAJOR}). */
        ROW_MAJOR(hurray_h.HURRAY_LAYOUT_ROW_MAJOR(), "row-major"),
        /** Fortran order ({@code HURRAY_LAYOUT_COLUMN_MAJOR}). */
        COLUMN_MAJOR(hurray_h.HURRAY_LAYOUT_COLUMN_MAJOR(), "column-major"),
        /** Explicit strides in elements ({@code HURRAY_LAYOUT_STRIDED}). */
        STRIDED(hurray_h.HURRAY_LAYOUT_STRIDED(), "strided");

        private final int code;
        private final String formatName;

        Kind(int code, String formatName) {
            this.code = code & 0xFF;
            this.formatName = formatName;
        }

        /** The wire code. */
        public int code() {
            return code;
        }

        /** {@code row-major}, {@code column-major} or {@code strided}. */
        public String formatName() {
            return formatName;
        }

        /**
         * The kind with wire code {@code code}.
         *
         * @throws IllegalArgumentException for any other code (3–7 are reserved for sparse and
         *     block-paged layouts, which format version 1 does not define)
         */
        public static Kind fromCode(int code) {
            for (Kind k : values()) {
                if (k.code == code) {
                    return k;
                }
            }
            throw new IllegalArgumentException("unknown layout code " + code);
        }
    }

    private static final Layout ROW_MAJOR = new Layout(Kind.ROW_MAJOR, null);
    private static final Layout COLUMN_MAJOR = new Layout(Kind.COLUMN_MAJOR, null);

    private final Kind kind;
    private final long[] strides;

    private Layout(Kind kind, long[] strides) {
        this.kind = kind;
        this.strides = strides;
    }

    /** Row-major (C order): the last dimension varies fastest. The default. */
    public static Layout rowMajor() {
        return ROW_MAJOR;
    }

    /** Column-major (Fortran order): the first dimension varies fastest. */
    public static Layout columnMajor() {
        return COLUMN_MAJOR;
    }

    /**
     * Explicit strides, one per dimension, in elements (not bytes); zero and negative strides are
     * allowed. The count must equal the shape's rank when the descriptor is built.
     *
     * @throws IllegalArgumentException if more than {@link Shape#MAX_RANK} strides are given
     */
    public static Layout strided(long... strides) {
        if (strides.length > Shape.MAX_RANK) {
            throw new IllegalArgumentException(strides.length + " strides exceed the maximum rank " + Shape.MAX_RANK);
        }
        return new Layout(Kind.STRIDED, strides.clone());
    }

    /** The kind. */
    public Kind kind() {
        return kind;
    }

    /** A copy of the strides in elements for a strided layout; an empty array otherwise. */
    public long[] strides() {
        return strides == null ? new long[0] : strides.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Layout l && kind == l.kind && Arrays.equals(strides, l.strides);
    }

    @Override
    public int hashCode() {
        return kind.hashCode() * 31 + Arrays.hashCode(strides);
    }

    /** {@code row-major}, {@code column-major}, or {@code strided(3,1)}. */
    @Override
    public String toString() {
        if (kind != Kind.STRIDED) {
            return kind.formatName;
        }
        StringBuilder b = new StringBuilder("strided(");
        for (int i = 0; i < strides.length; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(strides[i]);
        }
        return b.append(')').toString();
    }
}
