package dev.hurray.cli.io;

import dev.hurray.arrow.ArrowTables;
import dev.hurray.arrow.ArrowTensorException;
import dev.hurray.arrow.ArrowTensors;
import dev.hurray.arrow.FixedShapeTensorVector;
import dev.hurray.arrow.VariableShapeTensorVector;
import dev.hurray.formats.Format;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;

/**
 * An Arrow IPC file ({@code ARROW1} magic) or stream as a {@link Source}: its tensor columns
 * named by {@link ArrowTables}' rules. The metadata lists each tensor column's extension type and
 * parameters as {@code arrow.column.NAME}, which is what {@code inspect} shows of them.
 */
public final class ArrowSource implements Source {
    private final BufferAllocator allocator;
    private final ArrowReader reader;
    private final Map<String, byte[]> metadata;

    private ArrowSource(BufferAllocator allocator, ArrowReader reader, Map<String, byte[]> metadata) {
        this.allocator = allocator;
        this.reader = reader;
        this.metadata = metadata;
    }

    /** Opens {@code in} and reads its schema. */
    public static ArrowSource open(Path in) throws IOException {
        ArrowTensors.register();
        FileChannel ch = FileChannel.open(in, StandardOpenOption.READ);
        BufferAllocator allocator = new RootAllocator();
        ArrowReader reader = null;
        try {
            byte[] magic = new byte[6];
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(magic);
            while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
                // a short file is an Arrow stream or nothing: the reader says which
            }
            reader = new String(magic, StandardCharsets.US_ASCII).equals("ARROW1")
                    ? new ArrowFileReader(ch, allocator) : new ArrowStreamReader(ch, allocator);
            Map<String, byte[]> m = new LinkedHashMap<>();
            for (FieldVector v : reader.getVectorSchemaRoot().getFieldVectors()) {
                if (v instanceof FixedShapeTensorVector f) {
                    m.put("arrow.column." + v.getName(), utf8(f.type() + " of " + f.values().getField().getType()));
                } else if (v instanceof VariableShapeTensorVector t) {
                    m.put("arrow.column." + v.getName(), utf8(t.type() + " of " + t.data().getDataVector().getField().getType()
                            + ", ndim=" + t.ndim()));
                }
            }
            return new ArrowSource(allocator, reader, Collections.unmodifiableMap(m));
        } catch (IOException | RuntimeException e) {
            try (allocator; ch) {
                if (reader != null) {
                    reader.close();
                }
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw wrap(in, e);
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Arrow's own failures (bad IPC framing, invalid extension metadata) as bad input naming the file. */
    private static IOException wrap(Path in, Exception e) {
        if (e instanceof ArrowTensorException a) {
            return new ArrowTensorException(in + ": " + a.getMessage(), a);
        }
        String msg = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return new ArrowTensorException(in + ": not a readable Arrow IPC file or stream: " + msg, e);
    }

    @Override
    public Format format() {
        return Format.ARROW;
    }

    @Override
    public Map<String, byte[]> metadata() {
        return metadata;
    }

    @Override
    public long count() {
        return -1;
    }

    @Override
    public long totalBytes() {
        return -1;
    }

    @Override
    public Optional<List<Entry>> entries() {
        return Optional.empty();
    }

    @Override
    public void forEach(Action action) throws IOException {
        try {
            ArrowTables.read(reader, t -> action.accept(new Item(t.descriptor(), List.copyOf(t.buffers()), -1)));
        } catch (RuntimeException e) {
            throw new ArrowTensorException("Arrow IPC: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() throws IOException {
        try (allocator) {
            reader.close();
        }
    }
}
