package dev.hurray;

import dev.hurray.ffm.hurray_h;

/**
 * Every {@code HurrayStatus} the native library returns (docs/spec/c-abi.md §Status codes;
 * {@code hurray.h}): 0 is success, positive values are non-error outcomes, negative values are
 * errors. A failing call surfaces as a {@link HurrayException} carrying one of the negative
 * values; {@link #UNKNOWN} stands for a code this build of the Java API does not know (a newer
 * native library), whose raw value {@link HurrayException#code()} keeps.
 */
public enum Status {
    /** {@code HURRAY_OK}: success. */
    OK(hurray_h.HURRAY_OK(), "HURRAY_OK"),
    /** {@code HURRAY_END_OF_STREAM}: the end-of-stream marker was read at an item boundary (not an error). */
    END_OF_STREAM(hurray_h.HURRAY_END_OF_STREAM(), "HURRAY_END_OF_STREAM"),
    /** {@code HURRAY_NEED_INPUT}: a decoder needs more input before it can go on (not an error; only the C decoder returns it). */
    NEED_INPUT(hurray_h.HURRAY_NEED_INPUT(), "HURRAY_NEED_INPUT"),
    /** A magic number did not match (not a Hurray stream). */
    INVALID_MAGIC(hurray_h.HURRAY_ERR_INVALID_MAGIC(), "HURRAY_ERR_INVALID_MAGIC"),
    /** A version field names a version this build does not read. */
    VERSION_MISMATCH(hurray_h.HURRAY_ERR_VERSION_MISMATCH(), "HURRAY_ERR_VERSION_MISMATCH"),
    /** Unknown or inconsistent layout, or elements reaching outside their buffer's layout. */
    INVALID_LAYOUT(hurray_h.HURRAY_ERR_INVALID_LAYOUT(), "HURRAY_ERR_INVALID_LAYOUT"),
    /** Unknown element type code, or a type not allowed there. */
    INVALID_TYPE(hurray_h.HURRAY_ERR_INVALID_TYPE(), "HURRAY_ERR_INVALID_TYPE"),
    /** A buffer or payload is smaller than required. */
    BUFFER_TOO_SMALL(hurray_h.HURRAY_ERR_BUFFER_TOO_SMALL(), "HURRAY_ERR_BUFFER_TOO_SMALL"),
    /** A required pointer argument was NULL (a bug in the caller of the C ABI). */
    NULL_POINTER(hurray_h.HURRAY_ERR_NULL_POINTER(), "HURRAY_ERR_NULL_POINTER"),
    /** A Rust panic was caught at the boundary (a bug in the native library). */
    INTERNAL_PANIC(hurray_h.HURRAY_ERR_INTERNAL_PANIC(), "HURRAY_ERR_INTERNAL_PANIC"),
    /** A sync mode in the reserved range 0x03–0xFE, or 0xFF. */
    INVALID_SYNC_MODE(hurray_h.HURRAY_ERR_INVALID_SYNC_MODE(), "HURRAY_ERR_INVALID_SYNC_MODE"),
    /** The handoff payload does not match the declared sync mode. */
    SYNC_MODE_MISMATCH(hurray_h.HURRAY_ERR_SYNC_MODE_MISMATCH(), "HURRAY_ERR_SYNC_MODE_MISMATCH"),
    /**
     * A transport callback failed having moved no bytes; the call can be retried (a reader
     * resumes mid-tensor). The Java exception the source or sink threw is the
     * {@link HurrayException}'s cause.
     */
    TRANSPORT(hurray_h.HURRAY_ERR_TRANSPORT(), "HURRAY_ERR_TRANSPORT"),
    /** Input ended inside an item or before the end-of-stream marker. */
    TRUNCATED(hurray_h.HURRAY_ERR_TRUNCATED(), "HURRAY_ERR_TRUNCATED"),
    /** A checksum mismatch or structurally impossible bytes. */
    CORRUPT(hurray_h.HURRAY_ERR_CORRUPT(), "HURRAY_ERR_CORRUPT"),
    /** The writer failed after writing part of an item and accepts nothing more. */
    POISONED(hurray_h.HURRAY_ERR_POISONED(), "HURRAY_ERR_POISONED"),
    /** The sink accepted 0 bytes (it is closed). */
    SINK_CLOSED(hurray_h.HURRAY_ERR_SINK_CLOSED(), "HURRAY_ERR_SINK_CLOSED"),
    /** A size, rank, count or length exceeds a configured or format limit. */
    LIMIT_EXCEEDED(hurray_h.HURRAY_ERR_LIMIT_EXCEEDED(), "HURRAY_ERR_LIMIT_EXCEEDED"),
    /** An argument is outside its documented domain. */
    INVALID_ARGUMENT(hurray_h.HURRAY_ERR_INVALID_ARGUMENT(), "HURRAY_ERR_INVALID_ARGUMENT"),
    /** A well-formed feature this build does not implement. */
    UNSUPPORTED(hurray_h.HURRAY_ERR_UNSUPPORTED(), "HURRAY_ERR_UNSUPPORTED"),
    /** A bad alignment, or a pointer not aligned as declared. */
    INVALID_ALIGNMENT(hurray_h.HURRAY_ERR_INVALID_ALIGNMENT(), "HURRAY_ERR_INVALID_ALIGNMENT"),
    /** A shape whose element or byte count overflows, or a rank above the maximum. */
    INVALID_SHAPE(hurray_h.HURRAY_ERR_INVALID_SHAPE(), "HURRAY_ERR_INVALID_SHAPE"),
    /** A handle was used after it was destroyed (detected by debug builds). */
    USE_AFTER_DESTROY(hurray_h.HURRAY_ERR_USE_AFTER_DESTROY(), "HURRAY_ERR_USE_AFTER_DESTROY"),
    /** An allocation failed. */
    OUT_OF_MEMORY(hurray_h.HURRAY_ERR_OUT_OF_MEMORY(), "HURRAY_ERR_OUT_OF_MEMORY"),
    /** Nothing found (e.g. no tensor of that name in a container). */
    NOT_FOUND(hurray_h.HURRAY_ERR_NOT_FOUND(), "HURRAY_ERR_NOT_FOUND"),
    /** A name that must be unique is already present. */
    DUPLICATE_NAME(hurray_h.HURRAY_ERR_DUPLICATE_NAME(), "HURRAY_ERR_DUPLICATE_NAME"),
    /** The call is not valid in the handle's current state (e.g. a write after finish). */
    INVALID_STATE(hurray_h.HURRAY_ERR_INVALID_STATE(), "HURRAY_ERR_INVALID_STATE"),
    /** A code this build does not know; {@link #value()} is {@link Integer#MIN_VALUE}. */
    UNKNOWN(Integer.MIN_VALUE, "HURRAY_UNKNOWN_STATUS");

    private final int value;
    private final String constantName;

    Status(int value, String constantName) {
        this.value = value;
        this.constantName = constantName;
    }

    /** The native {@code HurrayStatus} value. */
    public int value() {
        return value;
    }

    /** The C constant's name, e.g. {@code HURRAY_ERR_TRUNCATED} (what {@code hurray_status_name} returns). */
    public String constantName() {
        return constantName;
    }

    /** True for the negative values. */
    public boolean isError() {
        return value < 0;
    }

    /** The status with native value {@code value}, or {@link #UNKNOWN}. */
    public static Status fromValue(int value) {
        for (Status s : values()) {
            if (s.value == value && s != UNKNOWN) {
                return s;
            }
        }
        return UNKNOWN;
    }
}
