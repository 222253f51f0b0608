package dev.hurray.arrow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.ValueLayout;
import java.nio.channels.Channels;
import java.util.List;
import java.util.Random;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.extension.InvalidExtensionMetadataException;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Conversions without pyarrow: round trips, zero copy, lifetimes, refusals, metadata rules. */
class ArrowTensorsTest extends WithAllocator {

    static Tensor random(ElementType t, long... dims) {
        Tensor x = Tensor.allocate(TensorDescriptor.of(t, dims));
        Random r = new Random(t.ordinal());
        for (long i = 0; i < x.buffer(0).byteSize(); i++) {
            x.buffer(0).set(ValueLayout.JAVA_BYTE, i, (byte) (t == ElementType.BOOL ? r.nextInt(2) : r.nextInt()));
        }
        return x;
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"BOOL", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32",
        "UINT64", "FLOAT16", "FLOAT32", "FLOAT64"})
    void everySupportedTypeRoundTripsBitExactThroughIpc(ElementType type) throws Exception {
        try (Tensor t = random(type, 7, 3, 5)) {
            ByteArrayOutputStream ipc = new ByteArrayOutputStream();
            try (FixedShapeTensorVector v = ArrowTensors.toVector(t, "x", allocator);
                 VectorSchemaRoot root = new VectorSchemaRoot(List.of(v.getField()), List.of(v), 7)) {
                assertEquals(type, ArrowTensors.elementType(v.values().getField().getType()));
                ArrowTables.write(root, Channels.newChannel(ipc), true);
                try (Tensor back = ArrowTensors.toTensor(v)) {
                    assertArrayEquals(TensorBytes.logical(t), TensorBytes.logical(back));
                }
            }
            try (ArrowStreamReader r = new ArrowStreamReader(new ByteArrayInputStream(ipc.toByteArray()), allocator)) {
                r.loadNextBatch();
                FixedShapeTensorVector v = (FixedShapeTensorVector) r.getVectorSchemaRoot().getVector("x");
                assertArrayEquals(new long[] {3, 5}, v.type().shape());
                try (Tensor back = ArrowTensors.toTensor(v)) {
                    assertEquals(t.descriptor().shape(), back.descriptor().shape());
                    assertEquals(type, back.descriptor().elementType());
                    assertArrayEquals(TensorBytes.logical(t), TensorBytes.logical(back));
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"BFLOAT16", "COMPLEX64", "COMPLEX128", "FLOAT8_E4M3FN", "FLOAT8_E5M2",
        "INT4", "UINT4", "FLOAT6_E2M3FN", "FLOAT4_E2M1FN", "FLOAT8_E8M0FNU"})
    void typesArrowLacksAreRefusedByName(ElementType type) {
        try (Tensor t = Tensor.allocate(TensorDescriptor.of(type, 2, 8))) {
            ArrowTensorException e = assertThrows(ArrowTensorException.class, () -> ArrowTensors.toVector(t, "x", allocator));
            assertTrue(e.getMessage().contains("element type " + type.formatName() + " has no Arrow equivalent"), e.getMessage());
        }
    }

    @Test
    void hurrayToArrowSharesTheTensorAndHoldsItOpen() throws Exception {
        Tensor t = random(ElementType.FLOAT32, 4, 16);
        FixedShapeTensorVector v = ArrowTensors.toVector(t, "emb", allocator);
        assertEquals(t.buffer(0).address(), v.values().getDataBuffer().memoryAddress(), "no copy was promised");
        assertThrows(IllegalStateException.class, t::close, "Arrow still holds the memory");
        assertTrue(t.isOpen());
        assertEquals(t.buffer(0).get(ValueLayout.JAVA_FLOAT, 4 * 17), ((java.util.List<?>) v.getObject(1)).get(1));
        v.close();
        t.close(); // the share ended when Arrow released its last reference
    }

    @Test
    void arrowToHurrayKeepsTheArrowMemoryAlive() throws Exception {
        try (Tensor t = random(ElementType.FLOAT32, 4, 16)) {
            byte[] want = TensorBytes.logical(t);
            Tensor back;
            try (FixedShapeTensorVector v = ArrowTensors.toVector(t, "emb", allocator)) {
                back = ArrowTensors.toTensor(v);
                assertEquals(v.values().getDataBuffer().memoryAddress(), back.buffer(0).address(), "aligned: no copy");
                try (Tensor row = ArrowTensors.row(v, 2)) {
                    assertEquals(back.buffer(0).address() + 2 * 64, row.buffer(0).address());
                }
            } // the column is closed while the Hurray tensor holds the buffer
            assertArrayEquals(want, TensorBytes.logical(back));
            assertThrows(IllegalStateException.class, t::close);
            back.close(); // drops the last Arrow reference, which ends the share
        }
    }

    @Test
    void misalignedRowsAreCopiedOnce() throws Exception {
        try (Tensor t = random(ElementType.FLOAT32, 4, 3);
             FixedShapeTensorVector v = ArrowTensors.toVector(t, "x", allocator);
             Tensor row = ArrowTensors.row(v, 1)) { // starts 12 bytes in: below Hurray's 64-byte alignment
            assertNotEquals(v.values().getDataBuffer().memoryAddress() + 12, row.buffer(0).address());
            assertEquals(0, row.buffer(0).address() % 64);
            assertArrayEquals(java.util.Arrays.copyOfRange(t.toFloatArray(), 3, 6), row.toFloatArray());
        }
    }

    @Test
    void stridedPermutationsBecomeTheColumnsPermutation() throws Exception {
        // Logical [2, 4, 3] over physical rows of [3, 4] (permutation [1, 0]): strides in elements.
        TensorDescriptor d = TensorDescriptor.builder(ElementType.INT32, 2, 4, 3).layout(Layout.strided(12, 1, 4))
                .buffer(dev.hurray.BufferSpec.cpu(96)).build();
        int[] values = new int[24];
        for (int i = 0; i < 24; i++) {
            values[i] = i;
        }
        try (Tensor dense = Tensor.of(values, 24);
             Tensor t = Tensor.copyOf(d, dense.buffer(0));
             FixedShapeTensorVector v = ArrowTensors.toVector(t, "p", allocator);
             Tensor back = ArrowTensors.toTensor(v)) {
            assertArrayEquals(new long[] {3, 4}, v.type().shape());
            assertArrayEquals(new int[] {1, 0}, v.type().permutation().orElseThrow());
            assertEquals(t.descriptor().layout(), back.descriptor().layout());
            assertArrayEquals(TensorBytes.logical(t), TensorBytes.logical(back));
        }
    }

    @Test
    void variableColumnsRoundTrip() throws Exception {
        try (Tensor a = random(ElementType.INT16, 2, 3); Tensor b = random(ElementType.INT16, 0, 3);
             Tensor c = random(ElementType.INT16, 5, 1);
             VariableShapeTensorVector v = ArrowTensors.toVariableVector(List.of(a, b, c), "v", allocator)) {
            assertEquals(2, v.ndim());
            Tensor[] in = {a, b, c};
            for (int i = 0; i < 3; i++) {
                try (Tensor r = ArrowTensors.row(v, i)) {
                    assertEquals(in[i].descriptor().shape(), r.descriptor().shape());
                    assertArrayEquals(TensorBytes.logical(in[i]), TensorBytes.logical(r));
                }
            }
        }
        try (Tensor a = random(ElementType.INT16, 2); Tensor b = random(ElementType.FLOAT32, 2)) {
            ArrowTensorException e = assertThrows(ArrowTensorException.class,
                    () -> ArrowTensors.toVariableVector(List.of(a, b), "v", allocator));
            assertTrue(e.getMessage().contains("one element type and rank"), e.getMessage());
        }
    }

    @Test
    void namedTablesPickFixedOrVariableAndRefuseMixedTypes() throws Exception {
        try (Tensor a = random(ElementType.FLOAT32, 3); Tensor b = random(ElementType.FLOAT32, 3);
             Tensor c = random(ElementType.FLOAT32, 5); Tensor d = random(ElementType.INT8, 3);
             Tensor na = Tensor.copyOf(a.descriptor().withName("a"), a.buffer(0));
             Tensor nb = Tensor.copyOf(b.descriptor().withName("b"), b.buffer(0));
             Tensor nc = Tensor.copyOf(c.descriptor().withName("c"), c.buffer(0));
             Tensor nd = Tensor.copyOf(d.descriptor().withName("d"), d.buffer(0))) {
            try (VectorSchemaRoot root = ArrowTables.table(List.of(na, nb), allocator)) {
                assertTrue(root.getVector("tensor") instanceof FixedShapeTensorVector);
            }
            try (VectorSchemaRoot root = ArrowTables.table(List.of(na, nc), allocator)) {
                assertTrue(root.getVector("tensor") instanceof VariableShapeTensorVector);
            }
            ArrowTensorException e = assertThrows(ArrowTensorException.class, () -> ArrowTables.table(List.of(na, nd), allocator));
            assertTrue(e.getMessage().startsWith("mixed element types ('a' float32[3], 'd' int8[3])"), e.getMessage());
        }
    }

    @Test
    void metadataFollowsTheCanonicalSpec() {
        FixedShapeTensorType t = new FixedShapeTensorType(new long[] {2, 3}, List.of("H", "W"), new int[] {1, 0});
        assertEquals("{\"shape\":[2,3],\"dim_names\":[\"H\",\"W\"],\"permutation\":[1,0]}", t.serialize());
        assertEquals(t, t.deserialize(new ArrowType.FixedSizeList(6), t.serialize()));
        assertEquals("{}", VariableShapeTensorType.of().serialize());
        VariableShapeTensorType v = new VariableShapeTensorType(null, null, new Long[] {null, 3L});
        assertEquals("{\"uniform_shape\":[null,3]}", v.serialize());
        assertEquals(v, v.deserialize(ArrowType.Struct.INSTANCE, v.serialize()));
        assertThrows(InvalidExtensionMetadataException.class, () -> t.deserialize(ArrowType.Struct.INSTANCE, t.serialize()));
        InvalidExtensionMetadataException e = assertThrows(InvalidExtensionMetadataException.class,
                () -> t.deserialize(new ArrowType.FixedSizeList(6), "{\"shape\":[2,3],\"permutation\":[1,1]}"));
        assertEquals("arrow.fixed_shape_tensor: permutation [1, 1] is not a permutation of 0..1", e.getMessage());
        e = assertThrows(InvalidExtensionMetadataException.class,
                () -> t.deserialize(new ArrowType.FixedSizeList(6), "{\"shape\":[" + "1,".repeat(40) + "1]}"));
        assertTrue(e.getMessage().contains("at most 32 dimensions"), e.getMessage());
        e = assertThrows(InvalidExtensionMetadataException.class,
                () -> t.deserialize(new ArrowType.FixedSizeList(6), "{\"shape\":[99999999999999999999999]}"));
        assertTrue(e.getMessage().contains("shape[0] is not an integer"), e.getMessage());
    }

    @Test
    void tablesGoToHurrayStreamsAndFilesAndBack(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        try (Tensor a = random(ElementType.FLOAT32, 4); Tensor b = random(ElementType.FLOAT32, 4);
             Tensor na = Tensor.copyOf(a.descriptor().withName("a"), a.buffer(0));
             Tensor nb = Tensor.copyOf(b.descriptor().withName("b"), b.buffer(0));
             VectorSchemaRoot root = ArrowTables.table(List.of(na, nb), allocator)) {
            ByteArrayOutputStream ipc = new ByteArrayOutputStream();
            ArrowTables.write(root, Channels.newChannel(ipc), true);
            byte[] stream;
            try (ArrowStreamReader r = new ArrowStreamReader(new ByteArrayInputStream(ipc.toByteArray()), allocator);
                 dev.hurray.Writer w = dev.hurray.Writer.toMemory()) {
                assertEquals(2, ArrowTables.toHurray(r, w));
                w.finish();
                stream = w.toByteArray();
            }
            try (dev.hurray.Reader r = dev.hurray.Reader.of(stream); VectorSchemaRoot back = ArrowTables.fromHurray(r, allocator)) {
                assertEquals("b", back.getVector("name").getObject(1).toString());
                try (Tensor t = ArrowTensors.row((FixedShapeTensorVector) back.getVector("tensor"), 1)) {
                    assertArrayEquals(TensorBytes.logical(b), TensorBytes.logical(t));
                }
            }
            java.nio.file.Path file = dir.resolve("t.hrry");
            try (ArrowStreamReader r = new ArrowStreamReader(new ByteArrayInputStream(ipc.toByteArray()), allocator);
                 dev.hurray.HurrayFileWriter w = dev.hurray.HurrayFile.create(file)) {
                ArrowTables.toHurray(r, w);
                w.finish();
            }
            try (dev.hurray.HurrayFile f = dev.hurray.HurrayFile.open(file); Tensor t = f.read("a");
                 VectorSchemaRoot back = ArrowTables.fromHurray(f, allocator)) {
                assertArrayEquals(TensorBytes.logical(a), TensorBytes.logical(t));
                assertEquals(2, back.getRowCount());
            }
        }
    }
}
