package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.internal.DLPackStructs;
import dev.hurray.internal.NativeDLPack;
import dev.hurray.internal.Releases;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** DLPack 1.x export and import, checked by a C consumer and producer compiled with gcc. */
class DLPackTest {
    /** What interop_dlpack_consume reports. */
    record Info(long major, long minor, long flags, int ndim, int code, int bits, int lanes, int device,
            long byteOffset, long structSize, long tensorOffset, long[] shape, long[] strides, double sum) {
    }

    static Info consume(MemorySegment managed, int deleterMode) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ValueLayout.JAVA_LONG, 11 + 64);
            double sum = (double) InteropNative.DLPACK_CONSUME.invokeExact(managed, out, deleterMode);
            long[] o = out.toArray(ValueLayout.JAVA_LONG);
            int ndim = (int) o[3];
            long[] shape = java.util.Arrays.copyOfRange(o, 11, 11 + ndim);
            long[] strides = java.util.Arrays.copyOfRange(o, 11 + ndim, 11 + 2 * ndim);
            return new Info(o[0], o[1], o[2], ndim, (int) o[4], (int) o[5], (int) o[6], (int) o[7], o[8], o[9], o[10],
                    shape, strides, sum);
        }
    }

    @Test
    void exportIsReadByACConsumerThatCallsTheDeleter() throws Throwable {
        Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
        MemorySegment m = DLPack.export(t);
        Info i = consume(m, 0);
        assertEquals(1, i.major());
        assertEquals(1, i.minor());
        assertEquals(0, i.flags());
        assertEquals(80, i.structSize(), "sizeof(DLManagedTensorVersioned)");
        assertEquals(32, i.tensorOffset());
        assertEquals(2, i.ndim());
        assertEquals(2, i.code());
        assertEquals(32, i.bits());
        assertEquals(1, i.lanes());
        assertEquals(DLPack.DEVICE_CPU, i.device());
        assertArrayEquals(new long[] {2, 3}, i.shape());
        assertArrayEquals(new long[] {3, 1}, i.strides());
        assertEquals(21.0, i.sum());
        // the consumer still holds it: the tensor cannot be closed
        assertThrows(IllegalStateException.class, t::close);
        consume(m, 1);
        t.close();
        assertFalse(t.isOpen());
    }

    @Test
    void theDeleterMayRunOnANativeThread() throws Throwable {
        Tensor t = Tensor.of(new float[] {1, 2, 3});
        MemorySegment m = DLPack.export(t);
        assertEquals(6.0, consume(m, 2).sum());
        t.close();
    }

    @Test
    void stridesAndByteOffsetAreHonoured() throws Throwable {
        // a 2x2 view, column-major over [1, 2, 3, 4] after an 8-byte offset
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 2).layout(Layout.columnMajor()).byteOffset(8)
                .buffer(BufferSpec.cpu(24)).build();
        try (Tensor t = Tensor.allocate(d)) {
            MemorySegment.copy(new float[] {9, 9, 1, 2, 3, 4}, 0, t.buffer(0), ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 6);
            MemorySegment m = DLPack.export(t);
            Info i = consume(m, 1);
            assertArrayEquals(new long[] {1, 2}, i.strides());
            assertEquals(8, i.byteOffset());
            assertEquals(10.0, i.sum());
        }
        TensorDescriptor s = TensorDescriptor.builder(ElementType.FLOAT32, 2).layout(Layout.strided(2))
                .buffer(BufferSpec.cpu(12)).build();
        try (Tensor t = Tensor.allocate(s)) {
            MemorySegment.copy(new float[] {5, 100, 7}, 0, t.buffer(0), ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 3);
            Info i = consume(DLPack.export(t), 1);
            assertArrayEquals(new long[] {2}, i.strides());
            assertEquals(12.0, i.sum());
        }
    }

    /** A float32[4] tensor [0, 1, 2, 3] whose producer's buffer table places it on CUDA (tag 1, 4096-byte alignment). */
    private static final String CUDA_TAGGED_STREAM = "485252595354524d01000000f86577eb4852544e000000003500000000000000"
            + "b65c897a1098897248524453010000000b000101010000000000000000000000040000000000000010000000000000000010"
            + "0000010000000100000078000000000000803f00000040000040404852454e000000000000000000000000000000003a905f82";

    /**
     * A tensor read from a stream or a file is in host memory whatever device its producer's
     * table named, so its export says kDLCPU; the descriptor keeps the declared device.
     */
    @Test
    void aReadTensorExportsAsHostMemoryWhateverItsTableSays(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Throwable {
        byte[] wire = java.util.HexFormat.of().parseHex(CUDA_TAGGED_STREAM);
        java.nio.file.Path file = dir.resolve("cuda.hrry");
        try (Reader r = Reader.of(wire); Tensor t = r.read()) {
            assertEquals(DeviceTag.CUDA, t.descriptor().buffers().get(0).deviceTag());
            Info i = consume(DLPack.export(t), 1);
            assertEquals(DLPack.DEVICE_CPU, i.device());
            assertEquals(6.0, i.sum());
            try (HurrayFileWriter w = HurrayFile.create(file)) {
                w.add("t", t);
                w.finish();
            }
        }
        for (boolean map : new boolean[] {false, true}) {
            try (HurrayFile f = map ? HurrayFile.map(file) : HurrayFile.open(file); Tensor t = f.read("t")) {
                assertEquals(DeviceTag.CUDA, t.descriptor().buffers().get(0).deviceTag());
                Info i = consume(DLPack.export(t), 1);
                assertEquals(DLPack.DEVICE_CPU, i.device(), map ? "mapped" : "read");
                assertEquals(6.0, i.sum());
            }
        }
    }

    @Test
    void readOnlyAndCopiedFlags() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(8, 64);
            mem.copyFrom(MemorySegment.ofArray(new float[] {1.5f, 2.5f}));
            try (Tensor t = Tensor.wrap(mem.asReadOnly(), TensorDescriptor.of(ElementType.FLOAT32, 2))) {
                Info i = consume(DLPack.export(t), 1);
                assertEquals(DLPackStructs.FLAG_READ_ONLY, i.flags());
            }
        }
        Tensor t = Tensor.of(new float[] {1, 2, 3, 4});
        MemorySegment copy = DLPack.exportCopy(t);
        t.close(); // a copy does not hold the tensor
        Info i = consume(copy, 1);
        assertEquals(DLPackStructs.FLAG_IS_COPIED, i.flags());
        assertEquals(10.0, i.sum());
    }

    @Test
    void everyElementTypeMapsToItsDLPackCode() throws Throwable {
        for (ElementType type : ElementType.values()) {
            Integer code = DLPack.DTYPES.get(type.formatName());
            if (code == null) {
                assertThrows(IllegalArgumentException.class, () -> DLPack.dtypeOf(type));
                continue;
            }
            try (Tensor t = Tensor.allocate(TensorDescriptor.of(type, 4))) {
                Info i = consume(DLPack.export(t), 1);
                assertEquals(code >>> 8, i.code(), type.formatName());
                assertEquals(code & 0xFF, i.bits(), type.formatName());
                assertEquals(type.bitWidth(), i.bits(), type.formatName());
                // and back: export, import, same element type
                try (Tensor back = DLPack.importTensor(DLPack.export(t))) {
                    assertEquals(type, back.descriptor().elementType());
                    assertEquals(t.descriptor().shape(), back.descriptor().shape());
                }
            }
        }
        assertEquals(6 << 8 | 8, DLPack.dtypeOf(ElementType.BOOL));
        assertEquals(5 << 8 | 64, DLPack.dtypeOf(ElementType.COMPLEX64));
        assertEquals(10 << 8 | 8, DLPack.dtypeOf(ElementType.FLOAT8_E4M3FN));
        assertEquals(12 << 8 | 8, DLPack.dtypeOf(ElementType.FLOAT8_E5M2));
        assertEquals(4 << 8 | 16, DLPack.dtypeOf(ElementType.BFLOAT16));
    }

    @Test
    void importCallsTheProducersDeleterExactlyOnce() throws Throwable {
        try (Arena a = Arena.ofShared()) {
            MemorySegment counter = a.allocate(ValueLayout.JAVA_INT);
            MemorySegment m = (MemorySegment) InteropNative.DLPACK_MAKE_F32.invokeExact(5L, 16L, 0, 1, counter);
            Tensor t = DLPack.importTensor(m);
            assertEquals(16, t.descriptor().byteOffset());
            assertArrayEquals(new float[] {0.5f, 1.5f, 2.5f, 3.5f, 4.5f}, t.toFloatArray());
            MemorySegment view = t.buffer(0);
            assertEquals(0, counter.get(ValueLayout.JAVA_INT, 0));
            t.close();
            t.close();
            assertEquals(1, counter.get(ValueLayout.JAVA_INT, 0));
            // use after release: an exception, never a read of freed memory
            assertThrows(IllegalStateException.class, () -> view.get(ValueLayout.JAVA_BYTE, 0));
            assertThrows(IllegalStateException.class, t::toFloatArray);
        }
    }

    @Test
    void misalignedProducerDataIsCopiedAndReturnedAtOnce() throws Throwable {
        try (Arena a = Arena.ofShared()) {
            MemorySegment counter = a.allocate(ValueLayout.JAVA_INT);
            MemorySegment m = (MemorySegment) InteropNative.DLPACK_MAKE_F32.invokeExact(3L, 0L, 1, 1, counter);
            try (Tensor t = DLPack.importTensor(m)) {
                assertEquals(1, counter.get(ValueLayout.JAVA_INT, 0));
                assertArrayEquals(new float[] {0.5f, 1.5f, 2.5f}, t.toFloatArray());
            }
            assertEquals(1, counter.get(ValueLayout.JAVA_INT, 0));
        }
    }

    @Test
    void anUnreadableVersionIsRefusedAfterCallingTheDeleter() throws Throwable {
        try (Arena a = Arena.ofShared()) {
            MemorySegment counter = a.allocate(ValueLayout.JAVA_INT);
            MemorySegment m = (MemorySegment) InteropNative.DLPACK_MAKE_F32.invokeExact(3L, 0L, 0, 2, counter);
            HurrayException e = assertThrows(HurrayException.class, () -> DLPack.importTensor(m));
            assertEquals(Status.VERSION_MISMATCH, e.status());
            assertEquals(1, counter.get(ValueLayout.JAVA_INT, 0));
        }
        assertThrows(IllegalArgumentException.class, () -> DLPack.importTensor(MemorySegment.NULL));
    }

    @Test
    void anExceptionInsideTheReleaseUpcallNeverKillsTheJvm() throws Throwable {
        // The deleter is the library's; the Java code it reaches is the release upcall of the
        // lent buffer. A failing release action is logged and counted, never thrown into C.
        long before = Releases.failureCount();
        try (Tensor t = Tensor.allocate(TensorDescriptor.of(ElementType.FLOAT32, 4), TensorScope.SHARED)) {
            for (int mode : new int[] {2, 1}) { // on a native thread, then on this Java thread
                long key = Releases.register(() -> {
                    throw new IllegalStateException("release action failed on purpose");
                });
                MemorySegment m = NativeDLPack.export(t.descriptor().encode(), t.buffer(0), 64, 0, 0, key);
                consume(m, mode);
            }
        }
        assertEquals(before + 2, Releases.failureCount());
        assertTrue(Releases.takeFailure() == null); // never kept for a later, unrelated close
        try (Arena a = Arena.ofShared()) {
            ExternalBuffer.wrap(a.allocate(64, 64), () -> { }).close();
        }
    }

    @Test
    void hostileStructsGetAClearErrorAndTheDeleterOnce() throws Throwable {
        try (Arena a = Arena.ofShared()) {
            MemorySegment counter = a.allocate(ValueLayout.JAVA_INT);
            int expected = 0;
            // each case: make a valid producer struct, break one field, import
            for (int c = 0; c < 8; c++) {
                MemorySegment m = ((MemorySegment) InteropNative.DLPACK_MAKE_F32.invokeExact(4L, 0L, 0, 1, counter))
                        .reinterpret(DLPackStructs.SIZE);
                MemorySegment shape = m.get(ValueLayout.ADDRESS, 56).reinterpret(8);
                Status want;
                switch (c) {
                    case 0 -> { m.set(ValueLayout.ADDRESS, 56, MemorySegment.NULL); want = Status.INVALID_ARGUMENT; }
                    case 1 -> { m.set(ValueLayout.JAVA_INT, 48, 33); want = Status.LIMIT_EXCEEDED; }
                    case 2 -> { shape.set(ValueLayout.JAVA_LONG, 0, -1); want = Status.INVALID_SHAPE; }
                    case 3 -> { m.set(ValueLayout.ADDRESS, 32, MemorySegment.NULL); want = Status.INVALID_ARGUMENT; }
                    case 4 -> { m.set(ValueLayout.JAVA_INT, 40, 2); want = Status.UNSUPPORTED; }   // kDLCUDA
                    case 5 -> { m.set(ValueLayout.JAVA_SHORT, 54, (short) 4); want = Status.UNSUPPORTED; }
                    case 6 -> { m.set(ValueLayout.JAVA_LONG, 72, Long.MAX_VALUE - 4); want = Status.LIMIT_EXCEEDED; }
                    default -> { m.set(ValueLayout.JAVA_BYTE, 52, (byte) 99); want = Status.UNSUPPORTED; }
                }
                HurrayException e = assertThrows(HurrayException.class, () -> DLPack.importTensor(m), "case " + c);
                assertEquals(want, e.status(), "case " + c + ": " + e.getMessage());
                assertEquals(++expected, counter.get(ValueLayout.JAVA_INT, 0), "case " + c);
            }
        }
    }

    @Test
    void refusesWhatDLPackCannotCarry() throws Exception {
        try (Tensor t = Tensor.of(new float[] {1})) {
            assertTrue(t.isOpen());
        }
        Tensor closed = Tensor.of(new float[] {1});
        closed.close();
        assertThrows(IllegalStateException.class, () -> DLPack.export(closed));
    }
}
