package dev.hurray.arrow;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.hash.ArrowBufHasher;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * A column of {@link VariableShapeTensorType} tensors over its {@code Struct<data, shape>}
 * storage. {@link #getObject(int)} gives the storage's view of a row (a map with {@code data}
 * and {@code shape}, or null); {@link ArrowTensors#row(VariableShapeTensorVector, int)} gives a
 * Hurray tensor.
 *
 * <p>Like every Arrow vector: owned by its allocator, closed by {@link #close()}, not thread-safe.
 */
public final class VariableShapeTensorVector extends ExtensionTypeVector<StructVector> {
    private final VariableShapeTensorType type;

    VariableShapeTensorVector(String name, BufferAllocator allocator, VariableShapeTensorType type, StructVector storage) {
        super(name, allocator, storage);
        this.type = type;
    }

    /** The extension type (dim_names, permutation, uniform_shape). */
    public VariableShapeTensorType type() {
        return type;
    }

    /**
     * The {@code data} child: a list of elements per row.
     *
     * @throws ArrowTensorException if the storage has no {@code data} child of type List
     */
    public ListVector data() throws ArrowTensorException {
        FieldVector v = getUnderlyingVector().getChild("data");
        if (!(v instanceof ListVector l)) {
            throw new ArrowTensorException("column '" + getName() + "' (" + VariableShapeTensorType.EXTENSION_NAME
                    + "): the storage needs a child 'data' of type List, has " + describe(v));
        }
        return l;
    }

    /**
     * The {@code shape} child: {@code ndim} int32 per row.
     *
     * @throws ArrowTensorException if the storage has no {@code shape} child of type
     *     FixedSizeList of int32
     */
    public FixedSizeListVector shapes() throws ArrowTensorException {
        FieldVector v = getUnderlyingVector().getChild("shape");
        if (!(v instanceof FixedSizeListVector f) || !(f.getDataVector() instanceof org.apache.arrow.vector.IntVector)) {
            throw new ArrowTensorException("column '" + getName() + "' (" + VariableShapeTensorType.EXTENSION_NAME
                    + "): the storage needs a child 'shape' of type FixedSizeList<int32>, has " + describe(v));
        }
        return f;
    }

    /** The rank: the {@code shape} child's list size. @throws ArrowTensorException as {@link #shapes()} */
    public int ndim() throws ArrowTensorException {
        return shapes().getListSize();
    }

    private static String describe(FieldVector v) {
        return v == null ? "none" : v.getField().getType().toString();
    }

    /** The field with the extension type (the storage's children below it), for schemas. */
    @Override
    public Field getField() {
        Field storage = getUnderlyingVector().getField();
        return new Field(getName(), new FieldType(storage.isNullable(), type, storage.getDictionary(),
                storage.getMetadata()), storage.getChildren());
    }

    @Override
    public Object getObject(int index) {
        return getUnderlyingVector().getObject(index);
    }

    @Override
    public int hashCode(int index) {
        return hashCode(index, null);
    }

    @Override
    public int hashCode(int index, ArrowBufHasher hasher) {
        return getUnderlyingVector().hashCode(index, hasher);
    }

    @Override
    public String toString() {
        return "VariableShapeTensorVector[" + getName() + ": " + type + ", " + getValueCount() + " rows]";
    }
}
