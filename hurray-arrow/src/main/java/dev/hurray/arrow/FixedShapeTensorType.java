package dev.hurray.arrow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * Arrow's canonical {@code arrow.fixed_shape_tensor} extension type: every row is one tensor of
 * the same {@linkplain #shape() shape}, stored as {@code FixedSizeList<T>[product(shape)]} in
 * row-major order of that (physical) shape.
 *
 * <p>The metadata is the JSON object {@code {"shape": [...], "dim_names": [...], "permutation": [...]}};
 * {@code dim_names} name the physical dimensions and {@code permutation} says that logical
 * dimension {@code i} is physical dimension {@code permutation[i]} (so the logical shape is
 * {@code shape[permutation[i]]}). The element type {@code T} is the storage list's child field,
 * not a parameter of this type (as in Arrow Java's other nested types): make fields with
 * {@link #field(String, ArrowType, boolean)}.
 *
 * <p>Registered with Arrow's {@code ExtensionTypeRegistry} by {@link ArrowTensors#register()}
 * (which every entry point of this module calls), so Arrow's IPC readers produce
 * {@link FixedShapeTensorVector}s for such columns. Metadata that breaks the rules above
 * (invalid JSON, a negative dimension, a product that differs from the list size or exceeds
 * {@code Integer.MAX_VALUE}, a bad permutation) makes the reader fail with an
 * {@link org.apache.arrow.vector.extension.InvalidExtensionMetadataException} naming the type.
 *
 * <p>Immutable and thread-safe.
 */
public final class FixedShapeTensorType extends ArrowType.ExtensionType {
    /** The extension name, {@value}. */
    public static final String EXTENSION_NAME = "arrow.fixed_shape_tensor";

    private final long[] shape;
    private final java.util.List<String> dimNames;
    private final int[] permutation;
    private final int listSize;

    /**
     * A type of tensors of physical shape {@code shape}.
     *
     * @param shape the physical shape (rank 0 allowed: one element per row)
     * @param dimNames the physical dimensions' names, or null
     * @param permutation the logical-to-physical dimension map, or null for the identity
     * @throws org.apache.arrow.vector.extension.InvalidExtensionMetadataException for a negative
     *     dimension, a product over {@code Integer.MAX_VALUE}, a rank over 32, or names or a
     *     permutation whose length differs from the rank
     */
    public FixedShapeTensorType(long[] shape, java.util.List<String> dimNames, int[] permutation) {
        this.shape = Objects.requireNonNull(shape, "shape").clone();
        this.dimNames = dimNames == null ? null : java.util.List.copyOf(dimNames);
        this.permutation = permutation == null ? null : permutation.clone();
        ExtensionJson.checkRank(EXTENSION_NAME, shape.length);
        this.listSize = (int) ArrowTensors.elementCount(EXTENSION_NAME, "shape", shape, Integer.MAX_VALUE);
        if (this.dimNames != null && this.dimNames.size() != shape.length) {
            throw ExtensionJson.bad(EXTENSION_NAME, "dim_names has " + this.dimNames.size() + " names for "
                    + shape.length + " dimensions");
        }
        if (this.permutation != null) {
            ExtensionJson.checkPermutation(EXTENSION_NAME, this.permutation, shape.length);
        }
    }

    /** A type of row-major tensors of {@code shape}, without names or permutation. */
    public static FixedShapeTensorType of(long... shape) {
        return new FixedShapeTensorType(shape, null, null);
    }

    /** The physical shape (a copy). */
    public long[] shape() {
        return shape.clone();
    }

    /** The rank. */
    public int ndim() {
        return shape.length;
    }

    /** The physical dimensions' names, if given. */
    public Optional<java.util.List<String>> dimNames() {
        return Optional.ofNullable(dimNames);
    }

    /** The permutation, if given (a copy). */
    public Optional<int[]> permutation() {
        return Optional.ofNullable(permutation).map(int[]::clone);
    }

    /** The logical shape: {@code shape[permutation[i]]} ({@link #shape()} without a permutation). */
    public long[] logicalShape() {
        if (permutation == null) {
            return shape.clone();
        }
        long[] l = new long[shape.length];
        for (int i = 0; i < l.length; i++) {
            l[i] = shape[permutation[i]];
        }
        return l;
    }

    /** Elements per tensor: the storage list size, {@code product(shape)}. */
    public int listSize() {
        return listSize;
    }

    /**
     * A field of this type whose tensors hold {@code valueType} elements (the storage list's
     * child is named {@code item}, as pyarrow and Arrow C++ name it).
     */
    public Field field(String name, ArrowType valueType, boolean nullable) {
        Field item = ArrowTensors.valueField(valueType);
        return new Field(name, new FieldType(nullable, this, null), java.util.List.of(item));
    }

    @Override
    public ArrowType storageType() {
        return new ArrowType.FixedSizeList(listSize);
    }

    @Override
    public String extensionName() {
        return EXTENSION_NAME;
    }

    @Override
    public boolean extensionEquals(ArrowType.ExtensionType other) {
        return other instanceof FixedShapeTensorType o && Arrays.equals(shape, o.shape)
                && Objects.equals(dimNames, o.dimNames) && Arrays.equals(permutation, o.permutation);
    }

    @Override
    public String serialize() {
        ObjectNode o = ExtensionJson.object();
        ExtensionJson.put(o, "shape", shape);
        if (dimNames != null) {
            ExtensionJson.put(o, "dim_names", dimNames);
        }
        if (permutation != null) {
            ExtensionJson.put(o, "permutation", permutation);
        }
        return ExtensionJson.write(o);
    }

    @Override
    public ArrowType deserialize(ArrowType storageType, String serializedData) {
        if (!(storageType instanceof ArrowType.FixedSizeList fsl)) {
            throw ExtensionJson.bad(EXTENSION_NAME, "storage must be a FixedSizeList, got " + storageType);
        }
        JsonNode obj = ExtensionJson.parse(EXTENSION_NAME, serializedData);
        long[] shape = ExtensionJson.dims(EXTENSION_NAME, obj, "shape");
        if (shape == null) {
            throw ExtensionJson.bad(EXTENSION_NAME, "metadata has no \"shape\"");
        }
        FixedShapeTensorType t = new FixedShapeTensorType(shape, ExtensionJson.strings(EXTENSION_NAME, obj, "dim_names"),
                ExtensionJson.permutation(EXTENSION_NAME, obj));
        if (t.listSize != fsl.getListSize()) {
            throw ExtensionJson.bad(EXTENSION_NAME, "shape " + Arrays.toString(shape) + " has " + t.listSize
                    + " elements but the storage is FixedSizeList[" + fsl.getListSize() + "]");
        }
        return t;
    }

    @Override
    public FieldVector getNewVector(String name, FieldType fieldType, BufferAllocator allocator) {
        FieldType storage = new FieldType(fieldType.isNullable(), storageType(), fieldType.getDictionary(),
                fieldType.getMetadata());
        return new FixedShapeTensorVector(name, allocator, this, new FixedSizeListVector(name, allocator, storage, null));
    }

    @Override
    public int hashCode() {
        return Objects.hash(super.hashCode(), Arrays.hashCode(shape), dimNames, Arrays.hashCode(permutation));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FixedShapeTensorType t && extensionEquals(t);
    }

    /** E.g. {@code arrow.fixed_shape_tensor[shape=[2, 3], dim_names=[H, W], permutation=[1, 0]]}. */
    @Override
    public String toString() {
        return EXTENSION_NAME + "[shape=" + Arrays.toString(shape)
                + (dimNames == null ? "" : ", dim_names=" + dimNames)
                + (permutation == null ? "" : ", permutation=" + Arrays.toString(permutation)) + "]";
    }
}
