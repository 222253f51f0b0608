package dev.hurray;

import static dev.hurray.internal.DLPackStructs.FLAG_IS_COPIED;
import static dev.hurray.internal.DLPackStructs.FLAG_READ_ONLY;
import static dev.hurray.internal.DLPackStructs.OFF_BITS;
import static dev.hurray.internal.DLPackStructs.OFF_BYTE_OFFSET;
import static dev.hurray.internal.DLPackStructs.OFF_CODE;
import static dev.hurray.internal.DLPackStructs.OFF_DATA;
import static dev.hurray.internal.DLPackStructs.OFF_DELETER;
import static dev.hurray.internal.DLPackStructs.OFF_DEVICE_ID;
import static dev.hurray.internal.DLPackStructs.OFF_DEVICE_TYPE;
import static dev.hurray.internal.DLPackStructs.OFF_FLAGS;
import static dev.hurray.internal.DLPackStructs.OFF_LANES;
import static dev.hurray.internal.DLPackStructs.OFF_MAJOR;
import static dev.hurray.internal.DLPackStructs.OFF_MANAGER_CTX;
import static dev.hurray.internal.DLPackStructs.OFF_MINOR;
import static dev.hurray.internal.DLPackStructs.OFF_NDIM;
import static dev.hurray.internal.DLPackStructs.OFF_SHAPE;
import static dev.hurray.internal.DLPackStructs.OFF_STRIDES;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.hurray.internal.DLPackStructs;
import dev.hurray.internal.Releases;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * DLPack 1.x interchange ({@code DLManagedTensorVersioned*}) through FFM; the struct, the type
 * codes and the ownership rules are in docs/spec/dlpack.md.
 *
 * <h2>Export</h2>
 * {@link #export(Tensor)} hands a tensor to a DLPack consumer without copying: the struct (with
 * its shape and strides, in elements) is one C allocation; {@code manager_ctx} keys a
 * {@link TensorShare} that keeps the tensor's memory alive, and {@code deleter} is a process-wide
 * upcall stub that closes the share and frees the struct. The consumer calls the deleter exactly
 * once, on any thread (a non-Java thread's first upcall attaches it to the JVM, once). Until
 * then the tensor cannot be closed ({@link IllegalStateException}). Read-only buffers (a
 * {@link HurrayFile#map memory-mapped} tensor) set {@code READ_ONLY}. {@link #exportCopy(Tensor)}
 * copies the data into the allocation and sets {@code IS_COPIED}: the tensor may then be closed at
 * once.
 *
 * <h2>Import</h2>
 * {@link #importTensor(MemorySegment)} takes ownership of a producer's struct: the returned
 * tensor's buffer is the producer's memory (no copy when {@code data} is 64-byte aligned and on
 * the host), and closing the tensor calls the producer's deleter exactly once (after the tensor's
 * views are closed). On every failure the deleter is called before the exception propagates, as
 * the DLPack rules require of a consumer that gives up.
 *
 * <h2>Element types</h2>
 * Mapped by {@link ElementType#formatName()} in one table ({@link #DTYPES}): bool, the signed and
 * unsigned integers (4-bit packed ones as DLPack's packed sub-byte types), float16/32/64, bfloat16,
 * complex64/128, and the OCP fp8/fp6/fp4/e8m0 codes of DLPack 1.1. <b>Extension point:</b> an
 * element type added to {@link ElementType} later is mapped by adding its format name to
 * {@code DTYPES}; until then export and import refuse it with a message naming it.
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
        int dtype = dtypeOf(d.elementType());
        if (d.quantization().isPresent()) {
            throw new IllegalArgumentException("DLPack cannot carry quantization (" + d.quantization().get()
                    + "); dequantize first");
        }
        if (d.buffers().size() != 1) {
            throw new IllegalArgumentException("DLPack carries one buffer; this tensor has " + d.buffers().size());
        }
        long[] dims = d.shape().dims();
        long[] strides = strides(d);
        MemorySegment buf = tensor.buffer(0);
        int deviceType = deviceType(d.buffers().get(0).deviceTag());
        int rank = dims.length;
        long header = DLPackStructs.SIZE + 16L * rank;
        long dataAt = (header + 255) / 256 * 256;
        MemorySegment m = DLPackStructs.alloc(copy ? dataAt + buf.byteSize() : header, 256);
        TensorShare share = null;
        try {
            long flags = 0;
            MemorySegment data;
            if (copy) {
                MemorySegment.copy(buf, 0, m, dataAt, buf.byteSize());
                data = m.asSlice(dataAt);
                flags |= FLAG_IS_COPIED;
            } else {
                share = tensor.share();
                data = buf;
                if (buf.isReadOnly()) {
                    flags |= FLAG_READ_ONLY;
                }
            }
            TensorShare keep = share;
            long key = Releases.register(() -> {
                try {
                    if (keep != null) {
                        keep.close();
                    }
                } finally {
                    DLPackStructs.free(m);
                }
            });
            m.set(JAVA_INT, OFF_MAJOR, DLPackStructs.MAJOR);
            m.set(JAVA_INT, OFF_MINOR, DLPackStructs.MINOR);
            m.set(ADDRESS, OFF_MANAGER_CTX, Releases.keyPointer(key));
            m.set(ADDRESS, OFF_DELETER, DLPackStructs.DELETER);
            m.set(JAVA_LONG, OFF_FLAGS, flags);
            boolean empty = d.elementCount() == 0;
            m.set(ADDRESS, OFF_DATA, empty ? MemorySegment.NULL : MemorySegment.ofAddress(data.address()));
            m.set(JAVA_INT, OFF_DEVICE_TYPE, deviceType);
            m.set(JAVA_INT, OFF_DEVICE_ID, 0);
            m.set(JAVA_INT, OFF_NDIM, rank);
            m.set(JAVA_BYTE, OFF_CODE, (byte) (dtype >>> 8));
            m.set(JAVA_BYTE, OFF_BITS, (byte) dtype);
            m.set(JAVA_SHORT, OFF_LANES, (short) 1);
            MemorySegment shape = m.asSlice(DLPackStructs.SIZE, 8L * rank);
            MemorySegment str = m.asSlice(DLPackStructs.SIZE + 8L * rank, 8L * rank);
            for (int i = 0; i < rank; i++) {
                shape.setAtIndex(JAVA_LONG, i, dims[i]);
                str.setAtIndex(JAVA_LONG, i, strides[i]);
            }
            m.set(ADDRESS, OFF_SHAPE, rank == 0 ? MemorySegment.NULL : MemorySegment.ofAddress(shape.address()));
            m.set(ADDRESS, OFF_STRIDES, rank == 0 ? MemorySegment.NULL : MemorySegment.ofAddress(str.address()));
            m.set(JAVA_LONG, OFF_BYTE_OFFSET, empty ? 0 : d.byteOffset());
            return MemorySegment.ofAddress(m.address());
        } catch (RuntimeException | Error e) {
            if (share != null) {
                share.close();
            }
            DLPackStructs.free(m);
            throw e;
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
        MemorySegment m = managed.reinterpret(DLPackStructs.SIZE);
        MemorySegment deleter = m.get(ADDRESS, OFF_DELETER);
        AtomicBoolean deleted = new AtomicBoolean();
        Runnable delete = () -> {
            if (deleted.compareAndSet(false, true)) {
                DLPackStructs.callDeleter(deleter, m);
            }
        };
        try {
            try {
                return importUnchecked(m, scope, delete);
            } catch (ArithmeticException overflow) {
                throw new HurrayException(Status.LIMIT_EXCEEDED, "DLPack shape, strides or byte_offset overflow a "
                        + "64-bit byte count", overflow);
            }
        } catch (HurrayException | RuntimeException | Error e) {
            try {
                delete.run();
            } catch (RuntimeException | Error d) {
                e.addSuppressed(d);
            }
            throw e;
        }
    }

    private static Tensor importUnchecked(MemorySegment m, TensorScope scope, Runnable delete) throws HurrayException {
        int major = m.get(JAVA_INT, OFF_MAJOR);
        if (major != DLPackStructs.MAJOR) {
            throw new HurrayException(Status.VERSION_MISMATCH, "DLPack major version " + major + ", this library reads "
                    + DLPackStructs.MAJOR, null);
        }
        int device = m.get(JAVA_INT, OFF_DEVICE_TYPE);
        if (device != DEVICE_CPU && device != DEVICE_CUDA_HOST) {
            throw new HurrayException(Status.UNSUPPORTED, "DLPack device type " + device
                    + " is not host memory (kDLCPU or kDLCUDAHost)", null);
        }
        int code = m.get(JAVA_BYTE, OFF_CODE) & 0xFF;
        int bits = m.get(JAVA_BYTE, OFF_BITS) & 0xFF;
        int lanes = m.get(JAVA_SHORT, OFF_LANES) & 0xFFFF;
        if (lanes != 1) {
            throw new HurrayException(Status.UNSUPPORTED, "DLPack vector types (lanes " + lanes + ") are not supported", null);
        }
        ElementType type = elementTypeOf(code, bits);
        int ndim = m.get(JAVA_INT, OFF_NDIM);
        if (ndim < 0 || ndim > Shape.MAX_RANK) {
            throw new HurrayException(Status.LIMIT_EXCEEDED, "DLPack ndim " + ndim + " outside 0.." + Shape.MAX_RANK, null);
        }
        long[] dims = new long[ndim];
        long[] strides = null;
        if (ndim > 0) {
            if (m.get(ADDRESS, OFF_SHAPE).equals(MemorySegment.NULL)) {
                throw new HurrayException(Status.INVALID_ARGUMENT, "DLPack shape is NULL with ndim " + ndim, null);
            }
            MemorySegment shape = m.get(ADDRESS, OFF_SHAPE).reinterpret(8L * ndim);
            dims = shape.toArray(JAVA_LONG);
            MemorySegment s = m.get(ADDRESS, OFF_STRIDES);
            if (!s.equals(MemorySegment.NULL)) {
                strides = s.reinterpret(8L * ndim).toArray(JAVA_LONG);
            }
        }
        Shape shape;
        try {
            shape = Shape.of(dims);
        } catch (IllegalArgumentException e) {
            throw new HurrayException(Status.INVALID_SHAPE, "DLPack shape: " + e.getMessage(), null);
        }
        long byteOffset = m.get(JAVA_LONG, OFF_BYTE_OFFSET);
        if (byteOffset < 0) {
            throw new HurrayException(Status.LIMIT_EXCEEDED, "DLPack byte_offset above 2^63", null);
        }
        long[] rowMajor = rowMajor(dims);
        Layout layout = strides == null || java.util.Arrays.equals(strides, rowMajor) || shape.elementCount() <= 1
                ? Layout.rowMajor() : Layout.strided(strides);
        long extent;
        if (shape.elementCount() == 0) {
            extent = 0;
        } else if (layout.kind() == Layout.Kind.ROW_MAJOR) {
            extent = type.byteSizeOf(shape.elementCount());
        } else {
            long lo = 0;
            long hi = 0;
            for (int i = 0; i < ndim; i++) {
                long span = Math.multiplyExact(dims[i] - 1, strides[i]);
                lo += Math.min(0, span);
                hi += Math.max(0, span);
            }
            long es = type.bitWidth() / 8;
            if (es == 0 || byteOffset + lo * es < 0) {
                throw new HurrayException(Status.INVALID_LAYOUT, "DLPack strides reach before the data", null);
            }
            extent = Math.multiplyExact(hi + 1, es);
        }
        long size = Math.addExact(byteOffset, extent);
        MemorySegment data = m.get(ADDRESS, OFF_DATA);
        if (data.equals(MemorySegment.NULL) && shape.elementCount() > 0) {
            throw new HurrayException(Status.INVALID_ARGUMENT, "DLPack data is NULL for " + shape.elementCount()
                    + " elements", null);
        }
        boolean readOnly = (m.get(JAVA_LONG, OFF_FLAGS) & FLAG_READ_ONLY) != 0;
        TensorDescriptor.Builder b = TensorDescriptor.builder(type, shape).layout(layout).byteOffset(byteOffset);
        if (data.address() % DeviceTag.MIN_ALIGNMENT != 0 || data.equals(MemorySegment.NULL)) {
            // Hurray buffers are at least 64-byte aligned: copy, and give the producer's memory back now.
            TensorDescriptor d = b.buffer(new BufferSpec(Math.max(size, 0), DeviceTag.MIN_ALIGNMENT, DeviceTag.CPU,
                    SyncMode.PRODUCER_SYNCED)).buildChecked();
            Tensor t = Tensor.allocate(d, scope);
            if (size > 0) {
                MemorySegment.copy(data.reinterpret(size), 0, t.buffer(0), 0, size);
            }
            delete.run();
            return t;
        }
        TensorDescriptor d = b.buffer(new BufferSpec(size, DeviceTag.MIN_ALIGNMENT, DeviceTag.CPU,
                SyncMode.PRODUCER_SYNCED)).buildChecked();
        MemorySegment raw = data.reinterpret(size);
        if (readOnly) {
            raw = raw.asReadOnly();
        }
        return Tensor.adoptViews(d, new MemorySegment[] {raw}, scope, delete);
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

    private static ElementType elementTypeOf(int code, int bits) throws HurrayException {
        int want = dt(code, bits);
        for (Map.Entry<String, Integer> e : DTYPES.entrySet()) {
            if (e.getValue() == want) {
                try {
                    return ElementType.fromFormatName(e.getKey());
                } catch (IllegalArgumentException notYet) {
                    // a DLPack type this build's ElementType lacks (e.g. fp6 before it is added)
                }
            }
        }
        throw new HurrayException(Status.UNSUPPORTED, "DLPack type code " + code + " with " + bits
                + " bits has no Hurray element type", null);
    }

    private static int deviceType(DeviceTag tag) {
        return switch (tag) {
            case CPU, IPC -> DEVICE_CPU;
            case CUDA -> DEVICE_CUDA;
            case CUDA_HOST -> DEVICE_CUDA_HOST;
            case ROCM -> 10;
            case METAL -> 8;
            case VULKAN -> 7;
            default -> throw new IllegalArgumentException("no DLPack device type for " + tag);
        };
    }

    private static long[] rowMajor(long[] dims) {
        long[] s = new long[dims.length];
        long acc = 1;
        for (int i = dims.length - 1; i >= 0; i--) {
            s[i] = acc;
            acc *= Math.max(dims[i], 1);
        }
        return s;
    }

    private static long[] strides(TensorDescriptor d) {
        long[] dims = d.shape().dims();
        return switch (d.layout().kind()) {
            case ROW_MAJOR -> rowMajor(dims);
            case COLUMN_MAJOR -> {
                long[] s = new long[dims.length];
                long acc = 1;
                for (int i = 0; i < dims.length; i++) {
                    s[i] = acc;
                    acc *= Math.max(dims[i], 1);
                }
                yield s;
            }
            case STRIDED -> d.layout().strides();
            default -> throw new IllegalArgumentException("DLPack carries dense and strided layouts, not "
                    + d.layout().kind());
        };
    }
}
