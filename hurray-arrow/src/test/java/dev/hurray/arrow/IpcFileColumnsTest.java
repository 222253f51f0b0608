package dev.hurray.arrow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.message.ArrowBlock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link IpcFileColumns} and {@link ArrowTables#toHurray(Path, Writer)}: a one-batch file is
 * sent from the file's bytes with the same stream as the reading path; everything the plan does
 * not handle falls back to that path with the same result; hostile metadata (blocks and buffers
 * outside the file or body, overlapping buffers, wrong sizes, garbage) is a clear error before
 * anything is written, never a crash or a leak.
 */
class IpcFileColumnsTest extends WithAllocator {
    @TempDir
    Path dir;

    /** The IPC bytes of {@link InPlaceConversionTest#ipc}, made with this test's allocator. */
    byte[] ipc(Tensor all, boolean stream, boolean named, java.util.function.Consumer<FixedShapeTensorVector> edit, int... batches)
            throws IOException {
        InPlaceConversionTest maker = new InPlaceConversionTest();
        maker.allocator = allocator;
        return maker.ipc(all, stream, named, edit, batches);
    }

    Path file(byte[] bytes) throws IOException {
        Path p = Files.createTempFile(dir, "t", ".arrow");
        Files.write(p, bytes);
        return p;
    }

    IpcFileColumns.Plan plan(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
             ArrowFileReader r = new ArrowFileReader(FileChannel.open(file, StandardOpenOption.READ), allocator)) {
            return IpcFileColumns.plan(r, ch);
        }
    }

    /** The Hurray stream {@link ArrowTables#toHurray(Path, Writer)} writes. */
    static byte[] direct(Path file) throws IOException {
        try (Writer w = Writer.toMemory()) {
            ArrowTables.toHurray(file, w);
            w.finish();
            return w.toByteArray();
        }
    }

    /** The Hurray stream the reading path writes for the same file. */
    byte[] throughReader(Path file, boolean stream) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
             ArrowReader r = stream ? new org.apache.arrow.vector.ipc.ArrowStreamReader(ch, allocator)
                     : new ArrowFileReader(ch, allocator);
             Writer w = Writer.toMemory()) {
            ArrowTables.toHurray(r, w);
            w.finish();
            return w.toByteArray();
        }
    }

    static byte[] bytes(Path file) throws IOException {
        return Files.readAllBytes(file);
    }

    @Test
    void aOneBatchColumnIsSentFromTheFileBitExact() throws IOException {
        try (Tensor all = InPlaceConversionTest.rows(7)) {
            Path f = file(ipc(all, false, false, v -> { }, 7));
            IpcFileColumns.Plan plan = plan(f);
            assertTrue(plan.direct(), plan.fallback());
            IpcFileColumns.Region r = plan.regions().get(0);
            assertEquals(7L * InPlaceConversionTest.DIM * 4, r.bytes());
            // The region is the column's elements in the file.
            ByteBuffer region = ByteBuffer.wrap(bytes(f), (int) r.position(), (int) r.bytes()).slice().order(ByteOrder.LITTLE_ENDIAN);
            float[] fromFile = new float[(int) (r.bytes() / 4)];
            region.asFloatBuffer().get(fromFile);
            assertArrayEquals(all.toFloatArray(), fromFile);
            byte[] hurray = direct(f);
            assertArrayEquals(throughReader(f, false), hurray);
            try (Reader back = Reader.of(hurray); Tensor t = back.read()) {
                assertEquals("x", t.descriptor().name().orElseThrow());
                assertArrayEquals(new long[] {7, InPlaceConversionTest.DIM}, t.descriptor().shape().dims());
                assertArrayEquals(all.toFloatArray(), t.toFloatArray());
            }
        }
    }

    /**
     * Columns of other types before and between tensor columns: the nodes and buffers are
     * counted through them, and each tensor column (one with dim_names and a permutation)
     * gives the reading path's tensor.
     */
    @Test
    void otherColumnsAndSeveralTensorColumns() throws IOException {
        FixedShapeTensorType permuted = new FixedShapeTensorType(new long[] {2, 3}, List.of("a", "b"), new int[] {1, 0});
        org.apache.arrow.vector.types.pojo.Schema schema = new org.apache.arrow.vector.types.pojo.Schema(List.of(
                org.apache.arrow.vector.types.pojo.Field.nullable("id", new org.apache.arrow.vector.types.pojo.ArrowType.Int(32, true)),
                org.apache.arrow.vector.types.pojo.Field.nullable("label", org.apache.arrow.vector.types.pojo.ArrowType.Utf8.INSTANCE),
                FixedShapeTensorType.of(4).field("emb", new org.apache.arrow.vector.types.pojo.ArrowType.FloatingPoint(
                        org.apache.arrow.vector.types.FloatingPointPrecision.DOUBLE), true),
                permuted.field("img", new org.apache.arrow.vector.types.pojo.ArrowType.Int(16, true), true)));
        Path f = dir.resolve("mixed.arrow");
        int rows = 5;
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            root.allocateNew();
            IntVector id = (IntVector) root.getVector("id");
            VarCharVector label = (VarCharVector) root.getVector("label");
            FixedShapeTensorVector emb = (FixedShapeTensorVector) root.getVector("emb");
            FixedShapeTensorVector img = (FixedShapeTensorVector) root.getVector("img");
            org.apache.arrow.vector.Float8Vector embValues = (org.apache.arrow.vector.Float8Vector) emb.values();
            org.apache.arrow.vector.SmallIntVector imgValues = (org.apache.arrow.vector.SmallIntVector) img.values();
            for (int i = 0; i < rows; i++) {
                id.setSafe(i, i);
                label.setSafe(i, ("label " + i).getBytes(StandardCharsets.UTF_8));
                emb.getUnderlyingVector().setNotNull(i);
                img.getUnderlyingVector().setNotNull(i);
                for (int k = 0; k < emb.type().listSize(); k++) {
                    embValues.setSafe(i * emb.type().listSize() + k, i + k / 10.0);
                }
                for (int k = 0; k < 6; k++) {
                    imgValues.setSafe(i * 6 + k, (short) (100 * i + k));
                }
            }
            embValues.setValueCount(rows * emb.type().listSize());
            imgValues.setValueCount(rows * 6);
            root.setRowCount(rows);
            try (FileChannel out = FileChannel.open(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ArrowTables.write(root, out, false);
            }
        }
        IpcFileColumns.Plan plan = plan(f);
        assertTrue(plan.direct(), plan.fallback());
        assertEquals(List.of("emb", "img"), plan.regions().stream().map(r -> r.descriptor().name().orElseThrow()).toList());
        byte[] hurray = direct(f);
        assertArrayEquals(throughReader(f, false), hurray);
        try (Reader back = Reader.of(hurray); Tensor e = back.read(); Tensor i = back.read()) {
            assertEquals(0.1 + 1, e.toDoubleArray()[(int) (e.descriptor().elementCount() / rows) + 1], 1e-12);
            // Logical [rows, 3, 2] over physical [2, 3]: element (r, j, k) is physical (k, j).
            assertArrayEquals(new long[] {rows, 3, 2}, i.descriptor().shape().dims());
            short[] logical = new short[rows * 6];
            ByteBuffer.wrap(TensorBytes.logical(i)).order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(logical);
            assertEquals((short) (100 * 4 + 1 * 3 + 1), logical[4 * 6 + 1 * 2 + 1]); // (4, j=1, k=1) -> physical (1, 1)
        }
    }

    @Test
    void whatThePlanDoesNotHandleFallsBackWithTheSameResult() throws IOException {
        try (Tensor all = InPlaceConversionTest.rows(6)) {
            List<Object[]> cases = new ArrayList<>();
            cases.add(new Object[] {"name", ipc(all, false, true, v -> { }, 6), false});
            cases.add(new Object[] {"record batches", ipc(all, false, false, v -> { }, 2, 4), false});
            cases.add(new Object[] {"stream", ipc(all, true, false, v -> { }, 6), true});
            for (Object[] c : cases) {
                Path f = file((byte[]) c[1]);
                boolean stream = (Boolean) c[2];
                if (!stream) {
                    IpcFileColumns.Plan plan = plan(f);
                    assertFalse(plan.direct());
                    assertTrue(plan.fallback().contains((String) c[0]), plan.fallback());
                }
                assertArrayEquals(throughReader(f, stream), direct(f), (String) c[0]);
            }
        }
    }

    @Test
    void nullsFallBackAndAreRefusedNamingTheRow() throws IOException {
        try (Tensor all = InPlaceConversionTest.rows(4)) {
            Path nullRow = file(ipc(all, false, false, v -> v.getUnderlyingVector().setNull(2), 4));
            Path nullElement = file(ipc(all, false, false, v -> ((org.apache.arrow.vector.BaseFixedWidthVector) v.values()).setNull(5), 4));
            for (Path f : List.of(nullRow, nullElement)) {
                IpcFileColumns.Plan plan = plan(f);
                assertFalse(plan.direct());
                assertTrue(plan.fallback().contains("nulls"), plan.fallback());
                ArrowTensorException e = assertThrows(ArrowTensorException.class, () -> direct(f));
                assertTrue(e.getMessage().contains(f == nullRow ? "row 2 is null" : "element 5 is null"), e.getMessage());
            }
        }
    }

    // ------------------------------------------------------------------ hostile files

    /** A one-batch file of 7 rows, its block, and its record batch message's buffers and nodes. */
    record Sample(byte[] bytes, ArrowBlock block, long[][] buffers, long[][] nodes) {
        int metadataStart() {
            return (int) block.getOffset();
        }

        /** Where the 16 bytes {@code a, b} (two little-endian longs) first occur in the record batch metadata. */
        int find(long a, long b) {
            byte[] want = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(a).putLong(b).array();
            for (int i = metadataStart(); i + 16 <= metadataStart() + block.getMetadataLength(); i++) {
                if (Arrays.equals(bytes, i, i + 16, want, 0, 16)) {
                    return i;
                }
            }
            throw new AssertionError("pattern not found");
        }

        byte[] with(int at, long value) {
            byte[] b = bytes.clone();
            ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putLong(at, value);
            return b;
        }

        byte[] withInt(int at, int value) {
            byte[] b = bytes.clone();
            ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(at, value);
            return b;
        }
    }

    Sample sample() throws IOException {
        try (Tensor all = InPlaceConversionTest.rows(7)) {
            byte[] bytes = ipc(all, false, false, v -> { }, 7);
            Path f = file(bytes);
            try (ArrowFileReader r = new ArrowFileReader(FileChannel.open(f, StandardOpenOption.READ), allocator)) {
                ArrowBlock block = r.getRecordBlocks().get(0);
                ByteBuffer meta = ByteBuffer.wrap(bytes, (int) block.getOffset() + 8, block.getMetadataLength() - 8).slice()
                        .order(ByteOrder.LITTLE_ENDIAN);
                RecordBatch rb = (RecordBatch) Message.getRootAsMessage(meta).header(new RecordBatch());
                long[][] buffers = new long[rb.buffersLength()][];
                for (int i = 0; i < buffers.length; i++) {
                    buffers[i] = new long[] {rb.buffers(i).offset(), rb.buffers(i).length()};
                }
                long[][] nodes = new long[rb.nodesLength()][];
                for (int i = 0; i < nodes.length; i++) {
                    nodes[i] = new long[] {rb.nodes(i).length(), rb.nodes(i).nullCount()};
                }
                return new Sample(bytes, block, buffers, nodes);
            }
        }
    }

    /** {@code bytes} is refused by the plan (so before any write) and by toHurray, with a message containing {@code what}. */
    void refused(byte[] bytes, String what) throws IOException {
        Path f = file(bytes);
        ArrowTensorException e = assertThrows(ArrowTensorException.class, () -> plan(f));
        assertTrue(e.getMessage().startsWith("malformed Arrow IPC file: ") && e.getMessage().contains(what), e.getMessage());
        ArrowTensorException again = assertThrows(ArrowTensorException.class, () -> direct(f));
        assertEquals(e.getMessage(), again.getMessage());
    }

    @Test
    void aValueBufferPastTheBodyEndIsRefused() throws IOException {
        Sample s = sample();
        long[] data = s.buffers()[2];
        int at = s.find(data[0], data[1]);
        refused(s.with(at + 8, s.block().getBodyLength() + 4096), "does not lie inside its body");
        refused(s.with(at + 8, Long.MAX_VALUE), "does not lie inside its body");
        refused(s.with(at, Long.MAX_VALUE - 2), "does not lie inside its body");
        refused(s.with(at, -8), "does not lie inside its body");
    }

    @Test
    void overlappingBuffersAreRefused() throws IOException {
        Sample s = sample();
        long[] validity = s.buffers()[0];
        assertTrue(validity[1] > 0, "the writer wrote the list's validity bitmap");
        long[] data = s.buffers()[2];
        refused(s.with(s.find(data[0], data[1]), validity[0]), "overlap");
    }

    @Test
    void wrongSizesAreRefused() throws IOException {
        Sample s = sample();
        long[] data = s.buffers()[2];
        refused(s.with(s.find(data[0], data[1]) + 8, 7L * InPlaceConversionTest.DIM * 4 - 4), "the value buffer has 80 bytes");
        long[] values = s.nodes()[1];
        refused(s.with(s.find(values[0], values[1]), values[0] - 1), "holds 20 elements");
        long[] list = s.nodes()[0];
        refused(s.with(s.find(list[0], list[1]), list[0] + 1), "has 8 rows in a record batch of 7");
    }

    @Test
    void aBlockOutsideTheFileAndABadMessageLengthAreRefused() throws IOException {
        Sample s = sample();
        byte[] offset = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN).putLong(s.block().getOffset())
                .putInt(s.block().getMetadataLength()).array();
        int footer = -1;
        for (int i = s.bytes().length - 12; i > s.metadataStart() + s.block().getMetadataLength(); i--) {
            if (Arrays.equals(s.bytes(), i, i + 12, offset, 0, 12)) {
                footer = i;
                break;
            }
        }
        assertTrue(footer > 0, "the footer's block");
        refused(s.with(footer, s.bytes().length + 100L), "does not lie inside the file's");
        refused(s.with(footer + 16, 1L << 40), "does not lie inside the file's"); // the block's body length
        refused(s.withInt(s.metadataStart() + 4, Integer.MAX_VALUE), "declares 2147483647 metadata bytes");
        refused(s.withInt(s.metadataStart() + 4, -5), "declares -5 metadata bytes");
    }

    /**
     * Every single byte of the record batch metadata changed: the result is a clear exception
     * or a stream whose tensor has the declared size, never a crash or a leak.
     */
    @Test
    void corruptedMetadataNeverCrashes() throws IOException {
        Sample s = sample();
        for (int i = s.metadataStart(); i < s.metadataStart() + s.block().getMetadataLength(); i++) {
            for (int flip : new int[] {0x01, 0x80, 0xFF}) {
                byte[] b = s.bytes().clone();
                b[i] ^= (byte) flip;
                Path f = file(b);
                try {
                    byte[] hurray = direct(f);
                    try (Reader back = Reader.of(hurray)) {
                        for (Tensor t : back) {
                            try (t) {
                                assertEquals(t.descriptor().totalBufferBytes(), t.buffer(0).byteSize());
                            }
                        }
                    }
                } catch (IOException | RuntimeException expected) {
                    assertTrue(expected.getMessage() != null || expected instanceof RuntimeException, expected.toString());
                }
                Files.delete(f);
            }
        }
        // noLeaks() closes the allocator.
    }

    /**
     * Bytes anywhere in the file changed (magic, schema, footer, body): the path entry points
     * fail only with an {@link IOException} (Arrow's own parse failures become an
     * {@link ArrowTensorException} with Arrow's as the cause), never another exception or an
     * allocation the file does not justify.
     */
    @Test
    void aDamagedFileFailsOnlyWithAnIoException() throws IOException {
        Sample s = sample();
        int n = s.bytes().length;
        for (int i = 0; i < n; i += (i < 64 || i > n - 64) ? 1 : 13) {
            byte[] b = s.bytes().clone();
            b[i] ^= (byte) 0xFF;
            Path f = file(b);
            try {
                direct(f);
            } catch (IOException expected) {
                assertTrue(expected.getMessage() != null, expected.toString());
            }
            try (dev.hurray.HurrayFileWriter w = dev.hurray.HurrayFileWriter.of(new java.io.ByteArrayOutputStream())) {
                ArrowTables.toHurray(f, w);
            } catch (IOException expected) {
                assertTrue(expected.getMessage() != null, expected.toString());
            }
            Files.delete(f);
        }
    }

    @Test
    void emptyColumn() throws IOException {
        try (Tensor none = Tensor.allocate(TensorDescriptor.of(ElementType.FLOAT32, 0, InPlaceConversionTest.DIM))) {
            Path f = file(ipc(none, false, false, v -> { }, 0));
            assertArrayEquals(throughReader(f, false), direct(f));
            try (Reader back = Reader.of(direct(f)); Tensor t = back.read()) {
                assertArrayEquals(new long[] {0, InPlaceConversionTest.DIM}, t.descriptor().shape().dims());
            }
        }
    }
}
