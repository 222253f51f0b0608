package dev.hurray.arrow;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.ExternalBuffer;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.Shape;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.TensorScope;
import dev.hurray.TensorShare;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.extension.InvalidExtensionMetadataException;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.ExtensionTypeRegistry;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * Conversions between Arrow tensor columns and Hurray tensors.
 *
 * <h2>Element types</h2>
 * int8–int64, uint8–uint64, float16, float32 and float64 map to the Arrow types of the same
 * name; Hurray's {@code bool} maps to {@link Bool8Type arrow.bool8} (one byte per value).
 * Everything else is refused with an {@link ArrowTensorException} naming the type: bfloat16,
 * complex, the float8/float6/float4 and E8M0 types and the packed 4-bit integers have no Arrow
 * type, and Arrow's bit-packed {@code Bool} and its other types have no Hurray one. Quantized
 * tensors are refused too ({@link Tensor#dequantize()} first).
 *
 * <h2>Copies and lifetimes</h2>
 * <ul>
 *   <li>{@link #toVector(Tensor, String, BufferAllocator)} does not copy: the column's element
 *       buffer is the tensor's memory, wrapped with {@link BufferAllocator#wrapForeignAllocation}
 *       and holding a {@link Tensor#share()}. While the column (or any Arrow buffer sliced or
 *       transferred from it) is open, closing the tensor is refused ({@link IllegalStateException},
 *       the tensor stays open and the column valid); when Arrow releases its last reference the
 *       share closes and the tensor can be closed.</li>
 *   <li>{@link #toTensor(FixedShapeTensorVector)}, {@link #row(FixedShapeTensorVector, int)} and
 *       {@link #row(VariableShapeTensorVector, int)} do not copy when the elements start on a
 *       64-byte boundary (Hurray's minimum alignment): the tensor is an {@link ExternalBuffer}
 *       over the Arrow buffer and holds a reference to it, so the column, and even its reader,
 *       may be closed first; the Arrow memory is released when the tensor is closed. Elements
 *       that start elsewhere are copied once into a fresh 64-byte-aligned buffer. Arrow's IPC
 *       readers place buffers at 8-byte offsets inside one allocation per record batch, so
 *       columns read from IPC files are usually copied; columns made by
 *       {@link #toVector(Tensor, String, BufferAllocator)} never are.</li>
 *   <li>{@link #toVector(List, String, BufferAllocator)} and
 *       {@link #toVariableVector(List, String, BufferAllocator)} gather separate tensors into one
 *       Arrow buffer, a copy each.</li>
 * </ul>
 * Tensors made here are {@link TensorScope#SHARED}: usable and closable from any thread.
 *
 * <h2>Layouts</h2>
 * A column's tensors are row-major in their physical shape; with a {@code permutation} the
 * Hurray tensor has the logical shape and a strided layout over the same memory (what pyarrow's
 * {@code to_numpy_ndarray()} returns). Going back, a strided Hurray tensor whose strides are a
 * permutation of a row-major layout becomes a column with that permutation; other layouts are
 * refused. A column's {@code dim_names} are kept in the Hurray descriptor's metadata under
 * {@link #DIM_NAMES_KEY} (a JSON array) and written back from there.
 *
 * <h2>Errors</h2>
 * Null rows (Hurray tensors have no nulls), null elements, a row whose element count is not
 * the product of its shape, negative sizes, offsets or buffers that reach past their data, and
 * more than {@code 2^31-1} elements in one column are {@link ArrowTensorException}s naming the
 * column and row.
 *
 * <h2>Threads</h2>
 * The methods are thread-safe; the vectors they read or make are not (Arrow's rule).
 */
public final class ArrowTensors {
    /** Descriptor metadata key holding a column's {@code dim_names} as a JSON array of strings. */
    public static final String DIM_NAMES_KEY = "arrow.dim_names";

    static {
        register();
    }

    private ArrowTensors() {
    }

    /**
     * Registers {@link FixedShapeTensorType}, {@link VariableShapeTensorType} and
     * {@link Bool8Type} with Arrow's {@link ExtensionTypeRegistry}, so that IPC readers created
     * afterwards produce their vectors. Idempotent; every entry point of this module calls it.
     */
    public static void register() {
        Registration.ONCE.hashCode();
    }

    /** Class initialisation registers exactly once, thread-safely, on first use. */
    private static final class Registration {
        static final Object ONCE = new Object();

        static {
            ExtensionTypeRegistry.register(FixedShapeTensorType.of());
            ExtensionTypeRegistry.register(VariableShapeTensorType.of());
            ExtensionTypeRegistry.register(Bool8Type.INSTANCE);
        }
    }

    // ------------------------------------------------------------------ element types

    /**
     * The Arrow element type for a Hurray one.
     *
     * @throws ArrowTensorException for a type Arrow lacks, naming it
     */
    public static ArrowType arrowType(ElementType t) throws ArrowTensorException {
        return switch (t) {
            case BOOL -> Bool8Type.INSTANCE;
            case INT8 -> new ArrowType.Int(8, true);
            case INT16 -> new ArrowType.Int(16, true);
            case INT32 -> new ArrowType.Int(32, true);
            case INT64 -> new ArrowType.Int(64, true);
            case UINT8 -> new ArrowType.Int(8, false);
            case UINT16 -> new ArrowType.Int(16, false);
            case UINT32 -> new ArrowType.Int(32, false);
            case UINT64 -> new ArrowType.Int(64, false);
            case FLOAT16 -> new ArrowType.FloatingPoint(FloatingPointPrecision.HALF);
            case FLOAT32 -> new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case FLOAT64 -> new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            default -> throw new ArrowTensorException("element type " + t.formatName()
                    + " has no Arrow equivalent (Arrow has int/uint 8-64, float16/32/64 and arrow.bool8)");
        };
    }

    /**
     * The Hurray element type for an Arrow one.
     *
     * @throws ArrowTensorException for a type Hurray lacks, naming it
     */
    public static ElementType elementType(ArrowType t) throws ArrowTensorException {
        if (t instanceof ArrowType.Int i) {
            boolean s = i.getIsSigned();
            switch (i.getBitWidth()) {
                case 8: return s ? ElementType.INT8 : ElementType.UINT8;
                case 16: return s ? ElementType.INT16 : ElementType.UINT16;
                case 32: return s ? ElementType.INT32 : ElementType.UINT32;
                case 64: return s ? ElementType.INT64 : ElementType.UINT64;
                default: break;
            }
        } else if (t instanceof ArrowType.FloatingPoint f) {
            return switch (f.getPrecision()) {
                case HALF -> ElementType.FLOAT16;
                case SINGLE -> ElementType.FLOAT32;
                case DOUBLE -> ElementType.FLOAT64;
            };
        } else if (t instanceof Bool8Type) {
            return ElementType.BOOL;
        } else if (t instanceof ArrowType.Bool) {
            throw new ArrowTensorException("element type Bool (bit-packed) is not supported: Hurray's bool is one byte "
                    + "per element; store booleans as arrow.bool8");
        }
        throw new ArrowTensorException("Arrow element type " + t + " has no Hurray equivalent");
    }

    /** The storage child field of a tensor column ({@code item}, nullable, as pyarrow makes it). */
    static Field valueField(ArrowType valueType) {
        Objects.requireNonNull(valueType, "valueType");
        return new Field("item", FieldType.nullable(valueType), null);
    }

    // ------------------------------------------------------------------ Hurray -> Arrow

    /**
     * A fixed-shape column over a tensor of shape {@code [N, ...shape]}: N rows of {@code shape},
     * without copying (see the class notes for the lifetime).
     *
     * @param batch an open, dense tensor of rank 1 or more: row-major, or strided as a
     *     permutation of row-major with the first dimension outermost
     * @param name the column name
     * @throws ArrowTensorException for an element type Arrow lacks, a quantized tensor, another
     *     layout, or more than {@code 2^31-1} elements
     * @throws IllegalStateException if the tensor is closed
     */
    public static FixedShapeTensorVector toVector(Tensor batch, String name, BufferAllocator allocator)
            throws ArrowTensorException {
        Objects.requireNonNull(name, "name");
        TensorDescriptor d = batch.descriptor();
        ArrowType valueType = checkConvertible(d);
        long[] dims = d.shape().dims();
        if (dims.length == 0) {
            throw new ArrowTensorException("a column needs a tensor of rank 1 or more ([rows, ...shape]); "
                    + d.name().map(n -> "'" + n + "' ").orElse("") + "is a scalar (use toVector(List.of(tensor), ...))");
        }
        Physical p = physical(d, true);
        long rowElems = elementCount("column", "shape", p.shape, Integer.MAX_VALUE);
        int rows = checkedCount(dims[0], "rows");
        long elems = Math.multiplyExact(rowElems, (long) rows);
        checkColumnElements(elems, name);
        long bytes = d.elementType().byteSizeOf(elems);
        FixedShapeTensorType type = new FixedShapeTensorType(p.shape, dimNames(d, p.shape.length), p.permutation);
        ArrowBuf data;
        if (bytes == 0) {
            data = allocator.getEmpty();
        } else {
            TensorShare share = batch.share();
            try {
                long address = share.buffer(0).address() + d.byteOffset();
                data = allocator.wrapForeignAllocation(new ShareAllocation(share, address, bytes));
            } catch (RuntimeException | Error e) {
                share.close();
                throw e;
            }
        }
        try {
            return fixedColumn(type, name, valueType, rows, data, allocator);
        } finally {
            data.close();
        }
    }

    /**
     * A fixed-shape column of {@code rows.size()} rows, one per tensor, copied into one Arrow
     * buffer. Every tensor must have the same element type and shape (and layout); a tensor of
     * shape {@code []} gives a column of rank-0 tensors.
     *
     * @throws ArrowTensorException for an empty list, differing types or shapes, or as
     *     {@link #toVector(Tensor, String, BufferAllocator)}
     */
    public static FixedShapeTensorVector toVector(List<Tensor> rows, String name, BufferAllocator allocator)
            throws ArrowTensorException {
        Objects.requireNonNull(name, "name");
        if (rows.isEmpty()) {
            throw new ArrowTensorException("column '" + name + "': no tensors (the shape of an empty column is unknown; "
                    + "use toVector(Tensor) with a [0, ...shape] tensor)");
        }
        TensorDescriptor first = rows.get(0).descriptor();
        ArrowType valueType = checkConvertible(first);
        Physical p = physical(first, false);
        for (Tensor t : rows) {
            TensorDescriptor d = t.descriptor();
            if (d.elementType() != first.elementType() || !d.shape().equals(first.shape())
                    || !d.layout().equals(first.layout()) || d.quantization().isPresent()) {
                throw new ArrowTensorException("column '" + name + "': a fixed-shape column needs one element type and shape; "
                        + describe(first) + " and " + describe(d) + " differ");
            }
        }
        long rowElems = first.elementCount();
        long elems = Math.multiplyExact(rowElems, (long) rows.size());
        checkColumnElements(elems, name);
        long rowBytes = first.elementType().byteSizeOf(rowElems);
        FixedShapeTensorType type = new FixedShapeTensorType(p.shape, dimNames(first, p.shape.length), p.permutation);
        try (ArrowBuf data = allocator.buffer(Math.max(1, rowBytes * rows.size()))) {
            MemorySegment dst = segment(data, rowBytes * rows.size());
            long at = 0;
            for (Tensor t : rows) {
                MemorySegment.copy(t.buffer(0), t.descriptor().byteOffset(), dst, at, rowBytes);
                at += rowBytes;
            }
            return fixedColumn(type, name, valueType, rows.size(), data, allocator);
        }
    }

    /**
     * A variable-shape column, one row per tensor, copied: every tensor must have the same
     * element type and rank, and be row-major or strided as the same permutation of row-major
     * (the column's {@code permutation}). The {@code dim_names} come from the first tensor's
     * {@link #DIM_NAMES_KEY} metadata.
     *
     * @throws ArrowTensorException for an empty list, differing element types, ranks or
     *     permutations, another layout, or as {@link #toVector(Tensor, String, BufferAllocator)}
     */
    public static VariableShapeTensorVector toVariableVector(List<Tensor> rows, String name, BufferAllocator allocator)
            throws ArrowTensorException {
        return toVariableVector(rows, name, null, allocator);
    }

    /**
     * As {@link #toVariableVector(List, String, BufferAllocator)} with the column's type given
     * (to keep {@code dim_names} and {@code uniform_shape}); null derives it from the tensors.
     *
     * @throws ArrowTensorException also when a tensor breaks the type's permutation, rank or
     *     {@code uniform_shape}
     */
    public static VariableShapeTensorVector toVariableVector(List<Tensor> rows, String name, VariableShapeTensorType type,
                                                             BufferAllocator allocator) throws ArrowTensorException {
        Objects.requireNonNull(name, "name");
        if (rows.isEmpty()) {
            throw new ArrowTensorException("column '" + name + "': no tensors (the element type and rank of an empty "
                    + "column are unknown)");
        }
        TensorDescriptor first = rows.get(0).descriptor();
        ArrowType valueType = checkConvertible(first);
        int ndim = first.shape().rank();
        int[] perm = physical(first, false).permutation;
        if (type == null) {
            type = new VariableShapeTensorType(dimNames(first, ndim), perm, null);
        }
        try {
            type.checkRank(ndim);
        } catch (IllegalArgumentException e) {
            throw new ArrowTensorException("column '" + name + "': " + e.getMessage());
        }
        int[] want = type.permutation().orElse(null);
        Long[] uniform = type.uniformShape().orElse(null);
        int n = checkedCount(rows.size(), "rows");
        long[][] shapes = new long[n][];
        long total = 0;
        for (int i = 0; i < n; i++) {
            TensorDescriptor d = rows.get(i).descriptor();
            checkConvertible(d);
            if (d.elementType() != first.elementType() || d.shape().rank() != ndim) {
                throw new ArrowTensorException("column '" + name + "': a variable-shape column needs one element type and "
                        + "rank; " + describe(first) + " and " + describe(d) + " differ");
            }
            Physical p = d.layout().kind() == Layout.Kind.ROW_MAJOR && want == null ? physical(d, false)
                    : withPermutation(d, want, false);
            if (p == null) {
                throw new ArrowTensorException("column '" + name + "': " + describe(d) + " is " + d.layout()
                        + ", not the column's permutation " + Arrays.toString(want) + " of row-major");
            }
            for (int j = 0; j < ndim; j++) {
                if (p.shape[j] > Integer.MAX_VALUE) {
                    throw new ArrowTensorException("column '" + name + "': " + describe(d) + " has a dimension over 2^31-1");
                }
                if (uniform != null && uniform[j] != null && uniform[j] != p.shape[j]) {
                    throw new ArrowTensorException("column '" + name + "': " + describe(d) + " breaks uniform_shape "
                            + Arrays.toString(uniform));
                }
            }
            shapes[i] = p.shape;
            total += d.elementCount();
            checkColumnElements(total, name);
        }
        ElementType et = first.elementType();
        Field field = type.field(name, valueType, ndim, true);
        VariableShapeTensorVector v = (VariableShapeTensorVector) field.createVector(allocator);
        try (ArrowBuf offsets = allocator.buffer(4L * (n + 1));
             ArrowBuf values = allocator.buffer(Math.max(1, et.byteSizeOf(total)));
             ArrowBuf shapeBuf = allocator.buffer(Math.max(1, 4L * n * ndim))) {
            MemorySegment dst = segment(values, et.byteSizeOf(total));
            long at = 0;
            int elems = 0;
            offsets.setInt(0, 0);
            for (int i = 0; i < n; i++) {
                TensorDescriptor d = rows.get(i).descriptor();
                long bytes = et.byteSizeOf(d.elementCount());
                // Row-major, or a permutation of it: the physical elements are contiguous either way.
                MemorySegment.copy(rows.get(i).buffer(0), d.byteOffset(), dst, at, bytes);
                at += bytes;
                elems += (int) d.elementCount();
                offsets.setInt(4L * (i + 1), elems);
                for (int j = 0; j < ndim; j++) {
                    shapeBuf.setInt(4L * ((long) i * ndim + j), (int) shapes[i][j]);
                }
            }
            load(v.getUnderlyingVector(), n, allocator.getEmpty());
            ListVector data = v.data();
            load(data, n, allocator.getEmpty(), offsets);
            load(data.getDataVector(), elems, allocator.getEmpty(), values);
            FixedSizeListVector shape = v.shapes();
            load(shape, n, allocator.getEmpty());
            load(shape.getDataVector(), (long) n * ndim, allocator.getEmpty(), shapeBuf);
            return v;
        } catch (ArrowTensorException | RuntimeException | Error e) {
            v.close();
            throw e;
        }
    }

    private static FixedShapeTensorVector fixedColumn(FixedShapeTensorType type, String name, ArrowType valueType,
                                                      int rows, ArrowBuf data, BufferAllocator allocator) {
        Field field = type.field(name, valueType, true);
        FixedShapeTensorVector v = (FixedShapeTensorVector) field.createVector(allocator);
        try {
            load(v.getUnderlyingVector(), rows, allocator.getEmpty());
            load(v.values(), rows * type.listSize(), allocator.getEmpty(), data);
            return v;
        } catch (RuntimeException | Error e) {
            v.close();
            throw e;
        }
    }

    /** Loads a vector's own buffers with no nulls (Arrow then makes an all-valid validity buffer). */
    private static void load(FieldVector v, long length, ArrowBuf... buffers) {
        v.loadFieldBuffers(new ArrowFieldNode(length, 0), List.of(buffers));
    }

    /** The element type Arrow uses for {@code d}, or why there is none. */
    private static ArrowType checkConvertible(TensorDescriptor d) throws ArrowTensorException {
        if (d.quantization().isPresent()) {
            throw new ArrowTensorException(describe(d) + " is quantized (" + d.quantization().get()
                    + "); Arrow has no quantized tensors: dequantize() it first");
        }
        try {
            return arrowType(d.elementType());
        } catch (ArrowTensorException e) {
            throw new ArrowTensorException(describe(d) + ": " + e.getMessage());
        }
    }

    /** The physical shape and permutation of a dense tensor (without its first dimension when {@code batch}). */
    private record Physical(long[] shape, int[] permutation) {
    }

    private static Physical physical(TensorDescriptor d, boolean batch) throws ArrowTensorException {
        long[] dims = d.shape().dims();
        int skip = batch ? 1 : 0;
        long[] inner = Arrays.copyOfRange(dims, skip, dims.length);
        Layout l = d.layout();
        if (l.kind() == Layout.Kind.ROW_MAJOR || (l.kind() == Layout.Kind.COLUMN_MAJOR && inner.length <= 1 && skip == 0)) {
            return new Physical(inner, null);
        }
        if (l.kind() != Layout.Kind.STRIDED) {
            throw new ArrowTensorException(describe(d) + " is " + l + "; Arrow tensors are row-major (optionally permuted): "
                    + (l.kind().isSparse() || l.kind() == Layout.Kind.PAGED ? "densify() or gather() it first" : "copy it to row-major first"));
        }
        long[] strides = l.strides();
        int r = inner.length;
        Integer[] order = new Integer[r];
        for (int i = 0; i < r; i++) {
            order[i] = i;
        }
        // Physical dimension k is the logical dimension with the k-th largest stride.
        Arrays.sort(order, (a, b) -> Long.compare(strides[b + skip], strides[a + skip]) != 0
                ? Long.compare(strides[b + skip], strides[a + skip]) : Integer.compare(a, b));
        int[] perm = new int[r];
        for (int k = 0; k < r; k++) {
            perm[order[k]] = k;
        }
        boolean identity = true;
        for (int i = 0; i < r; i++) {
            identity &= perm[i] == i;
        }
        Physical p = identity ? null : withPermutation(d, perm, batch);
        if (p == null) {
            p = withPermutation(d, null, batch);
        }
        if (p == null) {
            throw new ArrowTensorException(describe(d) + " has strides " + Arrays.toString(strides)
                    + ", which are not a permutation of a contiguous row-major layout; copy it to row-major first");
        }
        return p;
    }

    /**
     * The physical shape of {@code d} read with {@code perm} (null: the identity), or null when
     * its layout is not that permutation of row-major. Dimensions of size 1 may have any stride.
     */
    private static Physical withPermutation(TensorDescriptor d, int[] perm, boolean batch) {
        long[] dims = d.shape().dims();
        int skip = batch ? 1 : 0;
        int r = dims.length - skip;
        long[] phys = new long[r];
        for (int i = 0; i < r; i++) {
            phys[perm == null ? i : perm[i]] = dims[i + skip];
        }
        if (d.layout().kind() == Layout.Kind.ROW_MAJOR) {
            return perm == null ? new Physical(phys, null) : null;
        }
        if (d.layout().kind() != Layout.Kind.STRIDED || d.elementCount() == 0) {
            return d.layout().kind() == Layout.Kind.STRIDED ? new Physical(phys, perm) : null;
        }
        long[] strides = d.layout().strides();
        long[] rowMajor = new long[r];
        long s = 1;
        for (int k = r - 1; k >= 0; k--) {
            rowMajor[k] = s;
            s *= phys[k];
        }
        for (int i = 0; i < r; i++) {
            if (dims[i + skip] > 1 && strides[i + skip] != rowMajor[perm == null ? i : perm[i]]) {
                return null;
            }
        }
        if (batch && dims[0] > 1 && strides[0] != s) {
            return null;
        }
        return new Physical(phys, perm);
    }

    private static List<String> dimNames(TensorDescriptor d, int rank) {
        List<String> names = d.metadataString(DIM_NAMES_KEY).map(ExtensionJson::parseStringArray).orElse(null);
        return names != null && names.size() == rank ? names : null;
    }

    private static void checkColumnElements(long elems, String name) throws ArrowTensorException {
        if (elems > Integer.MAX_VALUE) {
            throw new ArrowTensorException("column '" + name + "': " + elems + " elements exceed 2^31-1, the most one "
                    + "Arrow Java vector holds; split the tensors into several record batches");
        }
    }

    // ------------------------------------------------------------------ Arrow -> Hurray

    /**
     * The whole column as one tensor of shape {@code [rows, ...logicalShape]}, without copying
     * where the elements are 64-byte aligned (see the class notes).
     *
     * @throws ArrowTensorException for a null row or element, an element type Hurray lacks, or
     *     storage smaller than the rows need
     */
    public static Tensor toTensor(FixedShapeTensorVector column) throws ArrowTensorException {
        return toTensor(column, null);
    }

    /** As {@link #toTensor(FixedShapeTensorVector)}, naming the tensor {@code name} (null for none). */
    public static Tensor toTensor(FixedShapeTensorVector column, String name) throws ArrowTensorException {
        return columnView(column, name).toTensor();
    }

    /** The whole column's elements and descriptor, without making a tensor (checked as {@link #toTensor}). */
    static View columnView(FixedShapeTensorVector column, String name) throws ArrowTensorException {
        FixedShapeTensorType type = column.type();
        int rows = column.getValueCount();
        if (column.getNullCount() > 0) {
            throw nullRow(column.getName(), firstNull(column, 0, rows));
        }
        FieldVector values = column.values();
        long elems = (long) rows * type.listSize();
        TensorDescriptor d = columnDescriptor(column, rows, name);
        checkValues(column.getName(), values, 0, elems);
        return new View(d, values.getDataBuffer(), 0, d.elementType().byteSizeOf(elems));
    }

    /**
     * The descriptor of {@code rows} rows of {@code column} as one tensor {@code [rows,
     * ...logicalShape]}, from its type alone (the vector's buffers are not read).
     */
    static TensorDescriptor columnDescriptor(FixedShapeTensorVector column, long rows, String name)
            throws ArrowTensorException {
        FixedShapeTensorType type = column.type();
        ElementType et = valueType(column.getName(), column.values());
        long[] logical = type.logicalShape();
        long[] dims = new long[logical.length + 1];
        dims[0] = rows;
        System.arraycopy(logical, 0, dims, 1, logical.length);
        return descriptor(et, dims, type.shape(), type.permutation().orElse(null), true,
                type.dimNames().orElse(null), name, column.getName());
    }

    /**
     * Row {@code index} as a tensor of the column's logical shape, without copying where the
     * row starts on a 64-byte boundary.
     *
     * @throws ArrowTensorException for a null row or element, or as {@link #toTensor(FixedShapeTensorVector)}
     * @throws IndexOutOfBoundsException for an index outside the column
     */
    public static Tensor row(FixedShapeTensorVector column, int index) throws ArrowTensorException {
        return row(column, index, null);
    }

    /** As {@link #row(FixedShapeTensorVector, int)}, naming the tensor {@code name} (null for none). */
    public static Tensor row(FixedShapeTensorVector column, int index, String name) throws ArrowTensorException {
        TensorDescriptor template = rowTemplate(column);
        return rowView(column, index, name == null ? template : named(template, name, column.getName())).toTensor();
    }

    /** The unnamed descriptor of every row of {@code column}, checking its element storage once. */
    static TensorDescriptor rowTemplate(FixedShapeTensorVector column) throws ArrowTensorException {
        FixedShapeTensorType type = column.type();
        FieldVector values = column.values();
        ElementType et = valueType(column.getName(), values);
        return descriptor(et, type.logicalShape(), type.shape(), type.permutation().orElse(null), false,
                type.dimNames().orElse(null), null, column.getName());
    }

    static TensorDescriptor named(TensorDescriptor template, String name, String col) throws ArrowTensorException {
        try {
            return template.withName(name);
        } catch (IllegalArgumentException e) {
            throw new ArrowTensorException("column '" + col + "': " + e.getMessage(), e);
        }
    }

    /**
     * True when no row of {@code column}'s first {@code rows} is null, none of their elements
     * is, and the storage holds them all: {@link #rowView(FixedShapeTensorVector, int, TensorDescriptor, boolean)}
     * may then skip its per-row checks. One pass over the validity bits for the whole batch.
     */
    static boolean allRowsValid(FixedShapeTensorVector column, int rows) {
        try {
            if (rows > column.getValueCount() || column.getNullCount() > 0) {
                return false;
            }
            checkValues(column.getName(), column.values(), 0, (long) rows * column.type().listSize());
            return true;
        } catch (ArrowTensorException e) {
            return false; // the per-row checks name the fault
        }
    }

    static View rowView(FixedShapeTensorVector column, int index, TensorDescriptor d) throws ArrowTensorException {
        return rowView(column, index, d, false);
    }

    /**
     * Row {@code index} with descriptor {@code d} (from {@link #rowTemplate}), checked for null
     * unless {@code checked} says {@link #allRowsValid} held for the batch.
     */
    static View rowView(FixedShapeTensorVector column, int index, TensorDescriptor d, boolean checked)
            throws ArrowTensorException {
        Objects.checkIndex(index, column.getValueCount());
        int listSize = column.type().listSize();
        ElementType et = d.elementType();
        if (!checked) {
            if (column.isNull(index)) {
                throw nullRow(column.getName(), index);
            }
            checkValues(column.getName(), column.values(), (long) index * listSize, listSize);
        }
        return new View(d, column.values().getDataBuffer(), et.byteSizeOf((long) index * listSize), et.byteSizeOf(listSize));
    }


    /**
     * Row {@code index} as a tensor of its own logical shape, without copying where its elements
     * start on a 64-byte boundary.
     *
     * @throws ArrowTensorException for a null row or element, a negative size, a shape that
     *     breaks {@code uniform_shape} or whose product differs from the row's element count,
     *     offsets outside the data, or malformed storage
     * @throws IndexOutOfBoundsException for an index outside the column
     */
    public static Tensor row(VariableShapeTensorVector column, int index) throws ArrowTensorException {
        return row(column, index, null);
    }

    /** As {@link #row(VariableShapeTensorVector, int)}, naming the tensor {@code name} (null for none). */
    public static Tensor row(VariableShapeTensorVector column, int index, String name) throws ArrowTensorException {
        return rowView(column, index, name).toTensor();
    }

    /** Row {@code index}'s elements and descriptor, checked as {@link #row(VariableShapeTensorVector, int)}. */
    static View rowView(VariableShapeTensorVector column, int index, String name) throws ArrowTensorException {
        Objects.checkIndex(index, column.getValueCount());
        String col = column.getName();
        if (column.isNull(index)) {
            throw nullRow(col, index);
        }
        VariableShapeTensorType type = column.type();
        ListVector data = column.data();
        FixedSizeListVector shapes = column.shapes();
        int ndim = shapes.getListSize();
        if (ndim > Shape.MAX_RANK) {
            throw new ArrowTensorException("column '" + col + "': rank " + ndim + " exceeds Hurray's maximum " + Shape.MAX_RANK);
        }
        try {
            type.checkRank(ndim);
        } catch (IllegalArgumentException e) {
            throw new ArrowTensorException("column '" + col + "': " + e.getMessage());
        }
        if (data.getValueCount() <= index || shapes.getValueCount() <= index || data.isNull(index) || shapes.isNull(index)) {
            throw new ArrowTensorException("column '" + col + "' row " + index + ": the data or shape child is null or "
                    + "shorter than the column");
        }
        IntVector sv = (IntVector) shapes.getDataVector();
        long first = (long) index * ndim;
        if (sv.getValueCount() < first + ndim || sv.getDataBuffer().capacity() < 4 * (first + ndim)) {
            throw new ArrowTensorException("column '" + col + "' row " + index + ": the shape child is shorter than "
                    + "its rows need");
        }
        long[] phys = new long[ndim];
        Long[] uniform = type.uniformShape().orElse(null);
        for (int j = 0; j < ndim; j++) {
            if (sv.isNull((int) (first + j))) {
                throw new ArrowTensorException("column '" + col + "' row " + index + ": shape[" + j + "] is null");
            }
            phys[j] = sv.get((int) (first + j));
            if (phys[j] < 0) {
                throw new ArrowTensorException("column '" + col + "' row " + index + ": shape[" + j + "] is negative ("
                        + phys[j] + ")");
            }
        }
        for (int j = 0; uniform != null && j < ndim; j++) {
            if (uniform[j] != null && uniform[j] != phys[j]) {
                throw new ArrowTensorException("column '" + col + "' row " + index + ": shape " + Arrays.toString(phys)
                        + " breaks uniform_shape " + Arrays.toString(uniform) + " at dimension " + j);
            }
        }
        ArrowBuf offsets = data.getOffsetBuffer();
        if (offsets.capacity() < 4L * (index + 2)) {
            throw new ArrowTensorException("column '" + col + "' row " + index + ": the data offsets are shorter than "
                    + "the rows need");
        }
        long start = offsets.getInt(4L * index);
        long end = offsets.getInt(4L * (index + 1));
        FieldVector values = data.getDataVector();
        if (start < 0 || end < start || end > values.getValueCount()) {
            throw new ArrowTensorException("column '" + col + "' row " + index + ": data offsets [" + start + ", " + end
                    + ") lie outside the " + values.getValueCount() + " elements");
        }
        long count = elementCount("column '" + col + "' row " + index, "shape", phys, Long.MAX_VALUE);
        if (count != end - start) {
            throw new ArrowTensorException("column '" + col + "' row " + index + ": shape " + Arrays.toString(phys)
                    + " has " + count + " elements but the row holds " + (end - start));
        }
        ElementType et = valueType(col, values);
        checkValues(col, values, start, count);
        int[] perm = type.permutation().orElse(null);
        long[] logical = phys;
        if (perm != null) {
            logical = new long[ndim];
            for (int i = 0; i < ndim; i++) {
                logical[i] = phys[perm[i]];
            }
        }
        TensorDescriptor d = descriptor(et, logical, phys, perm, false, type.dimNames().orElse(null), name, col);
        return new View(d, values.getDataBuffer(), et.byteSizeOf(start), et.byteSizeOf(count));
    }

    private static ElementType valueType(String col, FieldVector values) throws ArrowTensorException {
        try {
            return elementType(values.getField().getType());
        } catch (ArrowTensorException e) {
            throw new ArrowTensorException("column '" + col + "': " + e.getMessage());
        }
    }

    /** Checks elements {@code [start, start + count)} exist, are non-null and lie inside the data buffer. */
    private static void checkValues(String col, FieldVector values, long start, long count) throws ArrowTensorException {
        if (start + count > values.getValueCount()) {
            throw new ArrowTensorException("column '" + col + "': the rows need " + (start + count)
                    + " elements, the storage holds " + values.getValueCount());
        }
        long bytes = elementTypeUnchecked(values).byteSizeOf(start + count);
        if (values.getDataBuffer().capacity() < bytes) {
            throw new ArrowTensorException("column '" + col + "': the data buffer has " + values.getDataBuffer().capacity()
                    + " bytes, the rows need " + bytes);
        }
        long firstNull = firstNullElement(values, start, count);
        if (firstNull >= 0) {
            throw new ArrowTensorException("column '" + col + "': element " + firstNull + " is null; Hurray tensors have "
                    + "no null elements");
        }
    }

    /**
     * The first null among elements {@code [start, start + count)}, or -1, from the validity bits
     * of that range only (a vector's {@code getNullCount()} counts the whole buffer on every call,
     * which would make converting every row quadratic).
     */
    private static long firstNullElement(FieldVector values, long start, long count) {
        ArrowBuf validity = values.getValidityBuffer();
        if (count == 0) {
            return -1;
        }
        if (validity == null || validity.capacity() == 0) {
            return values.getNullCount() == 0 ? -1 : start; // no bitmap: all valid or all null
        }
        return ValidityBits.firstClear(MemorySegment.ofAddress(validity.memoryAddress()).reinterpret(validity.capacity()),
                start, count);
    }

    private static ElementType elementTypeUnchecked(FieldVector values) throws ArrowTensorException {
        return elementType(values.getField().getType());
    }

    private static TensorDescriptor descriptor(ElementType et, long[] dims, long[] physical, int[] perm, boolean batch,
                                               List<String> names, String name, String col) throws ArrowTensorException {
        if (dims.length > Shape.MAX_RANK) {
            throw new ArrowTensorException("column '" + col + "': rank " + dims.length + " exceeds Hurray's maximum "
                    + Shape.MAX_RANK);
        }
        try {
            TensorDescriptor.Builder b = TensorDescriptor.builder(et, dims);
            if (perm != null) {
                int r = physical.length;
                long[] rowMajor = new long[r];
                long s = 1;
                for (int k = r - 1; k >= 0; k--) {
                    rowMajor[k] = s;
                    s *= physical[k];
                }
                long[] strides = new long[dims.length];
                int skip = batch ? 1 : 0;
                if (batch) {
                    strides[0] = s;
                }
                for (int i = 0; i < r; i++) {
                    strides[i + skip] = rowMajor[perm[i]];
                }
                long elems = s * (batch ? dims[0] : 1);
                b.layout(Layout.strided(strides)).buffer(BufferSpec.cpu(et.byteSizeOf(elems)));
            }
            if (names != null) {
                b.metadata(DIM_NAMES_KEY, ExtensionJson.stringArray(names));
            }
            if (name != null) {
                b.name(name);
            }
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new ArrowTensorException("column '" + col + "': " + e.getMessage(), e);
        }
    }

    /**
     * A tensor's descriptor and where its elements lie in Arrow memory: {@code bytes} bytes of
     * {@code buffer} from {@code offset}, valid while the vector holds the buffer.
     */
    record View(TensorDescriptor descriptor, ArrowBuf buffer, long offset, long bytes) {
        /**
         * The elements in place (no copy, any alignment), for writers that take payload
         * segments. The segment belongs to {@code scope}: the caller closes it before the vector
         * can release the buffer, so a segment kept past that throws instead of reading freed
         * memory.
         */
        MemorySegment segment(java.lang.foreign.Arena scope) {
            return bytes == 0 ? EMPTY : MemorySegment.ofAddress(buffer.memoryAddress() + offset).reinterpret(bytes, scope, null);
        }

        /** Holds a reference to the Arrow memory (until {@link #release()}), so it outlives its vector. */
        View retain() {
            buffer.getReferenceManager().retain();
            return this;
        }

        /** Drops the reference {@link #retain()} took. */
        void release() {
            buffer.getReferenceManager().release();
        }

        Tensor toTensor() {
            return wrapOrCopy(buffer, offset, bytes, descriptor);
        }
    }

    private static final MemorySegment EMPTY = java.lang.foreign.Arena.global().allocate(64, 64).asSlice(0, 0);

    /**
     * A tensor over {@code bytes} bytes of {@code buf} from {@code offset}: the Arrow memory itself
     * (holding a reference) when 64-byte aligned, else a copy.
     */
    private static Tensor wrapOrCopy(ArrowBuf buf, long offset, long bytes, TensorDescriptor d) {
        long address = buf.memoryAddress() + offset;
        if (bytes > 0 && address % DEFAULT_ALIGNMENT == 0) {
            org.apache.arrow.memory.ReferenceManager rm = buf.getReferenceManager();
            rm.retain();
            ExternalBuffer eb;
            try {
                eb = ExternalBuffer.wrap(MemorySegment.ofAddress(address).reinterpret(bytes), rm::release);
            } catch (RuntimeException | Error e) {
                rm.release(); // wrap never runs the release action when it throws
                return copy(buf, offset, bytes, d);
            }
            try (eb) {
                return eb.asTensor(d);
            }
        }
        return copy(buf, offset, bytes, d);
    }

    private static Tensor copy(ArrowBuf buf, long offset, long bytes, TensorDescriptor d) {
        Tensor t = Tensor.allocate(d, TensorScope.SHARED);
        if (bytes > 0) {
            MemorySegment.copy(MemorySegment.ofAddress(buf.memoryAddress() + offset).reinterpret(bytes), 0, t.buffer(0), 0, bytes);
        }
        return t;
    }

    private static final int DEFAULT_ALIGNMENT = 64;

    private static MemorySegment segment(ArrowBuf buf, long bytes) {
        return MemorySegment.ofAddress(buf.memoryAddress()).reinterpret(bytes);
    }

    private static ArrowTensorException nullRow(String col, long row) {
        return new ArrowTensorException("column '" + col + "' row " + row + " is null; Hurray tensors have no null rows");
    }

    private static long firstNull(FieldVector v, int from, int to) {
        for (int i = from; i < to; i++) {
            if (v.isNull(i)) {
                return i;
            }
        }
        return -1;
    }

    private static int checkedCount(long n, String what) throws ArrowTensorException {
        if (n > Integer.MAX_VALUE) {
            throw new ArrowTensorException(n + " " + what + " exceed 2^31-1, the most one Arrow Java vector holds");
        }
        return (int) n;
    }

    /**
     * The product of {@code dims}, checked: every entry non-negative and the product at most
     * {@code max} (zero when a dimension is zero, whatever the others).
     *
     * @throws InvalidExtensionMetadataException naming {@code type} otherwise
     */
    static long elementCount(String type, String what, long[] dims, long max) {
        boolean zero = false;
        for (int i = 0; i < dims.length; i++) {
            if (dims[i] < 0) {
                throw ExtensionJson.bad(type, what + "[" + i + "] is negative: " + dims[i]);
            }
            zero |= dims[i] == 0;
        }
        if (zero) {
            return 0;
        }
        long n = 1;
        for (long d : dims) {
            if (n > max / d) {
                throw ExtensionJson.bad(type, what + " " + Arrays.toString(dims) + " has more than " + max + " elements");
            }
            n *= d;
        }
        return n;
    }

    static String describe(TensorDescriptor d) {
        return d.name().map(n -> "'" + n + "' ").orElse("") + d.elementType().formatName() + d.shape();
    }

    /** Releases a {@link TensorShare} when Arrow drops its last reference to the wrapped memory. */
    private static final class ShareAllocation extends ForeignAllocation {
        private final TensorShare share;

        ShareAllocation(TensorShare share, long address, long size) {
            super(size, address);
            this.share = share;
        }

        @Override
        protected void release0() {
            share.close();
        }
    }
}
