package dev.hurray;

import static dev.hurray.internal.DLPackStructs.FLAG_IS_COPIED;
import static dev.hurray.internal.DLPackStructs.FLAG_READ_ONLY;
import static dev.hurray.internal.DLPackStructs.OFF_FLAGS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.internal.DLPackStructs;
import dev.hurray.internal.NativeDLPack;
import dev.hurray.internal.NativeTensor;
import dev.hurray.internal.Releases;
import dev.hurray.internal.TensorAdopters;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Objects;

/**
 * DLPack 1.x interchange ({@code DLManagedTensorVersioned*}) through the C ABI
 * ({@code hurray_dlpack_export}/{@code _import}, which build and read the structs); the struct,
 * the type codes and the ownership rules are in docs/spec/dlpack.md.
 *
 * <h2>Export</h2>
 * {@link #export(Tensor)} hands a tensor to a DLPack consumer without copying: the library makes
 * the struct (with its shape and strides, in elements) over the tensor's buffer, lent to it with
 * a release action that closes a {@link TensorShare}; the consumer's call of the deleter (exactly
 * once, on any thread) frees the struct and runs that action (a non-Java thread's first upcall
 * attaches it to the JVM, once). Until then the tensor cannot be closed
 * ({@link IllegalStateException}). Read-only buffers (a
 * {@link HurrayFile#map memory-mapped} tensor) set {@code READ_ONLY}. {@link #exportCopy(Tensor)}
 * exports a copy of the data (its own allocation, freed by the deleter) and sets
 * {@code IS_COPIED}: the tensor may then be closed at once.
 *
 * <h2>Import</h2>
 * {@link #importTensor(MemorySegment)} takes ownership of a producer's struct: the returned
 * tensor's buffer is the producer's memory (no copy when {@code data} is 64-byte aligned and on
 * the host), and closing the tensor calls the producer's deleter exactly once (after the tensor's
 * views are closed). On every failure the deleter is called before the exception propagates, as
 * the DLPack rules require of a consumer that gives up.
 *
 * <h2>Element types</h2>
 * Mapped by the library (docs/spec/dlpack.md §Element types): bool, the signed and unsigned
 * integers (4-bit packed ones as DLPack's packed sub-byte types), float16/32/64, bfloat16,
 * complex64/128, and the OCP fp8/fp6/fp4/e8m0 codes of DLPack 1.1. {@link #DTYPES} lists the
 * same codes by format name, for callers that need a code without exporting.
 */
public final class DLPack {
    /** DLPack {@code kDLCPU}. */
    public static final int DEVICE_CPU = 1;
    /** DLPack {@code kDLCUDA}. */
    public static final int DEVICE_CUDA = 2;
    /** DLPack {@code kDLCUDAHost}. */
    public static final int DEVICE_CUDA_HOST = 3;

    /**
     * Format name to DLPack {@code (code << 8) | bits}. DLPack 1.1 type codes: 0 int, 1 uint,
     * 2 float, 4 bfloat, 5 complex, 6 bool, 10 float8_e4m3fn, 12 float8_e5m2, 14 float8_e8m0fnu,
     * 15 float6_e2m3fn, 16 float6_e3m2fn, 17 float4_e2m1fn.
     */
    static final Map<String, Integer> DTYPES = Map.ofEntries(
            Map.entry("bool", dt(6, 8)),
            Map.entry("int4", dt(0, 4)), Map.entry("int8", dt(0, 8)), Map.entry("int16", dt(0, 16)),
            Map.entry("int32", dt(0, 32)), Map.entry("int64", dt(0, 64)),
            Map.entry("uint4", dt(1, 4)), Map.entry("uint8", dt(1, 8)), Map.entry("uint16", dt(1, 16)),
            Map.entry("uint32", dt(1, 32)), Map.entry("uint64", dt(1, 64)),
            Map.entry("float16", dt(2, 16)), Map.entry("float32", dt(2, 32)), Map.entry("float64", dt(2, 64)),
            Map.entry("bfloat16", dt(4, 16)),
            Map.entry("complex64", dt(5, 64)), Map.entry("complex128", dt(5, 128)),
            Map.entry("float8_e4m3fn", dt(10, 8)), Map.entry("float8_e5m2", dt(12, 8)),
            Map.entry("float8_e8m0fnu", dt(14, 8)), Map.entry("float8_e8m0", dt(14, 8)),
            Map.entry("float6_e2m3fn", dt(15, 6)), Map.entry("float6_e3m2fn", dt(16, 6)),
            Map.entry("float4_e2m1fn", dt(17, 4)));

    private DLPack() {
    }

    private static int dt(int code, int bits) {
        return code << 8 | bits;
    }

