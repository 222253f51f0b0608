package dev.hurray;

import dev.hurray.ffm.hurray_h;

/**
 * The element type (dtype) of a tensor: how one stored element is represented.
 *
 * <p>The constants are the format's one-byte element type codes ({@code HURRAY_DTYPE_*} in
 * {@code hurray.h}, docs/spec/descriptor.md §Codes), in code order. Each carries its wire
 * {@link #code()}, its storage {@link #bitWidth()} and its canonical lower-case
 * {@link #formatName()} ({@code float32}, {@code float8_e4m3fn}, …). All values are stored
 * little-endian. The packed types ({@link #INT4}, {@link #UINT4}, {@link #FLOAT4_E2M1FN}: 4 bits;
 * {@link #FLOAT6_E2M3FN}, {@link #FLOAT6_E3M2FN}: 6 bits) form one little-endian bit stream:
 * element {@code i} occupies bits {@code [w·i, w·i + w)}, bit {@code k} being bit {@code k % 8}
 * of byte {@code k / 8} (so for 4-bit types the lower index is in the low nibble); padding bits
 * are zero and the dense byte count is {@code ceil(elements · w / 8)}.
 *
 * <p>Codes 19–25 ({@link #FLOAT8_E4M3FNUZ} … {@link #FLOAT8_E8M0FNU}) need descriptor version 2;
 * the native library picks the version.
 *
 * <p>Immutable and thread-safe.
 */
public enum ElementType {
    /** {@code bool}: one byte per element, 0 or 1. */
    BOOL(hurray_h.HURRAY_DTYPE_BOOL(), 8, "bool"),
    /** {@code int8}: signed 8-bit two's complement. */
    INT8(hurray_h.HURRAY_DTYPE_INT8(), 8, "int8"),
    /** {@code int16}: signed 16-bit. */
    INT16(hurray_h.HURRAY_DTYPE_INT16(), 16, "int16"),
    /** {@code int32}: signed 32-bit. */
    INT32(hurray_h.HURRAY_DTYPE_INT32(), 32, "int32"),
    /** {@code int64}: signed 64-bit. */
    INT64(hurray_h.HURRAY_DTYPE_INT64(), 64, "int64"),
    /** {@code uint8}: unsigned 8-bit. */
    UINT8(hurray_h.HURRAY_DTYPE_UINT8(), 8, "uint8"),
    /** {@code uint16}: unsigned 16-bit. */
    UINT16(hurray_h.HURRAY_DTYPE_UINT16(), 16, "uint16"),
    /** {@code uint32}: unsigned 32-bit. */
    UINT32(hurray_h.HURRAY_DTYPE_UINT32(), 32, "uint32"),
    /** {@code uint64}: unsigned 64-bit. */
    UINT64(hurray_h.HURRAY_DTYPE_UINT64(), 64, "uint64"),
    /** {@code float16}: IEEE 754 binary16. */
    FLOAT16(hurray_h.HURRAY_DTYPE_FLOAT16(), 16, "float16"),
    /** {@code bfloat16}: the upper 16 bits of a binary32. */
    BFLOAT16(hurray_h.HURRAY_DTYPE_BFLOAT16(), 16, "bfloat16"),
    /** {@code float32}: IEEE 754 binary32 (Java {@code float}). */
    FLOAT32(hurray_h.HURRAY_DTYPE_FLOAT32(), 32, "float32"),
    /** {@code float64}: IEEE 754 binary64 (Java {@code double}). */
    FLOAT64(hurray_h.HURRAY_DTYPE_FLOAT64(), 64, "float64"),
    /** {@code complex64}: two float32, real then imaginary. */
    COMPLEX64(hurray_h.HURRAY_DTYPE_COMPLEX64(), 64, "complex64"),
    /** {@code complex128}: two float64, real then imaginary. */
    COMPLEX128(hurray_h.HURRAY_DTYPE_COMPLEX128(), 128, "complex128"),
    /** {@code float8_e4m3fn}: OCP FP8 E4M3, finite only (0x7F and 0xFF are NaN). */
    FLOAT8_E4M3FN(hurray_h.HURRAY_DTYPE_FLOAT8_E4M3FN(), 8, "float8_e4m3fn"),
    /** {@code float8_e5m2}: OCP FP8 E5M2, with infinities. */
    FLOAT8_E5M2(hurray_h.HURRAY_DTYPE_FLOAT8_E5M2(), 8, "float8_e5m2"),
    /** {@code int4}: signed 4-bit, two per byte (lower index in the low nibble). */
    INT4(hurray_h.HURRAY_DTYPE_INT4(), 4, "int4"),
    /** {@code uint4}: unsigned 4-bit, packed like {@link #INT4}. */
    UINT4(hurray_h.HURRAY_DTYPE_UINT4(), 4, "uint4"),
    /** {@code float8_e4m3fnuz}: FP8 E4M3, bias 8, no infinities or negative zero; 0x80 is NaN. */
    FLOAT8_E4M3FNUZ(hurray_h.HURRAY_DTYPE_FLOAT8_E4M3FNUZ(), 8, "float8_e4m3fnuz"),
    /** {@code float8_e5m2fnuz}: FP8 E5M2, bias 16, no infinities or negative zero; 0x80 is NaN. */
    FLOAT8_E5M2FNUZ(hurray_h.HURRAY_DTYPE_FLOAT8_E5M2FNUZ(), 8, "float8_e5m2fnuz"),
    /** {@code float8_e3m4}: FP8 E3M4, bias 3, with infinities. */
    FLOAT8_E3M4(hurray_h.HURRAY_DTYPE_FLOAT8_E3M4(), 8, "float8_e3m4"),
    /** {@code float6_e2m3fn}: OCP FP6 E2M3, finite only, 6-bit packed (max 7.5). */
    FLOAT6_E2M3FN(hurray_h.HURRAY_DTYPE_FLOAT6_E2M3FN(), 6, "float6_e2m3fn"),
    /** {@code float6_e3m2fn}: OCP FP6 E3M2, finite only, 6-bit packed (max 28). */
    FLOAT6_E3M2FN(hurray_h.HURRAY_DTYPE_FLOAT6_E3M2FN(), 6, "float6_e3m2fn"),
    /** {@code float4_e2m1fn}: OCP FP4 E2M1, finite only, packed like {@link #INT4} (max 6). */
    FLOAT4_E2M1FN(hurray_h.HURRAY_DTYPE_FLOAT4_E2M1FN(), 4, "float4_e2m1fn"),
    /** {@code float8_e8m0fnu}: OCP E8M0 scale, {@code 2^(code − 127)}; 0xFF is NaN, no zero. */
    FLOAT8_E8M0FNU(hurray_h.HURRAY_DTYPE_FLOAT8_E8M0FNU(), 8, "float8_e8m0fnu");

