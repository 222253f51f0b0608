package dev.hurray.arrow;

import dev.hurray.FileEntry;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.TensorScope;
import dev.hurray.Writer;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.ArrowWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import dev.hurray.arrow.ArrowTensors.View;
import java.nio.charset.StandardCharsets;

/**
 * Tables of named tensors: Arrow record batches with a {@code name} column and tensor columns
 * on one side, Hurray streams and HRRYFILEs of named tensors on the other.
 *
 * <h2>Reading a table ({@link #read(ArrowReader, TensorSink)})</h2>
 * The tensor columns are those of type {@link FixedShapeTensorType} or
 * {@link VariableShapeTensorType}; other columns are ignored.
 * <ul>
 *   <li>With a utf8 column {@code name}: every row of each tensor column is one tensor named by
 *       that row's {@code name}, or {@code COLUMN/NAME} when there are several tensor columns.</li>
 *   <li>Without one: a fixed-shape column is one tensor {@code [rows, ...shape]} named after the
 *       column (all record batches together, handed over after the last one), and a
 *       variable-shape column one tensor per row named {@code COLUMN/ROW} (row numbers count
 *       across record batches).</li>
 * </ul>
 * A null name, a table without tensor columns, or a tensor the conversions refuse
 * ({@link ArrowTensors}) is an {@link ArrowTensorException}.
 *
 * <h2>Writing a table ({@link #table(List, BufferAllocator)})</h2>
 * Two columns: {@code name} (utf8) and {@code tensor}, {@code arrow.fixed_shape_tensor} when every
 * tensor has the same element type and shape, else {@code arrow.variable_shape_tensor} when they
 * share the element type and rank. Mixed element types are refused.
 */
public final class ArrowTables {
    /** The name column's name, {@value}. */
    public static final String NAME_COLUMN = "name";
    /** The tensor column's name in tables this class writes, {@value}. */
    public static final String TENSOR_COLUMN = "tensor";

    static {
        ArrowTensors.register();
    }

    private ArrowTables() {
    }

    /** Receives the tensors of a table, each valid only during the call (it is closed afterwards). */
    @FunctionalInterface
    public interface TensorSink {
        /** Takes one named tensor (write it, copy it; do not keep it). */
        void accept(Tensor tensor) throws IOException;
    }

    /**
     * Reads every record batch of {@code reader} and hands each tensor to {@code sink} by the
     * rules in the class notes; returns the number of tensors. The tensors share the Arrow
     * memory where it is 64-byte aligned and are copies elsewhere ({@link ArrowTensors}).
     *
     * @throws ArrowTensorException for a table without tensor columns, a null name, or a
     *     refused tensor
     * @throws IOException what the reader or the sink threw
     */
    public static long read(ArrowReader reader, TensorSink sink) throws IOException {
        return read(reader, (View v, Arena scope) -> {
            try (Tensor t = v.toTensor()) {
                sink.accept(t);
            }
        }, sink);
    }

    /**
     * Receives a tensor still in Arrow memory, valid during the call; {@code scope} is closed
     * before that memory can be released (segments made in it die with it).
     */
    interface ViewSink {
        void accept(View view, Arena scope) throws IOException;
    }