    /**
     * Exports {@code tensor} without copying (see the class comment).
     *
     * @return the {@code DLManagedTensorVersioned*}, owned by the consumer until it calls the deleter
     * @throws IllegalArgumentException for a quantized, sparse or multi-buffer tensor, or an
     *     element type DLPack cannot express
     * @throws IllegalStateException if the tensor is closed
     */
    public static MemorySegment export(Tensor tensor) {
        return export(tensor, false);
    }

    /** Exports a copy of {@code tensor}'s data ({@code IS_COPIED}); see the class comment. */
    public static MemorySegment exportCopy(Tensor tensor) {
        return export(tensor, true);
    }

    private static MemorySegment export(Tensor tensor, boolean copy) {
        Objects.requireNonNull(tensor, "tensor");
        TensorDescriptor d = tensor.descriptor();
        if (d.buffers().size() != 1) {
            throw new IllegalArgumentException("DLPack carries one buffer; this tensor has " + d.buffers().size());
        }
        MemorySegment buf = tensor.buffer(0);
        BufferSpec spec = d.buffers().get(0);
        Tensor held = null;
        TensorShare share = null;
        long flags = 0;
        MemorySegment data;
        if (copy) {
            held = Tensor.allocate(d, TensorScope.SHARED); // the deleter may run on any thread
            held.buffer(0).copyFrom(buf);
            data = held.buffer(0);
            flags |= FLAG_IS_COPIED;
        } else {
            share = tensor.share();
            data = buf;
            if (buf.isReadOnly()) {
                flags |= FLAG_READ_ONLY;
            }
        }
        TensorShare keepShare = share;
        Tensor keepCopy = held;
        long key = Releases.register(() -> {
            try {
                if (keepShare != null) {
                    keepShare.close();
                }
            } finally {
                if (keepCopy != null) {
                    keepCopy.close();
                }
            }
        });
        try {
            // The library validates (one buffer, dense or strided, no quantization) and refuses
            // with UNSUPPORTED; on any failure it has run the release action above.
            // The device of the memory: a wrapped tensor's is the caller's word (its descriptor),
            // every other tensor's memory (read, allocated, copied, mapped) is host memory
            // whatever device its descriptor names (docs/spec/dlpack.md).
            DeviceTag memory = !copy && tensor.borrowsMemory() ? spec.deviceTag() : DeviceTag.CPU;
            return NativeDLPack.export(d.encode(), data, Math.max(spec.alignment(), DeviceTag.MIN_ALIGNMENT),
                    memory.code(), flags, key);
        } catch (HurrayException e) {
            throw new IllegalArgumentException("DLPack cannot carry this tensor: " + e.getMessage(), e);
        }
    }

    /**
     * Takes ownership of a producer's {@code DLManagedTensorVersioned*} as a
     * {@link TensorScope#CONFINED} tensor (see the class comment).
     *
     * <p>The pointer must come from a DLPack producer: a foreign address cannot be validated,
     * so passing an arbitrary non-NULL address reads whatever memory is there and may crash
     * the process, as in C.
     *
     * @throws HurrayException {@code VERSION_MISMATCH} for a major version other than 1,
     *     {@code UNSUPPORTED} for a device other than host memory, lanes other than 1, or an
     *     unknown type code, and the descriptor's validation errors; the deleter has run
     * @throws IllegalArgumentException for a NULL pointer (nothing is called)
     */
    public static Tensor importTensor(MemorySegment managed) throws HurrayException {
        return importTensor(managed, TensorScope.CONFINED);
    }

    /** As {@link #importTensor(MemorySegment)} with a thread scope. */
    public static Tensor importTensor(MemorySegment managed, TensorScope scope) throws HurrayException {
        Objects.requireNonNull(managed, "managed");
        if (managed.equals(MemorySegment.NULL)) {
            throw new IllegalArgumentException("NULL DLManagedTensorVersioned");
        }
        boolean readOnly = (managed.reinterpret(DLPackStructs.SIZE).get(JAVA_LONG, OFF_FLAGS) & FLAG_READ_ONLY) != 0;
        MemorySegment t = NativeDLPack.importTensor(managed); // consumed: on failure the deleter has run
        try {
            TensorDescriptor d = TensorDescriptor.decode(NativeDLPack.descriptorBytes(t));
            MemorySegment[] raw = NativeTensor.buffers(t, d.buffers(), Arena.global());
            if (readOnly) {
                raw[0] = raw[0].asReadOnly();
            }
            return TensorAdopters.adoptViews(d, raw, scope, () -> NativeTensor.destroy(t));
        } catch (HurrayException | RuntimeException | Error e) {
            NativeTensor.destroy(t);
            throw e;
        }
    }

    /** DLPack {@code (code << 8) | bits} of {@code t}. @throws IllegalArgumentException if DLPack has no code for it */
    static int dtypeOf(ElementType t) {
        Integer v = DTYPES.get(t.formatName());
        if (v == null) {
            throw new IllegalArgumentException("no DLPack type code for " + t.formatName()
                    + " (add it to DLPack.DTYPES)");
        }
        return v;
    }

}
