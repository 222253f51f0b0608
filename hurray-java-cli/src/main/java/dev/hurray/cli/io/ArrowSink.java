package dev.hurray.cli.io;

import dev.hurray.AtomicOutput;
import dev.hurray.Tensor;
import dev.hurray.arrow.ArrowTables;
import dev.hurray.arrow.ArrowTensors;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * Writes an Arrow IPC file ({@code .arrow}) or stream ({@code .arrows}) at commit: columns
 * {@code name} and {@code tensor} ({@link ArrowTables#table}). The tensors are copied as they
 * arrive (the column type depends on all of them), so the whole output is held in memory once.
 */
public final class ArrowSink implements Sink {
    private final Path target;
    private final List<Tensor> tensors = new ArrayList<>();
    private boolean committed;

    /** A sink for {@code target}; nothing is written before {@link #commit()}. */
    public ArrowSink(Path target) {
        ArrowTensors.register();
        this.target = target;
    }

    @Override
    public void begin(Map<String, byte[]> metadata) {
        // File-level metadata has no place in the table: Arrow schema metadata is not read back by the command.
    }

    @Override
    public void accept(Item item) throws IOException {
        tensors.add(Tensor.copyOf(item.descriptor(), item.payloads().toArray(java.lang.foreign.MemorySegment[]::new)));
    }

    @Override
    public void commit() throws IOException {
        boolean stream = target.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".arrows");
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = ArrowTables.table(tensors, allocator);
             AtomicOutput out = AtomicOutput.create(target)) {
            ArrowTables.write(root, out.channel(), stream);
            out.commit();
        }
        committed = true;
    }

    @Override
    public void close() {
        tensors.forEach(Tensor::close);
        tensors.clear();
    }

    @Override
    public String toString() {
        return "ArrowSink[" + target + (committed ? ", committed" : "") + "]";
    }
}
