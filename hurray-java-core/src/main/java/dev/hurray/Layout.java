package dev.hurray;

import dev.hurray.ffm.hurray_h;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * How a tensor's elements map onto its buffers (docs/spec/descriptor.md §Layouts): a sealed
 * family of immutable value types, one per kind, each with a static factory here and, for the
 * parameterised ones, a builder.
 *
 * <ul>
 *   <li>{@link Dense}: {@linkplain #rowMajor() row-major} (C order, the last dimension varies
 *       fastest) or {@linkplain #columnMajor() column-major} (Fortran order);</li>
 *   <li>{@link Strided}: one explicit stride per dimension, <em>in elements, not bytes</em>,
 *       which may be zero or negative;</li>
 *   <li>descriptor version 2: the sparse layouts {@link Coo}, {@link Csr}, {@link Csc} and
 *       {@link Bsr} (index type, nnz, canonical flag, BSR block shape) and the block-paged
 *       KV-cache layout {@link Paged} (page size, block and page counts), each with its own
 *       buffer table (docs/spec/descriptor.md §Sparse layouts, §Block-paged layout).</li>
 * </ul>
 *
 * <p>Whether a layout fits a shape and its buffers is checked by the native library when a
 * {@link TensorDescriptor} is built ({@link Status#INVALID_LAYOUT}, {@link Status#BUFFER_TOO_SMALL});
 * sparse indices and page tables are checked when a tensor is read or written, and
 * {@link Tensor#densify()} and {@link Tensor#gather()} turn them into dense row-major tensors.
 * The accessors of this interface answer for every kind (zero or empty where a kind has no
 * such parameter), so code can read a layout without matching on its type.
 *
 * <p>Immutable and thread-safe.
 */
public sealed interface Layout permits Layout.Dense, Layout.Strided, Layout.Sparse, Layout.Paged {
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

    /** The kind. */
    Kind kind();

    /** A copy of the strides in elements for a strided layout; an empty array otherwise. */
    default long[] strides() {
        return new long[0];
    }

    /** Index type of a sparse or paged layout ({@code INT32} or {@code INT64}); empty otherwise. */
    default Optional<ElementType> indexType() {
        return Optional.empty();
    }

    /** Stored entries (BSR: blocks) of a sparse layout; 0 otherwise. */
    default long nnz() {
        return 0;
    }

    /** True if a sparse layout promises sorted indices without duplicates. */
    default boolean isCanonical() {
        return false;
    }

    /** BSR block shape {@code {rows, cols}}; {@code {0, 0}} otherwise. */
    default int[] blockShape() {
        return new int[2];
    }

    /** Rows per page of a paged layout; 0 otherwise. */
    default int pageSize() {
        return 0;
    }

    /** Page-table entries of a paged layout; 0 otherwise. */
    default long blockCount() {
        return 0;
    }

    /** Pages in buffer 0 of a paged layout; 0 otherwise. */
    default long pageCount() {
        return 0;
    }

    /** Row-major (C order): the last dimension varies fastest. The default. */
    static Layout rowMajor() {
        return Dense.ROW_MAJOR;
    }

    /** Column-major (Fortran order): the first dimension varies fastest. */
    static Layout columnMajor() {
        return Dense.COLUMN_MAJOR;
    }

    /**
     * Explicit strides, one per dimension, in elements (not bytes); zero and negative strides are
     * allowed. The count must equal the shape's rank when the descriptor is built.
     *
     * @throws IllegalArgumentException if more than {@link Shape#MAX_RANK} strides are given
     */
    static Layout strided(long... strides) {
        return new Strided(strides);
    }

    /**
     * COO: buffer 0 holds {@code nnz} values, buffer 1 the indices as {@code rank} arrays of
     * {@code nnz} each (dimension-major, like scipy's {@code row}/{@code col}).
     *
     * @param indexType {@link ElementType#INT32} or {@link ElementType#INT64}
     * @param nnz stored entries
     * @param canonical true if coordinates are strictly increasing in row-major order (no
     *     duplicates); checked by the native library
     * @throws IllegalArgumentException for another index type or a negative nnz
     */
    static Layout coo(ElementType indexType, long nnz, boolean canonical) {
        return new Coo(indexType, nnz, canonical);
    }

    /** CSR (rank 2): values, indptr ({@code rows + 1}), column indices; see {@link #coo}. */
    static Layout csr(ElementType indexType, long nnz, boolean canonical) {
        return new Csr(indexType, nnz, canonical);
    }

    /** CSC (rank 2): values, indptr ({@code cols + 1}), row indices; see {@link #coo}. */
    static Layout csc(ElementType indexType, long nnz, boolean canonical) {
        return new Csc(indexType, nnz, canonical);
    }

    /**
     * BSR (rank 2): {@code nnzBlocks} blocks of {@code blockRows × blockCols} values (each
     * row-major), block indptr ({@code rows / blockRows + 1}), block column indices.
     *
     * @throws IllegalArgumentException for a non-positive block shape, another index type or a
     *     negative count
     */
    static Layout bsr(ElementType indexType, long nnzBlocks, int blockRows, int blockCols, boolean canonical) {
        return new Bsr(indexType, nnzBlocks, blockRows, blockCols, canonical);
    }

    /**
     * Block-paged (KV cache), logical shape {@code [L, d1, …]}: buffer 0 holds {@code pageCount}
     * pages of {@code pageSize} rows, buffer 1 the page table of {@code blockCount =
     * ceil(L / pageSize)} entries of {@code indexType}.
     *
     * @throws IllegalArgumentException for a non-positive page size, another index type or a
     *     negative count
     */
    static Layout paged(ElementType indexType, int pageSize, long blockCount, long pageCount) {
        return new Paged(indexType, pageSize, blockCount, pageCount);
    }

    /** A builder of a sparse layout of {@code kind} (COO, CSR, CSC or BSR); defaults: int32, nnz 0, not canonical. */
    static SparseBuilder sparse(Kind kind) {
        if (!kind.isSparse()) {
            throw new IllegalArgumentException(kind + " is not a sparse layout");
        }
        return new SparseBuilder(kind);
    }

    private static ElementType checkIndex(ElementType t) {
        if (t != ElementType.INT32 && t != ElementType.INT64) {
            throw new IllegalArgumentException("index type must be INT32 or INT64, not " + t);
        }
        return t;
    }

    private static long checkCount(long v, String what) {
        if (v < 0) {
            throw new IllegalArgumentException(what + " " + v + " is negative");
        }
        return v;
    }

    private static String sparseString(Layout l) {
        int[] b = l.blockShape();
        return l.kind().formatName() + "(" + l.indexType().orElseThrow().formatName() + ", nnz=" + l.nnz()
                + (l.kind() == Kind.BSR ? ", block=" + b[0] + "x" + b[1] : "") + (l.isCanonical() ? ", canonical" : "") + ")";
    }

    /** Row- or column-major. */
    record Dense(boolean columnMajor) implements Layout {
        static final Dense ROW_MAJOR = new Dense(false);
        static final Dense COLUMN_MAJOR = new Dense(true);

        @Override
        public Kind kind() {
            return columnMajor ? Kind.COLUMN_MAJOR : Kind.ROW_MAJOR;
        }

        // Written out (the rule a record derives) so that comparing layouts needs no
        // ObjectMethods bootstrap in a fresh JVM.
        @Override
        public boolean equals(Object o) {
            return o instanceof Dense d && columnMajor == d.columnMajor;
        }

        @Override
        public int hashCode() {
            return Boolean.hashCode(columnMajor);
        }

        /** {@code row-major} or {@code column-major}. */
        @Override
        public String toString() {
            return kind().formatName();
        }
    }

    /** Explicit strides in elements, one per dimension. */
    final class Strided implements Layout {
        private final long[] strides;

        private Strided(long[] strides) {
            if (strides.length > Shape.MAX_RANK) {
                throw new IllegalArgumentException(strides.length + " strides exceed the maximum rank " + Shape.MAX_RANK);
            }
            this.strides = strides.clone();
        }

        @Override
        public Kind kind() {
            return Kind.STRIDED;
        }

        @Override
        public long[] strides() {
            return strides.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Strided s && Arrays.equals(strides, s.strides);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(strides);
        }

        /** {@code strided(3,1)}. */
        @Override
        public String toString() {
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

    /**
     * The sparse layouts (COO, CSR, CSC, BSR): each has an index type, a stored-entry count and
     * a canonical flag, read through {@link #indexType()}, {@link #nnz()} and
     * {@link #isCanonical()}.
     */
    sealed interface Sparse extends Layout permits Coo, Csr, Csc, Bsr {
        /** The integer type of the index buffers. */
        ElementType indices();

        /** Stored entries (blocks for BSR). */
        long count();

        /** Whether entries are sorted with no duplicates. */
        boolean sorted();

        @Override
        default Optional<ElementType> indexType() {
            return Optional.of(indices());
        }

        @Override
        default long nnz() {
            return count();
        }

        @Override
        default boolean isCanonical() {
            return sorted();
        }
    }

    /** COO: values, then indices {@code [rank, nnz]}. */
    record Coo(ElementType indices, long count, boolean sorted) implements Sparse {
        /** Validates the index type and count. */
        public Coo {
            checkIndex(indices);
            checkCount(count, "nnz");
        }

        @Override
        public Kind kind() {
            return Kind.COO;
        }

        /** {@code coo(int32, nnz=5, canonical)}. */
        @Override
        public String toString() {
            return sparseString(this);
        }
    }

    /** CSR: values, indptr, column indices. */
    record Csr(ElementType indices, long count, boolean sorted) implements Sparse {
        /** Validates the index type and count. */
        public Csr {
            checkIndex(indices);
            checkCount(count, "nnz");
        }

        @Override
        public Kind kind() {
            return Kind.CSR;
        }

        @Override
        public String toString() {
            return sparseString(this);
        }
    }

    /** CSC: values, indptr, row indices. */
    record Csc(ElementType indices, long count, boolean sorted) implements Sparse {
        /** Validates the index type and count. */
        public Csc {
            checkIndex(indices);
            checkCount(count, "nnz");
        }

        @Override
        public Kind kind() {
            return Kind.CSC;
        }

        @Override
        public String toString() {
            return sparseString(this);
        }
    }

    /** BSR: blocks of values, block indptr, block column indices. */
    record Bsr(ElementType indices, long count, int blockRows, int blockCols, boolean sorted) implements Sparse {
        /** Validates the index type, count and block shape. */
        public Bsr {
            checkIndex(indices);
            checkCount(count, "nnz");
            if (blockRows <= 0 || blockCols <= 0) {
                throw new IllegalArgumentException("block shape " + blockRows + "x" + blockCols + " must be positive");
            }
        }

        @Override
        public Kind kind() {
            return Kind.BSR;
        }

        @Override
        public int[] blockShape() {
            return new int[] {blockRows, blockCols};
        }

        @Override
        public String toString() {
            return sparseString(this);
        }
    }

    /** Block-paged: pages, then the page table. */
    record Paged(ElementType indices, int rowsPerPage, long blocks, long pages) implements Layout {
        /** Validates the index type, page size and counts. */
        public Paged {
            checkIndex(indices);
            if (rowsPerPage <= 0) {
                throw new IllegalArgumentException("page size " + rowsPerPage + " must be positive");
            }
            checkCount(blocks, "block count");
            checkCount(pages, "page count");
        }

        /** A builder; defaults: int32 entries, page size 16, no blocks or pages. */
        public static Builder builder() {
            return new Builder();
        }

        @Override
        public Kind kind() {
            return Kind.PAGED;
        }

        @Override
        public Optional<ElementType> indexType() {
            return Optional.of(indices);
        }

        @Override
        public int pageSize() {
            return rowsPerPage;
        }

        @Override
        public long blockCount() {
            return blocks;
        }

        @Override
        public long pageCount() {
            return pages;
        }

        /** {@code paged(int32, page=16, blocks=4, pages=8)}. */
        @Override
        public String toString() {
            return "paged(" + indices.formatName() + ", page=" + rowsPerPage + ", blocks=" + blocks + ", pages=" + pages + ")";
        }

        /** Builds a {@link Paged} layout. Not thread-safe. */
        public static final class Builder {
            private ElementType indexType = ElementType.INT32;
            private int pageSize = 16;
            private long blockCount;
            private long pageCount;

            private Builder() {}

            /** Page-table entry type ({@code INT32} or {@code INT64}). */
            public Builder indexType(ElementType t) {
                indexType = Objects.requireNonNull(t, "indexType");
                return this;
            }

            /** Rows of dimension 0 per page. */
            public Builder pageSize(int rows) {
                pageSize = rows;
                return this;
            }

            /** Page-table entries: {@code ceil(dims[0] / pageSize)}. */
            public Builder blockCount(long n) {
                blockCount = n;
                return this;
            }

            /** Pages in buffer 0. */
            public Builder pageCount(long n) {
                pageCount = n;
                return this;
            }

            /** The layout. @throws IllegalArgumentException as {@link Layout#paged} */
            public Paged build() {
                return new Paged(indexType, pageSize, blockCount, pageCount);
            }
        }
    }

    /** Builds a sparse layout ({@link Layout#sparse(Kind)}). Not thread-safe. */
    final class SparseBuilder {
        private final Kind kind;
        private ElementType indexType = ElementType.INT32;
        private long nnz;
        private boolean canonical;
        private int blockRows;
        private int blockCols;

        private SparseBuilder(Kind kind) {
            this.kind = kind;
        }

        /** Index type ({@code INT32} or {@code INT64}). */
        public SparseBuilder indexType(ElementType t) {
            indexType = Objects.requireNonNull(t, "indexType");
            return this;
        }

        /** Stored entries (BSR: blocks). */
        public SparseBuilder nnz(long n) {
            nnz = n;
            return this;
        }

        /** Promise sorted indices without duplicates (checked by the native library). */
        public SparseBuilder canonical(boolean c) {
            canonical = c;
            return this;
        }

        /** BSR block shape (required for BSR, refused for the others). */
        public SparseBuilder blockShape(int rows, int cols) {
            blockRows = rows;
            blockCols = cols;
            return this;
        }

        /** The layout. @throws IllegalArgumentException for inconsistent parameters */
        public Layout build() {
            if (kind != Kind.BSR && (blockRows != 0 || blockCols != 0)) {
                throw new IllegalArgumentException("a block shape is only for BSR");
            }
            return switch (kind) {
                case COO -> new Coo(indexType, nnz, canonical);
                case CSR -> new Csr(indexType, nnz, canonical);
                case CSC -> new Csc(indexType, nnz, canonical);
                default -> new Bsr(indexType, nnz, blockRows, blockCols, canonical);
            };
        }
    }
}
