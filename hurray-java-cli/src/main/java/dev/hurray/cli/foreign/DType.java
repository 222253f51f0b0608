package dev.hurray.cli.foreign;

import java.util.Locale;
import java.util.Optional;

/**
 * Element types of the foreign-format model. The constants, their order ({@link #code()}) and
 * their names mirror Hurray's element types one for one (native {@code hurray-core}
 * {@code ElementType}, wire codes 0–18), so phase 2 maps a {@code DType} to the Hurray type by
 * code without a table.
 *
 * <p>Sub-byte types ({@link #INT4}, {@link #UINT4}) pack two elements per byte, lower flattened
 * index in the low nibble; none of the foreign formats read here produces them, but the model
 * can hold them.
 */
public enum DType {
    BOOL("bool", 8),
    INT8("int8", 8),
    INT16("int16", 16),
    INT32("int32", 32),
    INT64("int64", 64),
    UINT8("uint8", 8),
    UINT16("uint16", 16),
    UINT32("uint32", 32),
    UINT64("uint64", 64),
    FLOAT16("float16", 16),
    BFLOAT16("bfloat16", 16),
    FLOAT32("float32", 32),
    FLOAT64("float64", 64),
    /** Two float32, real then imaginary. */
    COMPLEX64("complex64", 64),
    /** Two float64, real then imaginary. */
    COMPLEX128("complex128", 128),
    /** OCP FP8 E4M3, finite-only. */
    FLOAT8_E4M3FN("float8_e4m3fn", 8),
    /** OCP FP8 E5M2. */
    FLOAT8_E5M2("float8_e5m2", 8),
    INT4("int4", 4),
    UINT4("uint4", 4),
    /** FP8 E4M3 fnuz (descriptor version 2). */
    FLOAT8_E4M3FNUZ("float8_e4m3fnuz", 8),
    /** FP8 E5M2 fnuz (descriptor version 2). */
    FLOAT8_E5M2FNUZ("float8_e5m2fnuz", 8),
    /** FP8 E3M4 (descriptor version 2). */
    FLOAT8_E3M4("float8_e3m4", 8),
    /** OCP FP6 E2M3, 6-bit little-endian bit stream (descriptor version 2). */
    FLOAT6_E2M3FN("float6_e2m3fn", 6),
    /** OCP FP6 E3M2, 6-bit little-endian bit stream (descriptor version 2). */
    FLOAT6_E3M2FN("float6_e3m2fn", 6),
    /** OCP FP4 E2M1, packed like {@link #INT4} (descriptor version 2). */
    FLOAT4_E2M1FN("float4_e2m1fn", 4),
    /** OCP E8M0 scale (descriptor version 2). */
    FLOAT8_E8M0FNU("float8_e8m0fnu", 8);

    private final String typeName;
    private final int bits;

    DType(String typeName, int bits) {
        this.typeName = typeName;
        this.bits = bits;
    }

    /** Hurray's wire code of this element type (0–25). */
    public int code() {
        return ordinal();
    }

    /** Lower-case canonical name, as Hurray spells it ({@code float32}, {@code float8_e4m3fn}). */
    public String typeName() {
        return typeName;
    }

    /** Storage width of one element in bits (4 for the packed types). */
    public int bitWidth() {
        return bits;
    }

    /** True for the packed 4-bit types. */
    public boolean isSubByte() {
        return bits < 8;
    }

    /**
     * The width, in bytes, of the unit a byte-order swap reverses: the element width, except
     * for complex types whose two components are swapped separately; 1 for single-byte and
     * sub-byte types (nothing to swap).
     */
    public int swapUnitBytes() {
        return switch (this) {
            case COMPLEX64 -> 4;
            case COMPLEX128 -> 8;
            default -> Math.max(1, bits / 8);
        };
    }

    /** Whole bytes per element; throws for the sub-byte types, which have none. */
    public int byteWidth() {
        if (isSubByte()) {
            throw new IllegalStateException(typeName + " is a packed sub-byte type");
        }
        return bits / 8;
    }

    /** True for the integer types (signed and unsigned, including the 4-bit ones). */
    public boolean isInteger() {
        return switch (this) {
            case INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, INT4, UINT4 -> true;
            default -> false;
        };
    }

    /**
     * Bytes needed to store {@code elements} elements densely.
     *
     * @throws ArithmeticException on {@code long} overflow
     */
    public long bytesFor(long elements) {
        if (elements < 0) {
            throw new IllegalArgumentException("negative element count " + elements);
        }
        if (isSubByte()) {
            long rem = (elements % 8) * bits;
            return Math.addExact((elements / 8) * bits, (rem + 7) / 8);
        }
        return Math.multiplyExact(elements, (long) (bits / 8));
    }

    /** Looks a type up by its canonical name (case-insensitive). */
    public static Optional<DType> byName(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        for (DType t : values()) {
            if (t.typeName.equals(n)) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }

    @Override
    public String toString() {
        return typeName;
    }
}
