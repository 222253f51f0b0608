package dev.hurray.arrow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * Arrow's canonical {@code arrow.variable_shape_tensor} extension type: every row is one tensor
 * of its own shape, stored as {@code Struct<data: List<T>, shape: FixedSizeList<int32>[ndim]>}
 * (row-major elements in {@code data}, the physical shape in {@code shape}).
 *
 * <p>The metadata is a JSON object with the optional {@code dim_names} (physical dimensions'
 * names), {@code permutation} (logical dimension {@code i} is physical dimension
 * {@code permutation[i]}) and {@code uniform_shape} (one entry per dimension: its size in every
 * row, or null where it varies). The element type and the rank live in the storage's children:
 * make fields with {@link #field(String, ArrowType, int, boolean)}.
 *
 * <p>Registered by {@link ArrowTensors#register()}; Arrow's IPC readers then produce
 * {@link VariableShapeTensorVector}s. Invalid metadata fails the read with an
 * {@link org.apache.arrow.vector.extension.InvalidExtensionMetadataException} naming the type;
 * rows whose shape breaks {@code uniform_shape}, or whose element count differs from the
 * product of their shape, are refused when converted.
 *
 * <p>Immutable and thread-safe.
 */
public final class VariableShapeTensorType extends ArrowType.ExtensionType {
    /** The extension name, {@value}. */
    public static final String EXTENSION_NAME = "arrow.variable_shape_tensor";

    private final java.util.List<String> dimNames;
    private final int[] permutation;
    private final Long[] uniformShape;

    /**
     * A type with the given optional parameters (each null or one entry per dimension).
     *
     * @throws org.apache.arrow.vector.extension.InvalidExtensionMetadataException if the given
     *     parameters disagree on the rank, the permutation is not one, a uniform size is negative,
     *     or the rank exceeds 32
     */
    public VariableShapeTensorType(java.util.List<String> dimNames, int[] permutation, Long[] uniformShape) {
        this.dimNames = dimNames == null ? null : java.util.List.copyOf(dimNames);
        this.permutation = permutation == null ? null : permutation.clone();
        this.uniformShape = uniformShape == null ? null : uniformShape.clone();
        int rank = -1;
        for (int n : new int[] {dimNames == null ? -1 : dimNames.size(), permutation == null ? -1 : permutation.length,
                uniformShape == null ? -1 : uniformShape.length}) {
            if (n >= 0 && rank >= 0 && n != rank) {
                throw ExtensionJson.bad(EXTENSION_NAME, "dim_names, permutation and uniform_shape give different ranks");
            }
            rank = n >= 0 ? n : rank;
        }
        if (rank >= 0) {
            ExtensionJson.checkRank(EXTENSION_NAME, rank);
        }
        if (this.permutation != null) {
            ExtensionJson.checkPermutation(EXTENSION_NAME, this.permutation, this.permutation.length);
        }
        if (this.uniformShape != null) {
            for (int i = 0; i < this.uniformShape.length; i++) {
                Long u = this.uniformShape[i];
                if (u != null && (u < 0 || u > Integer.MAX_VALUE)) {
                    throw ExtensionJson.bad(EXTENSION_NAME, "uniform_shape[" + i + "] is not an int32 size: " + u);
                }
            }
        }
    }

    /** A type without optional parameters. */
    public static VariableShapeTensorType of() {
        return new VariableShapeTensorType(null, null, null);
    }

    /** The physical dimensions' names, if given. */
    public Optional<java.util.List<String>> dimNames() {
        return Optional.ofNullable(dimNames);
    }

    /** The permutation, if given (a copy). */
    public Optional<int[]> permutation() {
        return Optional.ofNullable(permutation).map(int[]::clone);
    }

    /** The uniform sizes (null entries for varying dimensions), if given (a copy). */
    public Optional<Long[]> uniformShape() {
        return Optional.ofNullable(uniformShape).map(Long[]::clone);
    }

    /**
     * A field of this type: {@code data: List<valueType>} and {@code shape: FixedSizeList<int32>[ndim]}.
     *
     * @throws IllegalArgumentException if {@code ndim} is negative, over 32, or differs from the
     *     rank the parameters give
     */
    public Field field(String name, ArrowType valueType, int ndim, boolean nullable) {
        if (ndim < 0 || ndim > ExtensionJson.MAX_RANK) {
            throw new IllegalArgumentException("rank " + ndim + " outside 0.." + ExtensionJson.MAX_RANK);
        }
        checkRank(ndim);
        Field data = new Field("data", FieldType.notNullable(ArrowType.List.INSTANCE), java.util.List.of(ArrowTensors.valueField(valueType)));
        Field shape = new Field("shape", FieldType.notNullable(new ArrowType.FixedSizeList(ndim)),
                java.util.List.of(new Field("item", FieldType.notNullable(new ArrowType.Int(32, true)), null)));
        return new Field(name, new FieldType(nullable, this, null), java.util.List.of(data, shape));
    }

    /** Throws unless the optional parameters fit {@code ndim} dimensions. */
    void checkRank(int ndim) {
        if ((dimNames != null && dimNames.size() != ndim) || (permutation != null && permutation.length != ndim)
                || (uniformShape != null && uniformShape.length != ndim)) {
            throw new IllegalArgumentException(EXTENSION_NAME + ": the parameters of " + this + " do not fit "
                    + ndim + " dimensions");
        }
    }

    @Override
    public ArrowType storageType() {
        return ArrowType.Struct.INSTANCE;
    }

    @Override
    public String extensionName() {
        return EXTENSION_NAME;
    }

    @Override
    public boolean extensionEquals(ArrowType.ExtensionType other) {
        return other instanceof VariableShapeTensorType o && Objects.equals(dimNames, o.dimNames)
                && Arrays.equals(permutation, o.permutation) && Arrays.equals(uniformShape, o.uniformShape);
    }

    @Override
    public String serialize() {
        ObjectNode o = ExtensionJson.object();
        if (dimNames != null) {
            ExtensionJson.put(o, "dim_names", dimNames);
        }
        if (permutation != null) {
            ExtensionJson.put(o, "permutation", permutation);
        }
        if (uniformShape != null) {
            ArrayNode a = o.putArray("uniform_shape");
            for (Long u : uniformShape) {
                if (u == null) {
                    a.addNull();
                } else {
                    a.add(u);
                }
            }
        }
        return ExtensionJson.write(o);
    }

    @Override
    public ArrowType deserialize(ArrowType storageType, String serializedData) {
        if (!(storageType instanceof ArrowType.Struct)) {
            throw ExtensionJson.bad(EXTENSION_NAME, "storage must be a Struct, got " + storageType);
        }
        JsonNode obj = ExtensionJson.parse(EXTENSION_NAME, serializedData);
        return new VariableShapeTensorType(ExtensionJson.strings(EXTENSION_NAME, obj, "dim_names"),
                ExtensionJson.permutation(EXTENSION_NAME, obj), ExtensionJson.optionalDims(EXTENSION_NAME, obj, "uniform_shape"));
    }

    @Override
    public FieldVector getNewVector(String name, FieldType fieldType, BufferAllocator allocator) {
        FieldType storage = new FieldType(fieldType.isNullable(), storageType(), fieldType.getDictionary(),
                fieldType.getMetadata());
        return new VariableShapeTensorVector(name, allocator, this, new StructVector(name, allocator, storage, null));
    }

    @Override
    public int hashCode() {
        return Objects.hash(super.hashCode(), dimNames, Arrays.hashCode(permutation), Arrays.hashCode(uniformShape));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof VariableShapeTensorType t && extensionEquals(t);
    }

    /** E.g. {@code arrow.variable_shape_tensor[dim_names=[H, W], uniform_shape=[null, 3]]}. */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder(EXTENSION_NAME).append('[');
        String sep = "";
        if (dimNames != null) {
            b.append("dim_names=").append(dimNames);
            sep = ", ";
        }
        if (permutation != null) {
            b.append(sep).append("permutation=").append(Arrays.toString(permutation));
            sep = ", ";
        }
        if (uniformShape != null) {
            b.append(sep).append("uniform_shape=").append(Arrays.toString(uniformShape));
        }
        return b.append(']').toString();
    }
}
