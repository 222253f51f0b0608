package dev.hurray.arrow;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.hash.ArrowBufHasher;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * A column of {@link FixedShapeTensorType} tensors over its {@code FixedSizeList} storage.
 * {@link #getObject(int)} gives the storage's view of a row (a list of the elements in physical
 * row-major order, or null); {@link ArrowTensors#toTensor(FixedShapeTensorVector)} and
 * {@link ArrowTensors#row(FixedShapeTensorVector, int)} give Hurray tensors.
 *
 * <p>Like every Arrow vector: owned by its allocator, closed by {@link #close()}, not thread-safe.
 */
public final class FixedShapeTensorVector extends ExtensionTypeVector<FixedSizeListVector> {
    private final FixedShapeTensorType type;

    FixedShapeTensorVector(String name, BufferAllocator allocator, FixedShapeTensorType type, FixedSizeListVector storage) {
        super(name, allocator, storage);
        this.type = type;
    }

    /** The extension type (shape, dim_names, permutation). */
    public FixedShapeTensorType type() {
        return type;
    }

    /** The storage's child: the elements of all rows, row after row. */
    public FieldVector values() {
        return getUnderlyingVector().getDataVector();
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
        return "FixedShapeTensorVector[" + getName() + ": " + type + " of " + values().getField().getType()
                + ", " + getValueCount() + " rows]";
    }

    /** The children's fields (for {@link FixedShapeTensorType#field}). */
    List<Field> childFields() {
        return getUnderlyingVector().getField().getChildren();
    }
}
