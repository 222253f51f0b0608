package dev.hurray.internal;

/**
 * The few facts of the DLPack 1.x struct ({@code DLManagedTensorVersioned}) that Java reads
 * itself: its size and where its flags are. The library builds and reads everything else
 * ({@code hurray_dlpack_*}, docs/spec/dlpack.md has the byte table, and src/c/dlpack_test.c
 * checks the C ABI's structs against DLPack's).
 */
public final class DLPackStructs {
    /** {@code DLPACK_FLAG_BITMASK_READ_ONLY}. */
    public static final long FLAG_READ_ONLY = 1L;
    /** {@code DLPACK_FLAG_BITMASK_IS_COPIED}. */
    public static final long FLAG_IS_COPIED = 1L << 1;
    /** {@code sizeof(DLManagedTensorVersioned)} on LP64. */
    public static final long SIZE = 80;
    /** Offset of {@code flags}. */
    public static final long OFF_FLAGS = 24;

    private DLPackStructs() {
    }
}
