package dev.hurray.arrow;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * Arrow's canonical {@code arrow.bool8} extension type: booleans stored one per byte as int8
 * (0 is false, anything else true), which is Hurray's {@code bool} layout, so tensors of
 * booleans cross without unpacking Arrow's bit-packed {@code Bool}. Its metadata is empty.
 * Registered by {@link ArrowTensors#register()}. Immutable and thread-safe.
 */
public final class Bool8Type extends ArrowType.ExtensionType {
    /** The extension name, {@value}. */
    public static final String EXTENSION_NAME = "arrow.bool8";
    /** The one instance (the type has no parameters). */
    public static final Bool8Type INSTANCE = new Bool8Type();

    private Bool8Type() {
    }

    @Override
    public ArrowType storageType() {
        return new ArrowType.Int(8, true);
    }

    @Override
    public String extensionName() {
        return EXTENSION_NAME;
    }

    @Override
    public boolean extensionEquals(ArrowType.ExtensionType other) {
        return other instanceof Bool8Type;
    }

    @Override
    public String serialize() {
        return "";
    }

    @Override
    public ArrowType deserialize(ArrowType storageType, String serializedData) {
        if (!storageType.equals(storageType())) {
            throw ExtensionJson.bad(EXTENSION_NAME, "storage must be int8, got " + storageType);
        }
        return INSTANCE;
    }

    @Override
    public FieldVector getNewVector(String name, FieldType fieldType, BufferAllocator allocator) {
        FieldType storage = new FieldType(fieldType.isNullable(), storageType(), fieldType.getDictionary(),
                fieldType.getMetadata());
        return new Bool8Vector(name, allocator, new TinyIntVector(name, storage, allocator));
    }

    @Override
    public int hashCode() {
        return EXTENSION_NAME.hashCode();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Bool8Type;
    }
}
