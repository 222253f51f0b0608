package dev.hurray.arrow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's usage snippet, as written there. */
class ReadmeSnippetTest {
    @TempDir
    Path dir;

    @Test
    void snippetRuns() throws Exception {
        float[] values = new float[1000 * 768];
        for (int i = 0; i < values.length; i++) {
            values[i] = i;
        }
        // --- README
        ArrowTensors.register();   // once, before any Arrow reader reads a schema (the entry points also do)
        Path file = dir.resolve("embeddings.arrow");
        try (BufferAllocator allocator = new RootAllocator();
             Tensor embeddings = Tensor.of(values, 1000, 768);                    // values: a float[1000 * 768]
             FixedShapeTensorVector column = ArrowTensors.toVector(embeddings, "embedding", allocator);  // no copy
             VectorSchemaRoot table = new VectorSchemaRoot(List.of(column.getField()), List.of(column), 1000);
             FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ArrowTables.write(table, out, false);   // an IPC file; pyarrow reads the column as pa.fixed_shape_tensor
        }
        try (HurrayFileWriter hrry = HurrayFile.create(dir.resolve("embeddings.hrry"))) {
            ArrowTables.toHurray(file, hrry);       // one tensor "embedding" of shape [1000, 768]
            hrry.finish();
        }
        try (FileChannel stream = FileChannel.open(dir.resolve("embeddings.hrrys"), StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE);
             Writer writer = Writer.of(stream)) {  // or Writer.of(socketChannel)
            ArrowTables.toHurray(file, writer);     // the same tensor, sent from the IPC file's bytes
        }
        try (BufferAllocator allocator = new RootAllocator();
             HurrayFile hrry = HurrayFile.map(dir.resolve("embeddings.hrry"));   // in place (or open: read into memory)
             Tensor embedding = hrry.read("embedding");                         // a view of the mapping
             FixedShapeTensorVector column = ArrowTensors.toVector(embedding, "embedding", allocator)) {  // no copy
            System.out.println(column.getValueCount() + " rows of " + column.type());  // 1000 rows of arrow.fixed_shape_tensor[shape=[768]]
        }
        // --- end
        try (Reader r = Reader.of(FileChannel.open(dir.resolve("embeddings.hrrys"))); Tensor t = r.read()) {
            assertEquals("embedding", t.descriptor().name().orElseThrow());
            assertArrayEquals(values, t.toFloatArray());
        }
        try (HurrayFile f = HurrayFile.open(dir.resolve("embeddings.hrry")); Tensor t = f.read("embedding")) {
            assertArrayEquals(new long[] {1000, 768}, t.descriptor().shape().dims());
            assertArrayEquals(values, t.toFloatArray());
        }
    }
}
