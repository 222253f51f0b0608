package dev.hurray;

import dev.hurray.ffm.hurray_h;
import java.util.Arrays;

/**
 * How a tensor's elements map onto buffer 0 (docs/spec/descriptor.md §Layout).
 *
 * <p>Three dense kinds exist in format version 1: {@linkplain #rowMajor() row-major} (C order, the
 * last dimension varies fastest), {@linkplain #columnMajor() column-major} (Fortran order, the
 * first dimension varies fastest), and {@linkplain #strided(long...) strided} with one explicit
 * stride per dimension, <em>in elements, not bytes</em>, which may be zero or negative. Whether
 * a layout fits a shape and a buffer is checked by the native library when a
 * {@link TensorDescriptor} is built ({@link Status#INVALID_LAYOUT}, {@link Status#BUFFER_TOO_SMALL}).
 *
 * <p>Descriptor version 2 adds the sparse layouts {@linkplain #coo COO}, {@linkplain #csr CSR},
 * {@linkplain #csc CSC} and {@linkplain #bsr BSR} and the {@linkplain #paged block-paged} (KV
 * cache) layout, each with its parameters (index type, nnz, block shape, page size…) and its
 * own buffer table (docs/spec/descriptor.md §Sparse layouts, §Block-paged layout). Their
 * index contents are checked by the native library when a tensor is read or written;
 * {@link Tensor#densify()} and {@link Tensor#gather()} turn them into dense row-major tensors.
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
        STRIDED(hurray_h.HURRAY_LAYOUT_STRIDED(), "strided"),
        /** Sparse coordinate list ({@code HURRAY_LAYOUT_COO}): values, indices {@code [rank, nnz]}. */
        COO(hurray_h.HURRAY_LAYOUT_COO(), "coo"),
        /** Compressed sparse rows ({@code HURRAY_LAYOUT_CSR}): values, indptr, column indices. */
        CSR(hurray_h.HURRAY_LAYOUT_CSR(), "csr"),
        /** Compressed sparse columns ({@code HURRAY_LAYOUT_CSC}): values, indptr, row indices. */
        CSC(hurray_h.HURRAY_LAYOUT_CSC(), "csc"),
        /** Block sparse rows ({@code HURRAY_LAYOUT_BSR}): blocks, block indptr, block column indices. */
        BSR(hurray_h.HURRAY_LAYOUT_BSR(), "bsr"),
        /** Block-paged ({@code HURRAY_LAYOUT_PAGED}): pages, then the page table. */
        PAGED(hurray_h.HURRAY_LAYOUT_PAGED(), "paged");

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

        /** {@code row-major}, {@code column-major}, {@code strided}, {@code coo}, {@code csr}, {@code csc}, {@code bsr} or {@code paged}. */
        public String formatName() {
            return formatName;
        }

        /** True for COO, CSR, CSC and BSR. */
        public boolean isSparse() {
            return this == COO || this == CSR || this == CSC || this == BSR;
        }

        /**
         * The kind with wire code {@code code}.
         *
         * @throws IllegalArgumentException for any other code
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
    // Sparse: {index type code, nnz, canonical (0/1), block rows, block cols};
    // paged: {index type code, page size, block count, page count}; otherwise null.
    private final long[] params;

    private Layout(Kind kind, long[] strides) {
        this(kind, strides, null);
    }

    private Layout(Kind kind, long[] strides, long[] params) {
        this.kind = kind;
        this.strides = strides;
        this.params = params;
    }

    private static long indexCode(ElementType indexType) {
        if (indexType != ElementType.INT32 && indexType != ElementType.INT64) {
            throw new IllegalArgumentException("index type must be INT32 or INT64, not " + indexType);
        }
        return indexType.code();
    }

    private static long nonNegative(long v, String what) {
        if (v < 0) {
            throw new IllegalArgumentException(what + " " + v + " is negative");
        }
        return v;
    }

    /**
     * COO: buffer 0 holds {@code nnz} values, buffer 1 the indices as {@code rank} arrays of
     * {@code nnz} each (dimension-major, like scipy's {@code row}/{@code col}).
     *
     * @param indexType {@link ElementType#INT32} or {@link ElementType#INT64}
     * @param nnz stored entries
     * @param canonical true if coordinates are strictly increasing in row-major order (no
     *     duplicates); checked by the native library
     */
    public static Layout coo(ElementType indexType, long nnz, boolean canonical) {
        return sparse(Kind.COO, indexType, nnz, canonical, 0, 0);
    }

    /** CSR (rank 2): values, indptr ({@code rows + 1}), column indices; see {@link #coo}. */
    public static Layout csr(ElementType indexType, long nnz, boolean canonical) {
        return sparse(Kind.CSR, indexType, nnz, canonical, 0, 0);
    }

    /** CSC (rank 2): values, indptr ({@code cols + 1}), row indices; see {@link #coo}. */
    public static Layout csc(ElementType indexType, long nnz, boolean canonical) {
        return sparse(Kind.CSC, indexType, nnz, canonical, 0, 0);
    }

    /**
     * BSR (rank 2): {@code nnzBlocks} blocks of {@code blockRows × blockCols} values (each
     * row-major), block indptr ({@code rows / blockRows + 1}), block column indices.
     */
    public static Layout bsr(ElementType indexType, long nnzBlocks, int blockRows, int blockCols, boolean canonical) {
        if (blockRows <= 0 || blockCols <= 0) {
            throw new IllegalArgumentException("block shape " + blockRows + "x" + blockCols + " must be positive");
        }
        return sparse(Kind.BSR, indexType, nnzBlocks, canonical, blockRows, blockCols);
    }

    private static Layout sparse(Kind k, ElementType it, long nnz, boolean canonical, int br, int bc) {
        return new Layout(k, null, new long[] {indexCode(it), nonNegative(nnz, "nnz"), canonical ? 1 : 0, br, bc});
    }

    /**
     * Block-paged (KV cache), logical shape {@code [L, d1, …]}: buffer 0 holds {@code pageCount}
     * pages of {@code pageSize} rows, buffer 1 the page table of {@code blockCount =
     * ceil(L / pageSize)} entries of {@code indexType}.
     */
    public static Layout paged(ElementType indexType, int pageSize, long blockCount, long pageCount) {
        if (pageSize <= 0) {
            throw new IllegalArgumentException("page size " + pageSize + " must be positive");
        }
        return new Layout(Kind.PAGED, null, new long[] {indexCode(indexType), pageSize,
                nonNegative(blockCount, "block count"), nonNegative(pageCount, "page count")});
    }

    /** Index type of a sparse or paged layout ({@code INT32} or {@code INT64}); empty otherwise. */
    public java.util.Optional<ElementType> indexType() {
        return params == null ? java.util.Optional.empty() : java.util.Optional.of(ElementType.fromCode((int) params[0]));
    }

    /** Stored entries (BSR: blocks) of a sparse layout; 0 otherwise. */
    public long nnz() {
        return kind.isSparse() ? params[1] : 0;
    }

    /** True if a sparse layout promises sorted indices without duplicates. */
    public boolean isCanonical() {
        return kind.isSparse() && params[2] == 1;
    }

    /** BSR block shape {@code {rows, cols}}; {@code {0, 0}} otherwise. */
    public int[] blockShape() {
        return kind == Kind.BSR ? new int[] {(int) params[3], (int) params[4]} : new int[2];
    }

    /** Rows per page of a paged layout; 0 otherwise. */
    public int pageSize() {
        return kind == Kind.PAGED ? (int) params[1] : 0;
    }

    /** Page-table entries of a paged layout; 0 otherwise. */
    public long blockCount() {
        return kind == Kind.PAGED ? params[2] : 0;
    }

    /** Pages in buffer 0 of a paged layout; 0 otherwise. */
    public long pageCount() {
        return kind == Kind.PAGED ? params[3] : 0;
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
        return o instanceof Layout l && kind == l.kind && Arrays.equals(strides, l.strides)
                && Arrays.equals(params, l.params);
    }

    @Override
    public int hashCode() {
        return (kind.hashCode() * 31 + Arrays.hashCode(strides)) * 31 + Arrays.hashCode(params);
    }

    /** {@code row-major}, {@code column-major}, {@code strided(3,1)}, {@code csr(int32, nnz=5)}, {@code paged(int32, page=16)}. */
    @Override
    public String toString() {
        if (kind.isSparse()) {
            String b = kind == Kind.BSR ? ", block=" + params[3] + "x" + params[4] : "";
            return kind.formatName + "(" + indexType().orElseThrow().formatName() + ", nnz=" + params[1] + b
                    + (params[2] == 1 ? ", canonical" : "") + ")";
        }
        if (kind == Kind.PAGED) {
            return "paged(" + indexType().orElseThrow().formatName() + ", page=" + params[1] + ", blocks=" + params[2]
                    + ", pages=" + params[3] + ")";
        }
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
