package dev.hurray.arrow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hurray.ElementType;
import dev.hurray.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Files pyarrow 25 writes, read here; files written here, checked by pyarrow (src/test/python/arrow_fixtures.py). */
class PyArrowInteropTest {
    @TempDir
    static Path dir;
    static JsonNode index;
    static BufferAllocator allocator;

    @BeforeAll
    static void writeFixtures() throws IOException {
        PyArrow.assume();
        ArrowTensors.register(); // before any reader reads a schema
        PyArrow.fixtures("write", dir);
        index = new ObjectMapper().readTree(dir.resolve("expected/index.json").toFile());
        allocator = new RootAllocator();
    }

    @AfterAll
    static void noLeaks() {
        if (allocator != null) {
            allocator.close(); // throws if any Arrow buffer (one a tensor held, too) was not released
        }
    }

    interface BatchAction {
        void accept(VectorSchemaRoot root, long rowBase) throws IOException;
    }

    static ArrowReader open(Path file) throws IOException {
        FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
        return file.toString().endsWith(".arrows") ? new ArrowStreamReader(ch, allocator) : new ArrowFileReader(ch, allocator);
    }

    static void batches(Path file, BatchAction action) throws IOException {
        try (ArrowReader r = open(file)) {
            long base = 0;
            while (r.loadNextBatch()) {
                action.accept(r.getVectorSchemaRoot(), base);
                base += r.getVectorSchemaRoot().getRowCount();
            }
        }
    }

    static byte[] expected(String key) throws IOException {
        return Files.readAllBytes(dir.resolve("expected/" + key + ".bin"));
    }

    static long[] expectedShape(String key) {
        JsonNode s = index.get(key).get("shape");
        long[] out = new long[s.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = s.get(i).asLong();
        }
        return out;
    }

