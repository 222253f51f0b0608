package dev.hurray.arrow;

import dev.hurray.TensorDescriptor;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TypeLayout;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.message.ArrowBlock;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * Where the fixed-shape tensor columns of an Arrow IPC file lie in the file itself, so that
 * their elements can be sent from the file instead of being loaded into Arrow memory first.
 *
 * <p>Arrow's API reads the footer and the schema ({@link ArrowFileReader}); the one record
 * batch's metadata (its field nodes and buffer offsets and lengths, IPC format §Record batch
 * message) is read here with Arrow's flatbuffer classes, and nothing of the body but the tensor
 * columns' validity bitmaps. Every offset and length is checked against the file's size, the
 * body, the other buffers and what the extension type needs before anything is sent, and
 * breaking a rule is an {@link ArrowTensorException} naming it.
 *
 * <p>The plan applies only to what it can send as the reading path would: a table without a
 * {@code name} column whose tensor columns are all {@code arrow.fixed_shape_tensor}, in exactly
 * one record batch, uncompressed, without dictionaries, without view, union or run-end encoded
 * columns anywhere, and without null rows or elements. Anything else is {@link Plan#fallback()}
 * with the reason, and the caller reads the file through {@link ArrowFileReader} as before
 * (which then names a null row, decompresses, or fails as Arrow does).
 */
final class IpcFileColumns {
    /** The most metadata bytes one record batch message may have here (Arrow writes kilobytes). */
    static final int MAX_METADATA_BYTES = 16 << 20;

    private IpcFileColumns() {
    }

    /** A tensor column's elements: {@code bytes} bytes at {@code position} in the file. */
    record Region(TensorDescriptor descriptor, long position, long bytes) {
    }

    /** The regions to send in column order, or why the file takes the reading path. */
    record Plan(List<Region> regions, String fallback) {
        static Plan fallback(String why) {
            return new Plan(List.of(), why);
        }

        boolean direct() {
            return fallback == null;
        }
    }

    /**
     * Plans the columns of the file behind {@code reader} and {@code channel} (the same file;
     * the reader has loaded no batch). Reads the footer through {@code reader}.
     *
     * @throws ArrowTensorException for metadata that breaks the IPC format or the extension
     *     type: a block or buffer outside the file or its body, overlapping buffers, buffer or
     *     node sizes that differ from what the schema and the rows need
     * @throws IOException what reading the file threw
     */
    static Plan plan(ArrowFileReader reader, FileChannel channel) throws IOException {
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        if (root.getVector(ArrowTables.NAME_COLUMN) != null) {
            return Plan.fallback("a '" + ArrowTables.NAME_COLUMN + "' column: one tensor per row");
        }
        List<FieldVector> columns = ArrowTables.tensorColumns(root);
        if (columns.isEmpty()) {
            return Plan.fallback("no tensor column");
        }
        for (FieldVector c : columns) {
            if (!(c instanceof FixedShapeTensorVector)) {
                return Plan.fallback("column '" + c.getName() + "' is " + VariableShapeTensorType.EXTENSION_NAME);
            }
        }
        if (!reader.getDictionaryBlocks().isEmpty()) {
            return Plan.fallback("dictionary batches");
        }
        List<ArrowBlock> blocks = reader.getRecordBlocks();
        if (blocks.size() != 1) {
            return Plan.fallback(blocks.size() + " record batches");
        }
        // Field nodes and buffers come in the schema's depth-first field order (IPC format §Buffer layout).
        List<Field> fields = root.getSchema().getFields();
        int[] firstNode = new int[fields.size()];
        int[] firstBuffer = new int[fields.size()];
        int[] counts = new int[2];
        for (int i = 0; i < fields.size(); i++) {
            firstNode[i] = counts[0];
            firstBuffer[i] = counts[1];
            String unsupported = count(fields.get(i), counts);
            if (unsupported != null) {
                return Plan.fallback(unsupported);
            }
        }
        long fileSize = channel.size();
        ArrowBlock block = blocks.get(0);
        RecordBatch batch = recordBatch(channel, block, fileSize);
        if (batch == null) {
            return Plan.fallback("a compressed record batch body");
        }
        try {
            return regions(channel, root, batch, block, firstNode, firstBuffer, counts);
        } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
            // The flatbuffer's own offsets point outside its bytes.
            throw bad("the record batch's metadata is not a valid message (" + e + ")");
        }
    }

    private static Plan regions(FileChannel channel, VectorSchemaRoot root, RecordBatch batch, ArrowBlock block,
                                int[] firstNode, int[] firstBuffer, int[] counts) throws IOException {
        if (batch.variadicBufferCountsLength() != 0) {
            return Plan.fallback("variadic buffers");
        }
        if (batch.nodesLength() != counts[0] || batch.buffersLength() != counts[1]) {
            throw bad("the record batch has " + batch.nodesLength() + " field nodes and " + batch.buffersLength()
                    + " buffers; the schema needs " + counts[0] + " and " + counts[1]);
        }
        long bodyStart = block.getOffset() + block.getMetadataLength();
        checkBuffers(batch, block.getBodyLength());
        long rows = batch.length();
        if (rows < 0 || rows > Integer.MAX_VALUE) {
            throw bad("the record batch declares " + rows + " rows");
        }
        List<Region> regions = new ArrayList<>();
        List<FieldVector> vectors = root.getFieldVectors();
        for (int f = 0; f < vectors.size(); f++) {
            if (!(vectors.get(f) instanceof FixedShapeTensorVector column)) {
                continue;
            }
            String name = column.getName();
            long listNodeLength = batch.nodes(firstNode[f]).length();
            long valueNodeLength = batch.nodes(firstNode[f] + 1).length();
            if (listNodeLength != rows) {
                throw bad("column '" + name + "' has " + listNodeLength + " rows in a record batch of " + rows);
            }
            long elems = rows * column.type().listSize(); // both at most 2^31-1: no overflow
            if (valueNodeLength < elems) {
                throw bad("column '" + name + "' holds " + valueNodeLength + " elements; " + rows + " rows of "
                        + column.type().listSize() + " need " + elems);
            }
            TensorDescriptor d = ArrowTensors.columnDescriptor(column, rows, name);
            long bytes = d.elementType().byteSizeOf(elems);
            // Buffers: the list's validity, then its values' validity and data.
            org.apache.arrow.flatbuf.Buffer listValidity = batch.buffers(firstBuffer[f]);
            org.apache.arrow.flatbuf.Buffer valueValidity = batch.buffers(firstBuffer[f] + 1);
            org.apache.arrow.flatbuf.Buffer data = batch.buffers(firstBuffer[f] + 2);
            if (data.length() < bytes) {
                throw bad("column '" + name + "': the value buffer has " + data.length() + " bytes; " + rows + " rows need "
                        + bytes);
            }
            if (batch.nodes(firstNode[f]).nullCount() != 0 || batch.nodes(firstNode[f] + 1).nullCount() != 0
                    || !allSet(channel, bodyStart, listValidity, rows, name)
                    || !allSet(channel, bodyStart, valueValidity, elems, name)) {
                return Plan.fallback("column '" + name + "' has nulls");
            }
            regions.add(new Region(d, bodyStart + data.offset(), bytes));
        }
        return new Plan(List.copyOf(regions), null);
    }

    /**
     * Adds the field nodes and buffers of {@code field} and its children to {@code counts};
     * returns why the plan cannot handle it, or null.
     */
    private static String count(Field field, int[] counts) {
        if (field.getDictionary() != null) {
            return "dictionary-encoded column '" + field.getName() + "'";
        }
        ArrowType type = field.getType();
        while (type instanceof ArrowType.ExtensionType e) {
            type = e.storageType();
        }
        switch (type.getTypeID()) {
            case Utf8View, BinaryView, ListView, LargeListView, Union, RunEndEncoded, NONE:
                return "column '" + field.getName() + "' of type " + type;
            default:
                break;
        }
        counts[0]++;
        counts[1] += TypeLayout.getTypeBufferCount(type);
        for (Field child : field.getChildren()) {
            String why = count(child, counts);
            if (why != null) {
                return why;
            }
        }
        return null;
    }

    /**
     * The record batch message of {@code block}, checked against the file; null when its body
     * is compressed.
     */
    private static RecordBatch recordBatch(FileChannel channel, ArrowBlock block, long fileSize) throws IOException {
        long offset = block.getOffset();
        int metadata = block.getMetadataLength();
        long body = block.getBodyLength();
        if (offset < 0 || metadata < 8 || body < 0 || offset > fileSize || metadata > fileSize - offset
                || body > fileSize - offset - metadata) {
            throw bad("the footer's record batch block (offset " + offset + ", metadata " + metadata + " bytes, body "
                    + body + " bytes) does not lie inside the file's " + fileSize + " bytes");
        }
        if (metadata > MAX_METADATA_BYTES) {
            throw bad("the record batch's metadata has " + metadata + " bytes, more than " + MAX_METADATA_BYTES);
        }
        ByteBuffer bytes = ByteBuffer.allocate(metadata).order(ByteOrder.LITTLE_ENDIAN);
        readFully(channel, bytes, offset);
        // An encapsulated message: 0xFFFFFFFF, the flatbuffer's length, the flatbuffer (older writers omit the marker).
        int at = bytes.getInt(0) == -1 ? 8 : 4;
        int length = bytes.getInt(at - 4);
        if (length <= 0 || length > metadata - at) {
            throw bad("the record batch's message declares " + length + " metadata bytes; the footer's block has "
                    + (metadata - at));
        }
        try {
            Message message = Message.getRootAsMessage(bytes.slice(at, length).order(ByteOrder.LITTLE_ENDIAN));
            if (message.headerType() != MessageHeader.RecordBatch) {
                throw bad("the footer's record batch block holds a message of type "
                        + MessageHeader.name(message.headerType()));
            }
            if (message.bodyLength() != body) {
                throw bad("the record batch's message declares a body of " + message.bodyLength()
                        + " bytes; the footer's block says " + body);
            }
            RecordBatch batch = (RecordBatch) message.header(new RecordBatch());
            if (batch == null) {
                throw bad("the record batch message has no header");
            }
            return batch.compression() != null ? null : batch;
        } catch (IndexOutOfBoundsException | IllegalArgumentException | java.nio.BufferUnderflowException e) {
            throw bad("the record batch's metadata is not a valid message (" + e + ")");
        }
    }

    /** Every buffer inside the body, and no two overlapping (IPC format §Buffer layout). */
    private static void checkBuffers(RecordBatch batch, long bodyLength) throws ArrowTensorException {
        int n = batch.buffersLength();
        long[][] spans = new long[n][];
        int used = 0;
        for (int i = 0; i < n; i++) {
            org.apache.arrow.flatbuf.Buffer b = batch.buffers(i);
            long offset = b.offset();
            long length = b.length();
            if (offset < 0 || length < 0 || offset > bodyLength || length > bodyLength - offset) {
                throw bad("buffer " + i + " of the record batch (offset " + offset + ", " + length
                        + " bytes) does not lie inside its body of " + bodyLength + " bytes");
            }
            if (length > 0) {
                spans[used++] = new long[] {offset, length, i};
            }
        }
        long[][] sorted = Arrays.copyOf(spans, used);
        Arrays.sort(sorted, (a, b) -> Long.compare(a[0], b[0]));
        for (int k = 1; k < used; k++) {
            long[] prev = sorted[k - 1];
            if (sorted[k][0] < prev[0] + prev[1]) {
                throw bad("buffers " + prev[2] + " and " + sorted[k][2] + " of the record batch overlap (offsets "
                        + prev[0] + " and " + sorted[k][0] + ", " + prev[1] + " and " + sorted[k][1] + " bytes)");
            }
        }
    }

    /**
     * True when the first {@code bits} bits of a validity bitmap are set, or the bitmap is
     * absent (length 0: no nulls, IPC format); reads the bitmap from the file.
     */
    private static boolean allSet(FileChannel channel, long bodyStart, org.apache.arrow.flatbuf.Buffer bitmap, long bits,
                                  String column) throws IOException {
        if (bitmap.length() == 0 || bits == 0) {
            return true;
        }
        long bytes = (bits + 7) / 8;
        if (bitmap.length() < bytes) {
            throw bad("column '" + column + "': a validity bitmap has " + bitmap.length() + " bytes; " + bits
                    + " values need " + bytes);
        }
        ByteBuffer chunk = ByteBuffer.allocateDirect((int) Math.min(bytes, 1 << 20));
        MemorySegment chunkBits = MemorySegment.ofBuffer(chunk);
        long at = 0;
        while (at < bytes) {
            int n = (int) Math.min(chunk.capacity(), bytes - at);
            chunk.clear().limit(n);
            readFully(channel, chunk, bodyStart + bitmap.offset() + at);
            if (ValidityBits.firstClear(chunkBits, 0, Math.min(bits - at * 8, n * 8L)) >= 0) {
                return false;
            }
            at += n;
        }
        return true;
    }

    /** Fills {@code into} from {@code position} of the file, or throws {@link EOFException} at its end. */
    static void readFully(FileChannel channel, ByteBuffer into, long position) throws IOException {
        long at = position;
        while (into.hasRemaining()) {
            int n = channel.read(into, at);
            if (n < 0) {
                throw new EOFException("the Arrow IPC file ended at byte " + at + ", inside a range its metadata declares");
            }
            at += n;
        }
    }

    private static ArrowTensorException bad(String what) {
        return new ArrowTensorException("malformed Arrow IPC file: " + what);
    }
}
