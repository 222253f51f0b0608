package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The DLPack 1.x structs ({@code DLManagedTensorVersioned}, {@code DLTensor}, {@code DLDevice},
 * {@code DLDataType}, {@code DLPackVersion}) as FFM layouts, written from the DLPack
 * specification (docs/spec/dlpack.md has the byte table), plus the C allocator and the
 * process-wide deleter upcall stub.
 *
 * <pre>
 * DLManagedTensorVersioned (80 bytes, 8-aligned)
 *   0  u32 version.major       4  u32 version.minor
 *   8  ptr manager_ctx        16  ptr deleter: void (*)(DLManagedTensorVersioned *self)
 *  24  u64 flags              32  DLTensor dl_tensor (48 bytes):
 *  32  ptr data               40  i32 device_type     44  i32 device_id
 *  48  i32 ndim               52  u8 code, 53 u8 bits, 54 u16 lanes
 *  56  ptr shape (i64[ndim])  64  ptr strides (i64[ndim], elements, may be NULL)
 *  72  u64 byte_offset
 * </pre>
 */
public final class DLPackStructs {
    /** DLPack major version this code reads and writes. */
    public static final int MAJOR = 1;
    /** DLPack minor version written (1.1 added the fp8/fp6/fp4 type codes). */
    public static final int MINOR = 1;

    /** {@code DLPACK_FLAG_BITMASK_READ_ONLY}. */
    public static final long FLAG_READ_ONLY = 1L;
    /** {@code DLPACK_FLAG_BITMASK_IS_COPIED}. */
    public static final long FLAG_IS_COPIED = 1L << 1;
    /** {@code DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED}. */
    public static final long FLAG_IS_SUBBYTE_TYPE_PADDED = 1L << 2;

    /** The struct layout, for documentation and size checks. */
    public static final StructLayout MANAGED = MemoryLayout.structLayout(
            JAVA_INT.withName("major"), JAVA_INT.withName("minor"),
            ADDRESS.withName("manager_ctx"), ADDRESS.withName("deleter"),
            JAVA_LONG.withName("flags"),
            ADDRESS.withName("data"), JAVA_INT.withName("device_type"), JAVA_INT.withName("device_id"),
            JAVA_INT.withName("ndim"), ValueLayout.JAVA_BYTE.withName("code"), ValueLayout.JAVA_BYTE.withName("bits"),
            ValueLayout.JAVA_SHORT.withName("lanes"),
            ADDRESS.withName("shape"), ADDRESS.withName("strides"), JAVA_LONG.withName("byte_offset"));

    public static final long OFF_MAJOR = 0;
    public static final long OFF_MINOR = 4;
    public static final long OFF_MANAGER_CTX = 8;
    public static final long OFF_DELETER = 16;
    public static final long OFF_FLAGS = 24;
    public static final long OFF_DATA = 32;
    public static final long OFF_DEVICE_TYPE = 40;
    public static final long OFF_DEVICE_ID = 44;
    public static final long OFF_NDIM = 48;
    public static final long OFF_CODE = 52;
    public static final long OFF_BITS = 53;
    public static final long OFF_LANES = 54;
    public static final long OFF_SHAPE = 56;
    public static final long OFF_STRIDES = 64;
    public static final long OFF_BYTE_OFFSET = 72;
    public static final long SIZE = 80;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle ALIGNED_ALLOC = LINKER.downcallHandle(
            LINKER.defaultLookup().find("aligned_alloc").orElseThrow(),
            FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle FREE = LINKER.downcallHandle(
            LINKER.defaultLookup().find("free").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle CALL_DELETER = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ADDRESS));

    /** {@code void deleter(DLManagedTensorVersioned *self)}: runs the action keyed by {@code self->manager_ctx}. */
    public static final MemorySegment DELETER;

    static {
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(DLPackStructs.class, "deleterUpcall",
                    MethodType.methodType(void.class, MemorySegment.class));
            DELETER = LINKER.upcallStub(target, FunctionDescriptor.ofVoid(ADDRESS), java.lang.foreign.Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        if (MANAGED.byteSize() != SIZE || MANAGED.byteOffset(MemoryLayout.PathElement.groupElement("byte_offset"))
                != OFF_BYTE_OFFSET) {
            throw new ExceptionInInitializerError("DLManagedTensorVersioned layout drifted");
        }
    }

    private DLPackStructs() {
    }

    private static void deleterUpcall(MemorySegment self) {
        try {
            long key = self.reinterpret(SIZE).get(ADDRESS, OFF_MANAGER_CTX).address();
            Releases.run(key, "DLPack deleter");
        } catch (Throwable t) {
            Releases.recordFailure("DLPack deleter", t);
        }
    }

    /** {@code aligned_alloc(alignment, size rounded up to alignment)}, or throws {@link OutOfMemoryError}. */
    public static MemorySegment alloc(long size, long alignment) {
        long rounded = (size + alignment - 1) / alignment * alignment;
        try {
            MemorySegment p = (MemorySegment) ALIGNED_ALLOC.invokeExact(alignment, Math.max(rounded, alignment));
            if (p.equals(MemorySegment.NULL)) {
                throw new OutOfMemoryError("aligned_alloc(" + alignment + ", " + rounded + ") failed");
            }
            return p.reinterpret(rounded);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** {@code free(p)}. */
    public static void free(MemorySegment p) {
        try {
            FREE.invokeExact(p);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Calls {@code deleter(self)} (a no-op for a NULL deleter); rethrows a Java deleter's recorded failure. */
    public static void callDeleter(MemorySegment deleter, MemorySegment self) {
        if (deleter.equals(MemorySegment.NULL)) {
            return;
        }
        Releases.enter();
        try {
            CALL_DELETER.invokeExact(deleter, self);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        } finally {
            Releases.exit();
        }
        Releases.rethrowFailure();
    }
}