    static Stream<Arguments> fixedColumns() {
        List<Arguments> out = new ArrayList<>();
        for (String ext : List.of("arrow", "arrows")) {
            for (String k : List.of("dtypes.int8", "dtypes.int16", "dtypes.int32", "dtypes.int64", "dtypes.uint8",
                    "dtypes.uint16", "dtypes.uint32", "dtypes.uint64", "dtypes.float16", "dtypes.float32", "dtypes.float64",
                    "dtypes.bool8", "perm.chw", "perm.names", "ranks.scalar", "ranks.vector", "empty.fixed", "named.tensor")) {
                out.add(Arguments.of(k, ext));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}.{1}")
    @MethodSource("fixedColumns")
    void fixedShapeColumnsReadAsPyarrowHasThem(String key, String ext) throws IOException {
        String file = key.substring(0, key.indexOf('.'));
        String col = key.substring(key.indexOf('.') + 1);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        long[] rows = {0};
        long[][] shape = {null};
        ElementType[] type = {null};
        batches(dir.resolve(file + "." + ext), (root, base) -> {
            FixedShapeTensorVector v = (FixedShapeTensorVector) root.getVector(col);
            try (Tensor t = ArrowTensors.toTensor(v)) {
                bytes.writeBytes(TensorBytes.logical(t));
                rows[0] += t.descriptor().shape().dim(0);
                shape[0] = t.descriptor().shape().dims();
                type[0] = t.descriptor().elementType();
            }
        });
        long[] want = expectedShape(key);
        if (shape[0] != null) {
            shape[0][0] = rows[0];
            assertArrayEquals(want, shape[0]);
            String dtype = index.get(key).get("dtype").asText();
            assertEquals(col.equals("bool8") ? ElementType.BOOL : ElementType.fromFormatName(dtype), type[0]);
        }
        assertArrayEquals(expected(key), bytes.toByteArray(), key + " differs from pyarrow's to_numpy_ndarray()");
    }

    @Test
    void extensionParametersAndDimNamesAreKept() throws IOException {
        batches(dir.resolve("perm.arrow"), (root, base) -> {
            FixedShapeTensorVector v = (FixedShapeTensorVector) root.getVector("chw");
            FixedShapeTensorType t = v.type();
            assertArrayEquals(new long[] {2, 3, 4}, t.shape());
            assertEquals(List.of("C", "H", "W"), t.dimNames().orElseThrow());
            assertArrayEquals(new int[] {2, 0, 1}, t.permutation().orElseThrow());
            assertArrayEquals(new long[] {4, 2, 3}, t.logicalShape());
            assertEquals(ElementType.FLOAT32, ArrowTensors.elementType(v.values().getField().getType()));
            try (Tensor row = ArrowTensors.row(v, 1)) {
                assertArrayEquals(new long[] {4, 2, 3}, row.descriptor().shape().dims());
                assertEquals("[\"C\",\"H\",\"W\"]", row.descriptor().metadataString(ArrowTensors.DIM_NAMES_KEY).orElseThrow());
            }
            FixedShapeTensorVector names = (FixedShapeTensorVector) root.getVector("names");
            assertTrue(names.type().permutation().isEmpty());
            assertEquals(List.of("rows", "cols"), names.type().dimNames().orElseThrow());
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"arrow", "arrows"})
    void variableShapeRowsReadAsPyarrowHasThem(String ext) throws IOException {
        Map<String, byte[]> got = new LinkedHashMap<>();
        for (String file : List.of("variable", "twocols", "nulls")) {
            batches(dir.resolve(file + "." + ext), (root, base) -> {
                for (FieldVector fv : root.getFieldVectors()) {
                    if (fv instanceof VariableShapeTensorVector v) {
                        for (int i = 0; i < v.getValueCount(); i++) {
                            String key = file + "." + v.getName() + "." + (base + i);
                            if (v.isNull(i)) {
                                assertFalse(index.has(key));
                                continue;
                            }
                            try (Tensor t = ArrowTensors.row(v, i)) {
                                assertArrayEquals(expectedShape(key), t.descriptor().shape().dims(), key);
                                got.put(key, TensorBytes.logical(t));
                            }
                        }
                    }
                }
            });
        }
        List<String> keys = new ArrayList<>();
        index.fieldNames().forEachRemaining(k -> {
            if (k.startsWith("variable.") || k.startsWith("twocols.y") || k.startsWith("nulls.v")) {
                keys.add(k);
            }
        });
        assertEquals(keys.stream().sorted().toList(), got.keySet().stream().sorted().toList());
        for (String k : keys) {
            assertArrayEquals(expected(k), got.get(k), k);
        }
        batches(dir.resolve("variable." + ext), (root, base) -> {
            VariableShapeTensorVector v = (VariableShapeTensorVector) root.getVector("v");
            assertEquals(List.of("H", "W"), v.type().dimNames().orElseThrow());
            assertArrayEquals(new Long[] {null, 3L}, v.type().uniformShape().orElseThrow());
            assertEquals(2, v.ndim());
            assertEquals(0, ((VariableShapeTensorVector) root.getVector("r0")).ndim());
        });
    }

    @Test
    void nullRowsReadAsNullAndAreRefusedAsTensors() throws IOException {
        batches(dir.resolve("nulls.arrow"), (root, base) -> {
            FixedShapeTensorVector f = (FixedShapeTensorVector) root.getVector("f");
            assertTrue(f.isNull(1));
            assertFalse(f.isNull(0));
            assertEquals(null, f.getObject(1));
            ArrowTensorException e = assertThrows(ArrowTensorException.class, () -> ArrowTensors.toTensor(f));
            assertEquals("column 'f' row 1 is null; Hurray tensors have no null rows", e.getMessage());
            try (Tensor t = ArrowTensors.row(f, 0)) {
                assertEquals(2, t.descriptor().elementCount());
            }
            VariableShapeTensorVector v = (VariableShapeTensorVector) root.getVector("v");
            assertTrue(v.isNull(2));
            e = assertThrows(ArrowTensorException.class, () -> ArrowTensors.row(v, 2));
            assertTrue(e.getMessage().contains("row 2 is null"), e.getMessage());
        });
    }

    @Test
    void emptyColumnsGiveZeroRowTensors() throws IOException {
        try (ArrowReader r = open(dir.resolve("empty.arrow"))) {
            List<String> names = new ArrayList<>();
            ArrowTables.read(r, t -> names.add(t.descriptor().name().orElseThrow() + t.descriptor().shape()));
            assertEquals(List.of("fixed[0,768]"), names);
        }
    }

    @Test
    void bitPackedBooleansAreRefusedByName() throws IOException {
        batches(dir.resolve("bitbool.arrow"), (root, base) -> {
            ArrowTensorException e = assertThrows(ArrowTensorException.class,
                    () -> ArrowTensors.toTensor((FixedShapeTensorVector) root.getVector("b")));
            assertTrue(e.getMessage().contains("element type Bool (bit-packed) is not supported"), e.getMessage());
        });
    }

    static Stream<Arguments> hostileFiles() {
        return Stream.of(
                Arguments.of("badjson", "arrow.fixed_shape_tensor: metadata is not valid JSON"),
                Arguments.of("notobject", "arrow.fixed_shape_tensor: metadata must be a JSON object"),
                Arguments.of("noshape", "arrow.fixed_shape_tensor: metadata has no \"shape\""),
                Arguments.of("product", "shape [2, 3] has 6 elements but the storage is FixedSizeList[4]"),
                Arguments.of("negative", "shape[0] is negative: -2"),
                Arguments.of("huge", "has more than 2147483647 elements"),
                Arguments.of("badperm", "permutation [0, 0] is not a permutation of 0..1"),
                Arguments.of("dimnames", "dim_names has 1 names for 2 dimensions"),
                Arguments.of("varjson", "arrow.variable_shape_tensor: permutation must be a JSON array"),
                Arguments.of("varnegative", "row 0: shape[0] is negative (-1)"),
                Arguments.of("varproduct", "row 0: shape [3, 5] has 15 elements but the row holds 2"),
                Arguments.of("varuniform", "row 0: shape [1, 2] breaks uniform_shape [2, null] at dimension 0"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hostileFiles")
    void hostileFilesFailWithAClearMessage(String file, String message) {
        // Both paths: tensors (wrapped or copied) and payloads written from the Arrow memory in place.
        for (boolean inPlace : new boolean[] {false, true}) {
            Exception e = assertThrows(Exception.class, () -> {
                try (ArrowReader r = open(dir.resolve("hostile/" + file + ".arrow")); dev.hurray.Writer w = dev.hurray.Writer.toMemory()) {
                    if (inPlace) {
                        ArrowTables.toHurray(r, w);
                    } else {
                        ArrowTables.read(r, t -> { });
                    }
                }
            });
            StringBuilder chain = new StringBuilder();
            for (Throwable t = e; t != null; t = t.getCause()) {
                chain.append(t.getMessage()).append(" | ");
            }
            assertTrue(chain.toString().contains(message), "in place " + inPlace + ": " + chain);
        }
    }

    /** The Hurray stream of {@code file} through {@link ArrowTables#toHurray(Path, dev.hurray.Writer)}, or what it threw. */
    static Object viaPath(Path file) {
        try (dev.hurray.Writer w = dev.hurray.Writer.toMemory()) {
            ArrowTables.toHurray(file, w);
            w.finish();
            return w.toByteArray();
        } catch (Exception e) {
            return e;
        }
    }

    /** The same through an Arrow reader opened here and {@link ArrowTables#toHurray(ArrowReader, dev.hurray.Writer)}. */
    static Object viaReader(Path file) {
        try (ArrowReader r = open(file); dev.hurray.Writer w = dev.hurray.Writer.toMemory()) {
            ArrowTables.toHurray(r, w);
            w.finish();
            return w.toByteArray();
        } catch (Exception e) {
            return e;
        }
    }

    static IpcFileColumns.Plan plan(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
             ArrowFileReader r = new ArrowFileReader(FileChannel.open(file, StandardOpenOption.READ), allocator)) {
            return IpcFileColumns.plan(r, ch);
        }
    }

    /**
     * Every file pyarrow wrote gives the same Hurray stream through the path entry point as
     * through Arrow's reader, or the same exception: the one-batch fixed-shape files (other
     * columns beside, permutations, a sliced column) sent from the file's bytes, the rest
     * (compressed, nulls, names, several batches, variable shapes) through the reader.
     */
    @Test
    void thePathEntryPointGivesTheReadersStream() throws IOException {
        for (String f : List.of("perm.arrow", "direct/single.arrow", "direct/sliced.arrow")) {
            IpcFileColumns.Plan plan = plan(dir.resolve(f));
            assertTrue(plan.direct(), f + ": " + plan.fallback());
        }
        assertTrue(plan(dir.resolve("direct/compressed.arrow")).fallback().contains("compressed"));
        assertTrue(plan(dir.resolve("direct/fixednulls.arrow")).fallback().contains("nulls"));
        List<Path> files = new ArrayList<>();
        try (var list = Files.list(dir)) {
            list.filter(p -> p.toString().endsWith(".arrow") || p.toString().endsWith(".arrows")).forEach(files::add);
        }
        try (var list = Files.list(dir.resolve("direct"))) {
            list.forEach(files::add);
        }
        assertTrue(files.size() > 20, files.toString());
        for (Path f : files) {
            Object a = viaPath(f);
            Object b = viaReader(f);
            if (a instanceof byte[] x && b instanceof byte[] y) {
                assertTrue(Arrays.equals(x, y), f + ": the streams differ");
            } else {
                assertTrue(a instanceof Exception && b instanceof Exception, f + ": " + a + " / " + b);
                Throwable same = (Throwable) a;
                if (b instanceof RuntimeException) {
                    // What Arrow's reader throws unchecked, the path entry point reports as an
                    // ArrowTensorException caused by it.
                    assertTrue(a instanceof ArrowTensorException && same.getCause() != null, f + ": " + a);
                    same = same.getCause();
                }
                assertEquals(b.getClass(), same.getClass(), f.toString());
                assertEquals(((Exception) b).getMessage(), same.getMessage(), f.toString());
            }
        }
        Object nulls = viaPath(dir.resolve("direct/fixednulls.arrow"));
        assertTrue(nulls instanceof ArrowTensorException e && e.getMessage().contains("column 'f' row 1 is null"), nulls.toString());
        // The single file's column, sent from the file, holds pyarrow's values.
        try (dev.hurray.Reader r = dev.hurray.Reader.of((byte[]) viaPath(dir.resolve("direct/single.arrow"))); Tensor t = r.read()) {
            assertEquals("emb", t.descriptor().name().orElseThrow());
            assertArrayEquals(new long[] {4, 768}, t.descriptor().shape().dims());
        }
    }

    /** Every column read here goes back through Hurray tensors into an Arrow file that pyarrow compares with its own. */
    @Test
    void filesWrittenHereLoadInPyarrowWithTheSameValues() throws IOException {
        Path java = Files.createDirectories(dir.resolve("java"));
        for (String file : List.of("dtypes", "perm", "ranks", "variable", "named", "twocols")) {
            for (boolean stream : new boolean[] {false, true}) {
                Path out = java.resolve(file + (stream ? "-s.arrows" : ".arrow"));
                try (FileChannel ch = FileChannel.open(out, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                     ArrowReader r = open(dir.resolve(file + ".arrow"))) {
                    org.apache.arrow.vector.ipc.ArrowWriter w = null;
                    VectorSchemaRoot copy = null;
                    try {
                        while (r.loadNextBatch()) {
                            VectorSchemaRoot root = r.getVectorSchemaRoot();
                            List<FieldVector> vectors = new ArrayList<>();
                            List<Tensor> held = new ArrayList<>();
                            try {
                                for (FieldVector fv : root.getFieldVectors()) {
                                    vectors.add(throughHurray(fv, held));
                                }
                                VectorSchemaRoot batch = new VectorSchemaRoot(vectors.stream().map(FieldVector::getField).toList(),
                                        vectors, root.getRowCount());
                                if (w == null) {
                                    copy = VectorSchemaRoot.create(batch.getSchema(), allocator);
                                    w = stream ? new org.apache.arrow.vector.ipc.ArrowStreamWriter(copy, null, ch)
                                            : new org.apache.arrow.vector.ipc.ArrowFileWriter(copy, null, ch);
                                    w.start();
                                }
                                try (org.apache.arrow.vector.ipc.message.ArrowRecordBatch rb =
                                             new org.apache.arrow.vector.VectorUnloader(batch).getRecordBatch()) {
                                    new org.apache.arrow.vector.VectorLoader(copy).load(rb);
                                }
                                w.writeBatch();
                                copy.clear(); // drops the last references to the tensors' memory
                                batch.close();
                            } finally {
                                held.forEach(Tensor::close);
                            }
                        }
                        w.end();
                    } finally {
                        if (w != null) {
                            w.close();
                        }
                        if (copy != null) {
                            copy.close();
                        }
                    }
                }
            }
        }
        String out = PyArrow.fixtures("check", dir);
        assertTrue(out.contains("checked 48 columns"), out);
    }

    /** A column converted to Hurray tensors and back (a copy of the name column as it is). */
    private static FieldVector throughHurray(FieldVector fv, List<Tensor> held) throws IOException {
        if (fv instanceof FixedShapeTensorVector f) {
            Tensor t = ArrowTensors.toTensor(f);
            held.add(t);
            return ArrowTensors.toVector(t, f.getName(), allocator);
        }
        if (fv instanceof VariableShapeTensorVector v) {
            List<Tensor> rows = new ArrayList<>();
            try {
                for (int i = 0; i < v.getValueCount(); i++) {
                    rows.add(ArrowTensors.row(v, i));
                }
                return ArrowTensors.toVariableVector(rows, v.getName(), v.type(), allocator);
            } finally {
                rows.forEach(Tensor::close);
            }
        }
        org.apache.arrow.vector.util.TransferPair tp = fv.getTransferPair(allocator);
        tp.splitAndTransfer(0, fv.getValueCount());
        return (FieldVector) tp.getTo();
    }
}
