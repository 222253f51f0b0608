package dev.hurray.arrow;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.hash.ArrowBufHasher;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/** A column of {@link Bool8Type} over its int8 storage; {@link #getObject(int)} is a {@link Boolean} or null. */
public final class Bool8Vector extends ExtensionTypeVector<TinyIntVector> {
    Bool8Vector(String name, BufferAllocator allocator, TinyIntVector storage) {
        super(name, allocator, storage);
    }

    @Override
    public Field getField() {
        Field storage = getUnderlyingVector().getField();
        return new Field(getName(), new FieldType(storage.isNullable(), Bool8Type.INSTANCE, storage.getDictionary(),
                storage.getMetadata()), storage.getChildren());
    }

    @Override
    public Boolean getObject(int index) {
        return getUnderlyingVector().isNull(index) ? null : getUnderlyingVector().get(index) != 0;
    }

    @Override
    public int hashCode(int index) {
        return hashCode(index, null);
    }

    @Override
    public int hashCode(int index, ArrowBufHasher hasher) {
        return getUnderlyingVector().hashCode(index, hasher);
    }
}
