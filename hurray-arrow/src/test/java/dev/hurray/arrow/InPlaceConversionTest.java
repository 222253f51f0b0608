package dev.hurray.arrow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.Channels;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.ArrowWriter;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.ByteArrayReadableSeekableByteChannel;
import org.junit.jupiter.api.Test;

/**
 * {@link ArrowTables#toHurray}: payloads written from the Arrow memory in place (no copy, any
 * alignment), the segments dead once the batch is done, held batches released on every path,
 * truncated IPC input refused without a leak.
 */
class InPlaceConversionTest extends WithAllocator {
    static final int DIM = 3;

    /** {@code rows} float32[DIM] rows: row r holds r*DIM .. r*DIM+DIM-1. */
    static Tensor rows(int rows) {
        Tensor t = Tensor.allocate(TensorDescriptor.of(ElementType.FLOAT32, rows, DIM));
        for (int i = 0; i < rows * DIM; i++) {
            t.buffer(0).setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
        }
        return t;
    }

    /**
     * An IPC stream or file of one fixed-shape column {@code x} (and a {@code name} column
     * when {@code named}) in record batches of {@code batches[i]} rows each.
     */
    byte[] ipc(Tensor all, boolean stream, boolean named, int... batches) throws IOException {
        return ipc(all, stream, named, v -> { }, batches);
    }