    private static final ElementType[] BY_CODE = new ElementType[256];

    static {
        for (ElementType t : values()) {
            BY_CODE[t.code] = t;
        }
    }

    private final int code;
    private final int bitWidth;
    private final String formatName;

    ElementType(int code, int bitWidth, String formatName) {
        this.code = code & 0xFF;
        this.bitWidth = bitWidth;
        this.formatName = formatName;
    }

    /** The one-byte wire code ({@code HURRAY_DTYPE_*}), 0..255. */
    public int code() {
        return code;
    }

    /** Storage width of one element in bits: 4 for the packed types, 8 for {@code bool}. */
    public int bitWidth() {
        return bitWidth;
    }

    /** True for the packed 4- and 6-bit types, whose elements do not start on byte boundaries. */
    public boolean isSubByte() {
        return bitWidth < 8;
    }

    /** The canonical lower-case name used by the format and in {@code toString}, e.g. {@code float32}. */
    public String formatName() {
        return formatName;
    }

    /**
     * Bytes needed to store {@code elements} elements densely ({@code ceil(elements · bits / 8)}
     * for the packed types).
     *
     * @throws IllegalArgumentException if {@code elements} is negative
     * @throws ArithmeticException if the byte count does not fit a {@code long}
     */
    public long byteSizeOf(long elements) {
        if (elements < 0) {
            throw new IllegalArgumentException("negative element count " + elements);
        }
        if (isSubByte()) {
            long rem = (elements % 8) * bitWidth;
            return Math.addExact((elements / 8) * bitWidth, (rem + 7) / 8);
        }
        return Math.multiplyExact(elements, (long) (bitWidth / 8));
    }

    /**
     * The element type with wire code {@code code}.
     *
     * @throws IllegalArgumentException for a code that names no element type
     */
    public static ElementType fromCode(int code) {
        ElementType t = code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
        if (t == null) {
            throw new IllegalArgumentException("unknown element type code " + code);
        }
        return t;
    }

    /**
     * The element type whose {@link #formatName()} is {@code name} (case-sensitive).
     *
     * @throws IllegalArgumentException for an unknown name
     */
    public static ElementType fromFormatName(String name) {
        for (ElementType t : values()) {
            if (t.formatName.equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown element type name " + name);
    }

    /** The {@link #formatName()}. */
    @Override
    public String toString() {
        return formatName;
    }
}