    /**
     * The reading loop: views of every tensor to {@code views}; the fixed-shape columns of a
     * table without names after the last batch: the column of a single record batch as a view
     * (its memory held past the batch, not copied), several batches gathered into one tensor
     * (one copy) to {@code tensors}.
     */
    static long read(ArrowReader reader, ViewSink views, TensorSink tensors) throws IOException {
        ArrowTensors.register();
        Map<String, List<View>> pending = new LinkedHashMap<>();
        long[] count = {0};
        long rowBase = 0;
        try {
            boolean any = false;
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                try (Arena scope = Arena.ofConfined()) {
                    readBatch(root, rowBase, views, scope, pending, count);
                }
                rowBase += root.getRowCount();
                any = true;
            }
            if (!any) {
                // No batch at all: still check the schema, and give empty fixed columns.
                try (Arena scope = Arena.ofConfined()) {
                    readBatch(reader.getVectorSchemaRoot(), 0, views, scope, pending, count);
                }
            }
            for (Map.Entry<String, List<View>> e : pending.entrySet()) {
                List<View> parts = e.getValue();
                if (parts.size() == 1) {
                    try (Arena scope = Arena.ofConfined()) {
                        views.accept(parts.get(0), scope);
                    }
                } else {
                    try (Tensor t = concat(e.getKey(), parts)) {
                        tensors.accept(t);
                    }
                }
                count[0]++;
            }
        } finally {
            for (List<View> l : pending.values()) {
                l.forEach(View::release);
            }
        }
        return count[0];
    }

    /** The tensor columns of a table, in order. */
    static List<FieldVector> tensorColumns(VectorSchemaRoot root) {
        List<FieldVector> out = new ArrayList<>();
        for (FieldVector v : root.getFieldVectors()) {
            if (v instanceof FixedShapeTensorVector || v instanceof VariableShapeTensorVector) {
                out.add(v);
            }
        }
        return out;
    }

    private static void readBatch(VectorSchemaRoot root, long rowBase, ViewSink sink, Arena scope,
                                  Map<String, List<View>> pending, long[] count) throws IOException {
        List<FieldVector> cols = tensorColumns(root);
        if (cols.isEmpty()) {
            throw new ArrowTensorException("the table has no tensor column (" + FixedShapeTensorType.EXTENSION_NAME + " or "
                    + VariableShapeTensorType.EXTENSION_NAME + "); its schema is " + root.getSchema());
        }
        FieldVector nameVector = root.getVector(NAME_COLUMN);
        VarCharVector names = null;
        if (nameVector != null && !cols.contains(nameVector)) {
            if (!(nameVector instanceof VarCharVector v) || !(nameVector.getField().getType() instanceof ArrowType.Utf8)) {
                throw new ArrowTensorException("column '" + NAME_COLUMN + "' must be utf8, is " + nameVector.getField().getType());
            }
            names = v;
        }
        int rows = root.getRowCount();
        byte[] nameBytes = new byte[64];
        for (FieldVector col : cols) {
            String prefix = cols.size() > 1 ? col.getName() + "/" : "";
            if (names != null) {
                FixedShapeTensorVector fixed = col instanceof FixedShapeTensorVector f ? f : null;
                // One descriptor per column and batch; each row only renames it (one native call).
                TensorDescriptor template = fixed == null ? null : ArrowTensors.rowTemplate(fixed);
                // Nulls and storage bounds checked once for the batch, not once per row.
                boolean checked = fixed != null && ArrowTensors.allRowsValid(fixed, rows);
                for (int i = 0; i < rows; i++) {
                    if (names.isNull(i)) {
                        throw new ArrowTensorException("column '" + NAME_COLUMN + "' row " + (rowBase + i) + " is null");
                    }
                    // The name's bytes straight from the vector's buffers into a reused array: one String per row.
                    long start = names.getStartOffset(i);
                    int len = names.getValueLength(i);
                    if (len > nameBytes.length) {
                        nameBytes = new byte[Math.max(len, 2 * nameBytes.length)];
                    }
                    names.getDataBuffer().getBytes(start, nameBytes, 0, len);
                    String own = new String(nameBytes, 0, len, StandardCharsets.UTF_8);
                    String name = prefix.isEmpty() ? own : prefix + own;
                    sink.accept(fixed != null ? ArrowTensors.rowView(fixed, i, ArrowTensors.named(template, name, col.getName()), checked)
                            : ArrowTensors.rowView((VariableShapeTensorVector) col, i, name), scope);
                    count[0]++;
                }
            } else if (col instanceof FixedShapeTensorVector f) {
                // Held, not copied: a single batch is written from the Arrow memory after the last batch.
                pending.computeIfAbsent(col.getName(), k -> new ArrayList<>()).add(ArrowTensors.columnView(f, col.getName()).retain());
            } else {
                for (int i = 0; i < rows; i++) {
                    sink.accept(ArrowTensors.rowView((VariableShapeTensorVector) col, i, col.getName() + "/" + (rowBase + i)), scope);
                    count[0]++;
                }
            }
        }
    }

    /** One tensor of several batches' rows, copied once from the Arrow memory. */
    private static Tensor concat(String name, List<View> parts) throws ArrowTensorException {
        TensorDescriptor first = parts.get(0).descriptor();
        long rows = 0;
        long bytes = 0;
        for (View v : parts) {
            rows += v.descriptor().shape().dim(0);
            bytes += v.bytes();
        }
        long[] dims = first.shape().dims();
        dims[0] = rows;
        TensorDescriptor d;
        try {
            // The strides of a permuted column do not depend on the row count: the layout carries over.
            TensorDescriptor.Builder b = TensorDescriptor.builder(first.elementType(), dims).layout(first.layout()).name(name);
            if (first.layout().kind() == dev.hurray.Layout.Kind.STRIDED) {
                b.buffer(dev.hurray.BufferSpec.cpu(bytes));
            }
            first.metadata().forEach(b::metadata);
            d = b.build();
        } catch (IllegalArgumentException e) {
            throw new ArrowTensorException("column '" + name + "': " + e.getMessage(), e);
        }
        Tensor out = Tensor.allocate(d, TensorScope.SHARED);
        long at = 0;
        try (Arena scope = Arena.ofConfined()) {
            for (View v : parts) {
                MemorySegment.copy(v.segment(scope), 0, out.buffer(0), at, v.bytes());
                at += v.bytes();
            }
        }
        assert at == bytes;
        return out;
    }

    // ------------------------------------------------------------------ Hurray -> Arrow

    /**
     * A table of {@code name} and {@code tensor} columns, one row per tensor, copied (see the
     * class notes for which tensor type). The caller closes the root.
     *
     * @throws ArrowTensorException for an empty list, a tensor without a name, mixed element
     *     types, or mixed ranks with differing shapes
     */
    public static VectorSchemaRoot table(List<Tensor> tensors, BufferAllocator allocator) throws ArrowTensorException {
        ArrowTensors.register();
        if (tensors.isEmpty()) {
            throw new ArrowTensorException("no tensors to write (an Arrow tensor column needs an element type and shape)");
        }
        TensorDescriptor first = tensors.get(0).descriptor();
        boolean sameShape = true;
        for (Tensor t : tensors) {
            TensorDescriptor d = t.descriptor();
            if (d.name().isEmpty()) {
                throw new ArrowTensorException("a tensor " + ArrowTensors.describe(d) + " has no name; the table's '"
                        + NAME_COLUMN + "' column needs one per tensor");
            }
            if (d.elementType() != first.elementType()) {
                throw new ArrowTensorException("mixed element types (" + ArrowTensors.describe(first) + ", "
                        + ArrowTensors.describe(d) + "): an Arrow tensor column holds one element type; convert them "
                        + "or write them to separate files");
            }
            sameShape &= d.shape().equals(first.shape()) && d.layout().equals(first.layout());
        }
        VarCharVector names = new VarCharVector(NAME_COLUMN, allocator);
        FieldVector column = null;
        try {
            names.allocateNew(tensors.size());
            for (int i = 0; i < tensors.size(); i++) {
                names.setSafe(i, tensors.get(i).descriptor().name().orElseThrow().getBytes(StandardCharsets.UTF_8));
            }
            names.setValueCount(tensors.size());
            column = sameShape ? ArrowTensors.toVector(tensors, TENSOR_COLUMN, allocator)
                    : ArrowTensors.toVariableVector(tensors, TENSOR_COLUMN, allocator);
            return new VectorSchemaRoot(List.of(names.getField(), column.getField()), List.of(names, column), tensors.size());
        } catch (ArrowTensorException | RuntimeException | Error e) {
            names.close();
            if (column != null) {
                column.close();
            }
            throw e;
        }
    }

    /**
     * Writes {@code root} as one record batch to {@code out}: the IPC file format, or the IPC
     * stream format when {@code stream}. Does not close {@code out}.
     */
    public static void write(VectorSchemaRoot root, WritableByteChannel out, boolean stream) throws IOException {
        try (ArrowWriter w = stream ? new ArrowStreamWriter(root, null, out) : new ArrowFileWriter(root, null, out)) {
            w.start();
            w.writeBatch();
            w.end();
        }
    }

    /** Every tensor of a Hurray stream, as {@link #table(List, BufferAllocator)} (they are read, then copied). */
    public static VectorSchemaRoot fromHurray(Reader reader, BufferAllocator allocator) throws IOException {
        List<Tensor> all = new ArrayList<>();
        try {
            for (Tensor t : reader) {
                all.add(t);
            }
            return table(all, allocator);
        } finally {
            all.forEach(Tensor::close);
        }
    }

    /** Every tensor of an HRRYFILE in index order, as {@link #table(List, BufferAllocator)}. */
    public static VectorSchemaRoot fromHurray(HurrayFile file, BufferAllocator allocator) throws IOException {
        List<Tensor> all = new ArrayList<>();
        try {
            for (FileEntry e : file) {
                all.add(file.read(e));
            }
            return table(all, allocator);
        } finally {
            all.forEach(Tensor::close);
        }
    }

    /**
     * Writes every tensor of {@code reader} to a Hurray stream, by the naming rules of
     * {@link #read(ArrowReader, TensorSink)}; returns the count. The payloads are written from
     * the Arrow memory in place, whatever its alignment (no copy), except the gathering of a
     * fixed-shape column without names that spans several record batches. The reader loads
     * each record batch into Arrow memory first; for an IPC file on disk,
     * {@link #toHurray(Path, Writer)} sends a one-batch fixed-shape column from the file instead.
     */
    public static long toHurray(ArrowReader reader, Writer writer) throws IOException {
        return read(reader, (v, scope) -> writer.write(v.descriptor(), v.segment(scope)), writer::write);
    }

    /**
     * Writes every tensor of the Arrow IPC file or IPC stream file {@code ipcFile} to a Hurray
     * stream, by the naming rules of {@link #read(ArrowReader, TensorSink)}; returns the count.
     * This is the call to use for a file: a table without a {@code name} column whose tensor
     * columns are {@code arrow.fixed_shape_tensor} in one record batch is sent from the file
     * itself, each column's elements as one tensor {@code [rows, ...shape]} read through a
     * read-only memory map of their byte range, without loading the batch into Arrow memory.
     * Arrow's reader supplies the footer and schema; the record batch's metadata (field nodes,
     * buffer offsets and lengths) and the validity bitmaps are checked against the file's size,
     * each other and the extension type before the first byte is written.
     *
     * <p>Everything else goes through {@link ArrowFileReader} (or {@link ArrowStreamReader} for
     * an IPC stream) and {@link #toHurray(ArrowReader, Writer)}, with the same result: a
     * {@code name} column (one tensor per row), variable-shape columns, several record
     * batches (gathered into one tensor, one copy), dictionaries, compressed bodies, columns of
     * view, union or run-end encoded types, and null rows or elements (refused there, naming
     * the row).
     *
     * <p>The file must not be truncated or rewritten while this runs: its mapped bytes are
     * read by the writer's sink (a channel's {@code write}, which then fails with an
     * {@link IOException}) or, with payload checksums on, by the native encoder, which a
     * truncated mapping would crash as it would with {@link HurrayFile#map}.
     *
     * @throws ArrowTensorException for a table the conversions refuse, or metadata that breaks
     *     the IPC format (a block or buffer outside the file or its record batch body,
     *     overlapping buffers, buffer or node sizes the rows do not fit), or a file Arrow's own
     *     reading fails on with an unchecked exception or out of memory (its failure is the cause)
     * @throws IOException what reading the file or the writer threw
     */
    public static long toHurray(Path ipcFile, Writer writer) throws IOException {
        return readingArrow(ipcFile, () -> toHurrayFrom(ipcFile, writer));
    }

    /** A conversion of a file through Arrow's reading, for {@link #readingArrow}. */
    @FunctionalInterface
    private interface ArrowRead {
        long run() throws IOException;
    }

    /** Runs {@code read}, reporting what Arrow's own reading of {@code ipcFile} throws as {@link #malformed}. */
    private static long readingArrow(Path ipcFile, ArrowRead read) throws IOException {
        try {
            return read.run();
        } catch (IndexOutOfBoundsException | IllegalArgumentException | NullPointerException | ArithmeticException
                | NegativeArraySizeException | UnsupportedOperationException
                | org.apache.arrow.vector.ipc.InvalidArrowFileException
                | org.apache.arrow.vector.extension.InvalidExtensionMetadataException | OutOfMemoryError e) {
            throw malformed(ipcFile, e);
        }
    }

    /**
     * What Arrow's own reading throws for a file it cannot read (a damaged footer, schema or
     * message: an index out of range, a negative capacity, a length larger than memory; or a
     * feature its modules lack, such as a compression codec) as the documented
     * {@link ArrowTensorException}, with Arrow's failure as the cause.
     */
    private static ArrowTensorException malformed(Path ipcFile, Throwable e) {
        return new ArrowTensorException("Arrow could not read the IPC file " + ipcFile + ": "
                + (e instanceof OutOfMemoryError ? "it declares more than memory holds (damaged?)" : e.toString()), e);
    }

    private static long toHurrayFrom(Path ipcFile, Writer writer) throws IOException {
        ArrowTensors.register();
        try (FileChannel channel = FileChannel.open(ipcFile, StandardOpenOption.READ);
             BufferAllocator allocator = new RootAllocator()) {
            if (!isIpcFile(channel)) {
                try (ArrowStreamReader reader = new ArrowStreamReader(channel, allocator)) {
                    return toHurray(reader, writer);
                }
            }
            try (ArrowFileReader reader = new ArrowFileReader(channel, allocator)) {
                IpcFileColumns.Plan plan = IpcFileColumns.plan(reader, channel);
                if (!plan.direct()) {
                    return toHurray(reader, writer);
                }
                for (IpcFileColumns.Region r : plan.regions()) {
                    try (Arena scope = Arena.ofConfined()) {
                        writer.write(r.descriptor(), fileBytes(channel, r, scope));
                    }
                }
                return plan.regions().size();
            }
        }
    }

    /** As {@link #toHurray(Path, Writer)}, adding the tensors to an HRRYFILE through Arrow's reader (the caller finishes it). */
    public static long toHurray(Path ipcFile, HurrayFileWriter writer) throws IOException {
        return readingArrow(ipcFile, () -> {
            ArrowTensors.register();
            try (FileChannel channel = FileChannel.open(ipcFile, StandardOpenOption.READ);
                 BufferAllocator allocator = new RootAllocator();
                 ArrowReader reader = isIpcFile(channel) ? new ArrowFileReader(channel, allocator)
                         : new ArrowStreamReader(channel, allocator)) {
                return toHurray(reader, writer);
            }
        });
    }

    /** The IPC file format's magic, {@code ARROW1}, at the start (else the file is taken as an IPC stream). */
    private static boolean isIpcFile(FileChannel channel) throws IOException {
        java.nio.ByteBuffer magic = java.nio.ByteBuffer.allocate(6);
        while (magic.hasRemaining() && channel.read(magic, magic.position()) > 0) {
            // positional reads until 6 bytes or the end
        }
        return !magic.hasRemaining() && "ARROW1".equals(new String(magic.array(), StandardCharsets.US_ASCII));
    }

    /** A region's bytes: a read-only map of the file, or (where the file system cannot map) read into memory. */
    private static MemorySegment fileBytes(FileChannel channel, IpcFileColumns.Region r, Arena scope) throws IOException {
        if (r.bytes() == 0) {
            return scope.allocate(1).asSlice(0, 0);
        }
        try {
            return channel.map(FileChannel.MapMode.READ_ONLY, r.position(), r.bytes(), scope);
        } catch (UnsupportedOperationException e) {
            MemorySegment copy = scope.allocate(r.bytes(), 64);
            for (long at = 0; at < r.bytes(); at += 1 << 30) { // a ByteBuffer holds less than 2 GiB
                long n = Math.min(1 << 30, r.bytes() - at);
                IpcFileColumns.readFully(channel, copy.asSlice(at, n).asByteBuffer(), r.position() + at);
            }
            return copy;
        }
    }

    /** As {@link #toHurray(ArrowReader, Writer)}, adding the tensors to an HRRYFILE (the caller finishes it). */
    public static long toHurray(ArrowReader reader, HurrayFileWriter writer) throws IOException {
        return read(reader, (v, scope) -> writer.add(v.descriptor(), v.segment(scope)), writer::add);
    }
}