    /** As {@link #ipc(Tensor, boolean, boolean, int...)}, {@code edit} changing each batch's column first. */
    byte[] ipc(Tensor all, boolean stream, boolean named, java.util.function.Consumer<FixedShapeTensorVector> edit, int... batches)
            throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Field x = new FixedShapeTensorType(new long[] {DIM}, null, null)
                .field("x", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), true);
        Schema schema = new Schema(named ? List.of(Field.nullable(ArrowTables.NAME_COLUMN, ArrowType.Utf8.INSTANCE), x) : List.of(x));
        try (VectorSchemaRoot out = VectorSchemaRoot.create(schema, allocator);
             ArrowWriter w = stream ? new ArrowStreamWriter(out, null, Channels.newChannel(bytes))
                     : new ArrowFileWriter(out, null, Channels.newChannel(bytes))) {
            w.start();
            int start = 0;
            for (int n : batches) {
                try (Tensor part = Tensor.copyOf(TensorDescriptor.of(ElementType.FLOAT32, n, DIM),
                        all.buffer(0).asSlice((long) start * DIM * 4, (long) n * DIM * 4));
                     FixedShapeTensorVector v = ArrowTensors.toVector(part, "x", allocator);
                     VarCharVector names = new VarCharVector(ArrowTables.NAME_COLUMN, allocator)) {
                    names.allocateNew(Math.max(1, n));
                    for (int i = 0; i < n; i++) {
                        names.setSafe(i, ("r" + (start + i)).getBytes(StandardCharsets.UTF_8));
                    }
                    names.setValueCount(n);
                    edit.accept(v);
                    try (VectorSchemaRoot b = named ? new VectorSchemaRoot(List.of(names.getField(), v.getField()),
                            List.of(names, v), n) : new VectorSchemaRoot(List.of(v.getField()), List.of(v), n);
                         ArrowRecordBatch rb = new VectorUnloader(b).getRecordBatch()) {
                        new VectorLoader(out).load(rb);
                        w.writeBatch();
                        out.clear(); // drops its hold on the part's memory
                    }
                }
                start += n;
            }
            w.end();
        }
        return bytes.toByteArray();
    }

    ArrowReader reader(byte[] ipc, boolean stream) throws IOException {
        return stream ? new ArrowStreamReader(new ByteArrayInputStream(ipc), allocator)
                : new ArrowFileReader((SeekableByteChannel) new ByteArrayReadableSeekableByteChannel(ipc), allocator);
    }

    static float[] floats(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_FLOAT);
    }

    @Test
    void aSingleBatchColumnIsHandedOverInTheArrowMemoryAndItsSegmentDiesAfterwards() throws IOException {
        try (Tensor all = rows(5)) {
            for (boolean stream : new boolean[] {true, false}) {
                byte[] ipc = ipc(all, stream, false, 5);
                List<MemorySegment> kept = new ArrayList<>();
                try (ArrowReader r = reader(ipc, stream)) {
                    long n = ArrowTables.read(r, (v, scope) -> {
                        MemorySegment s = v.segment(scope);
                        // In place: the segment is the Arrow buffer's own memory, whatever its alignment.
                        assertEquals(v.buffer().memoryAddress() + v.offset(), s.address());
                        assertTrue(v.buffer().getReferenceManager().getRefCount() >= 1);
                        assertEquals("x", v.descriptor().name().orElseThrow());
                        assertArrayEquals(new long[] {5, DIM}, v.descriptor().shape().dims());
                        assertArrayEquals(all.toFloatArray(), floats(s));
                        kept.add(s);
                    }, t -> fail("a single batch is not gathered"));
                    assertEquals(1, n);
                }
                // A segment kept past the call throws instead of reading memory Arrow has released.
                assertThrows(IllegalStateException.class, () -> kept.get(0).get(ValueLayout.JAVA_FLOAT, 0));
            }
        }
    }

    @Test
    void rowSegmentsDieWithTheirBatch() throws IOException {
        try (Tensor all = rows(4)) {
            byte[] ipc = ipc(all, true, true, 2, 2);
            List<MemorySegment> kept = new ArrayList<>();
            try (ArrowReader r = reader(ipc, true)) {
                ArrowTables.read(r, (v, scope) -> {
                    MemorySegment s = v.segment(scope);
                    if (!kept.isEmpty() && kept.size() % 2 == 0) {
                        // The previous batch's segments are already dead while this batch is read.
                        assertThrows(IllegalStateException.class, () -> kept.get(0).get(ValueLayout.JAVA_BYTE, 0));
                    }
                    assertArrayEquals(Arrays.copyOfRange(all.toFloatArray(), kept.size() * DIM, kept.size() * DIM + DIM), floats(s));
                    kept.add(s);
                }, t -> fail("named rows are not gathered"));
            }
            assertEquals(4, kept.size());
        }
    }

    @Test
    void aSingleBatchGoesToTheStreamBitExact() throws IOException {
        try (Tensor all = rows(7)) {
            for (boolean stream : new boolean[] {true, false}) {
                byte[] hurray;
                try (ArrowReader r = reader(ipc(all, stream, false, 7), stream); Writer w = Writer.toMemory()) {
                    assertEquals(1, ArrowTables.toHurray(r, w));
                    w.finish();
                    hurray = w.toByteArray();
                }
                try (Reader r = Reader.of(hurray); Tensor t = r.read()) {
                    assertEquals("x", t.descriptor().name().orElseThrow());
                    assertArrayEquals(new long[] {7, DIM}, t.descriptor().shape().dims());
                    assertArrayEquals(all.toFloatArray(), t.toFloatArray());
                }
            }
        }
    }

    @Test
    void severalBatchesAreGatheredIntoOneTensor() throws IOException {
        try (Tensor all = rows(6)) {
            byte[] ipc = ipc(all, true, false, 2, 0, 3, 1);
            try (ArrowReader r = reader(ipc, true)) {
                long n = ArrowTables.read(r, (v, scope) -> fail("several batches are gathered, not handed over in place"), t -> {
                    assertArrayEquals(new long[] {6, DIM}, t.descriptor().shape().dims());
                    assertArrayEquals(all.toFloatArray(), t.toFloatArray());
                });
                assertEquals(1, n);
            }
            byte[] hurray;
            try (ArrowReader r = reader(ipc, true); Writer w = Writer.toMemory()) {
                ArrowTables.toHurray(r, w);
                w.finish();
                hurray = w.toByteArray();
            }
            try (Reader r = Reader.of(hurray); Tensor t = r.read()) {
                assertArrayEquals(all.toFloatArray(), t.toFloatArray());
            }
        }
    }

    @Test
    void aFailingSinkReleasesTheHeldBatches() throws IOException {
        try (Tensor all = rows(4)) {
            for (int[] batches : new int[][] {{4}, {2, 2}}) {
                try (ArrowReader r = reader(ipc(all, true, false, batches), true)) {
                    IOException e = assertThrows(IOException.class, () -> ArrowTables.read(r, (v, scope) -> {
                        throw new IOException("sink failed");
                    }, t -> {
                        throw new IOException("sink failed");
                    }));
                    assertEquals("sink failed", e.getMessage());
                }
                Writer closed = Writer.toMemory();
                closed.close();
                try (ArrowReader r = reader(ipc(all, true, false, batches), true)) {
                    assertThrows(IllegalStateException.class, () -> ArrowTables.toHurray(r, closed));
                }
            }
        }
        // noLeaks() closes the allocator: it throws if a held batch was kept.
    }

    @Test
    void nullRowsAndElementsOfNamedBatchesAreStillNamed() throws IOException {
        try (Tensor all = rows(4)) {
            byte[] nullElement = ipc(all, true, true, v -> ((org.apache.arrow.vector.BaseFixedWidthVector) v.values()).setNull(7), 4);
            byte[] nullRow = ipc(all, true, true, v -> v.getUnderlyingVector().setNull(1), 4);
            for (byte[] ipc : List.of(nullElement, nullRow)) {
                List<String> written = new ArrayList<>();
                try (ArrowReader r = reader(ipc, true)) {
                    ArrowTensorException e = assertThrows(ArrowTensorException.class,
                            () -> ArrowTables.read(r, (v, scope) -> written.add(v.descriptor().name().orElseThrow()), t -> { }));
                    assertTrue(e.getMessage().contains(ipc == nullRow ? "column 'x' row 1 is null" : "element 7 is null"), e.getMessage());
                }
                // Rows before the faulty one are handed over; none after it.
                assertEquals(ipc == nullRow ? List.of("r0") : List.of("r0", "r1"), written);
            }
        }
    }

    /**
     * Every prefix of a stream of two batches, and of a file: each is refused with an exception
     * (or, cut at a batch boundary of a stream, reads the whole batches before it), and nothing
     * held is leaked, the first batch included when the second is cut.
     */
    @Test
    void truncatedIpcIsRefusedWithoutALeak() throws IOException {
        try (Tensor all = rows(6)) {
            for (boolean stream : new boolean[] {true, false}) {
                for (boolean named : new boolean[] {false, true}) {
                    byte[] ipc = ipc(all, stream, named, 3, 3);
                    int step = Math.max(1, ipc.length / 97);
                    for (int cut = 0; cut < ipc.length; cut += step) {
                        byte[] prefix = Arrays.copyOf(ipc, cut);
                        long got;
                        try (ArrowReader r = reader(prefix, stream); Writer w = Writer.toMemory()) {
                            got = ArrowTables.toHurray(r, w);
                            w.finish();
                            try (Reader back = Reader.of(w.toByteArray())) {
                                for (Tensor t : back) {
                                    try (t) {
                                        float[] f = t.toFloatArray();
                                        assertTrue(f.length < all.toFloatArray().length || Arrays.equals(f, all.toFloatArray()),
                                                "stream " + stream + " cut " + cut);
                                    }
                                }
                            }
                        } catch (Exception expected) {
                            // Arrow's reader, or the conversion, refused the prefix: what matters is no crash and no leak.
                            assertTrue(expected instanceof IOException || expected instanceof RuntimeException, expected.toString());
                            got = -1;
                        }
                        assertTrue(!stream || got <= (named ? 6 : 1), "cut " + cut + " gave " + got);
                        assertEquals(0, allocator.getAllocatedMemory(), "stream " + stream + " cut " + cut + " leaked");
                    }
                }
            }
        }
    }
}
