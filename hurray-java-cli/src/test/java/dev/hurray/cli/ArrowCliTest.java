package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.FileEntry;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Tensor;
import dev.hurray.arrow.ArrowTables;
import dev.hurray.arrow.ArrowTensors;
import dev.hurray.arrow.FixedShapeTensorVector;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code convert} and {@code inspect} of Arrow IPC files and streams. */
class ArrowCliTest {
    @TempDir
    Path dir;

    private Path hrry(Tensor... tensors) throws Exception {
        Path p = dir.resolve("in.hrry");
        try (HurrayFileWriter w = HurrayFile.create(p)) {
            for (Tensor t : tensors) {
                w.add(t);
            }
            w.finish();
        }
        return p;
    }

    private static Tensor named(String name, float... v) throws Exception {
        try (Tensor t = Tensor.of(v, v.length)) {
            return Tensor.copyOf(t.descriptor().withName(name), t.buffer(0));
        }
    }

    @Test
    void sameShapesWriteAFixedShapeColumnAndReadBackByName() throws Exception {
        Path in;
        try (Tensor a = named("a", 1, 2, 3); Tensor b = named("b", 4, 5, 6)) {
            in = hrry(a, b);
        }
        Path arrow = dir.resolve("out.arrow");
        CliTest.Result r = CliTest.run("convert", in.toString(), arrow.toString());
        assertEquals(0, r.code(), r.err());
        ArrowTensors.register();
        try (BufferAllocator al = new RootAllocator();
             ArrowFileReader reader = new ArrowFileReader(FileChannel.open(arrow, StandardOpenOption.READ), al)) {
            reader.loadNextBatch();
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            FixedShapeTensorVector v = (FixedShapeTensorVector) root.getVector(ArrowTables.TENSOR_COLUMN);
            assertArrayEquals(new long[] {3}, v.type().shape());
            assertEquals("b", root.getVector("name").getObject(1).toString());
        }
        CliTest.Result inspect = CliTest.run("inspect", arrow.toString());
        assertEquals(0, inspect.code(), inspect.err());
        assertTrue(inspect.out().contains("arrow.fixed_shape_tensor[shape=[3]] of FloatingPoint(SINGLE)"), inspect.out());
        Path back = dir.resolve("back.hrry");
        r = CliTest.run("convert", arrow.toString(), back.toString());
        assertEquals(0, r.code(), r.err());
        try (HurrayFile f = HurrayFile.open(back); Tensor b = f.read("b")) {
            assertArrayEquals(new float[] {4, 5, 6}, b.toFloatArray());
        }
    }

    @Test
    void differentShapesWriteAVariableShapeStreamAndMixedTypesAreRefused() throws Exception {
        Path in;
        try (Tensor a = named("a", 1, 2, 3); Tensor b = named("b", 4)) {
            in = hrry(a, b);
        }
        Path arrows = dir.resolve("out.arrows");
        CliTest.Result r = CliTest.run("convert", in.toString(), arrows.toString());
        assertEquals(0, r.code(), r.err());
        ArrowTensors.register();
        try (BufferAllocator al = new RootAllocator();
             ArrowStreamReader reader = new ArrowStreamReader(Files.newInputStream(arrows), al)) {
            reader.loadNextBatch();
            assertEquals("arrow.variable_shape_tensor", ((org.apache.arrow.vector.types.pojo.ArrowType.ExtensionType)
                    reader.getVectorSchemaRoot().getVector("tensor").getField().getType()).extensionName());
        }
        r = CliTest.run("inspect", "--from", "arrow", arrows.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("arrow.variable_shape_tensor[] of FloatingPoint(SINGLE), ndim=1"), r.out());

        Path mixed;
        try (Tensor a = named("a", 1, 2); Tensor i = Tensor.of(new int[] {1, 2}, 2);
             Tensor n = Tensor.copyOf(i.descriptor().withName("i"), i.buffer(0))) {
            Files.delete(in);
            mixed = hrry(a, n);
        }
        Path out = dir.resolve("mixed.arrow");
        r = CliTest.run("convert", mixed.toString(), "--to", "arrow", out.toString());
        assertEquals(ExitCode.BAD_INPUT, r.code(), r.err());
        assertTrue(r.err().contains("mixed element types ('a' float32[2], 'i' int32[2])"), r.err());
        assertFalse(Files.exists(out));
    }

    @Test
    void withoutANameColumnAFixedColumnIsOneTensor() throws Exception {
        Path arrow = dir.resolve("emb.arrow");
        ArrowTensors.register();
        try (BufferAllocator al = new RootAllocator(); Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 3, 2);
             FixedShapeTensorVector v = ArrowTensors.toVector(t, "emb", al);
             VectorSchemaRoot root = new VectorSchemaRoot(List.of(v.getField()), List.of(v), 3);
             FileChannel ch = FileChannel.open(arrow, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ArrowTables.write(root, ch, false);
        }
        Path out = dir.resolve("emb.hrry");
        CliTest.Result r = CliTest.run("convert", arrow.toString(), out.toString());
        assertEquals(0, r.code(), r.err());
        try (HurrayFile f = HurrayFile.open(out)) {
            List<String> names = new ArrayList<>();
            for (FileEntry e : f) {
                names.add(e.name() + e.descriptor().shape());
            }
            assertEquals(List.of("emb[3,2]"), names);
        }
    }

    @Test
    void aCorruptArrowFileIsBadInput() throws Exception {
        Path bad = dir.resolve("bad.arrow");
        Files.write(bad, "ARROW1\0\0garbage".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        CliTest.Result r = CliTest.run("inspect", bad.toString());
        assertEquals(ExitCode.BAD_INPUT, r.code(), r.err());
        assertTrue(r.err().contains("not a readable Arrow IPC file or stream"), r.err());
    }
}
