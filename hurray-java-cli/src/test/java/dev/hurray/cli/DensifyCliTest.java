package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Layout;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.ffm.testing.ChildJvm;
import dev.hurray.formats.Npy;
import dev.hurray.formats.ForeignModel;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code convert --densify} for every input that holds sparse or paged tensors, with its byte
 * limit checked before any work, and the CLI's one-line errors for out-of-memory and
 * non-finite quantizer input.
 */
class DensifyCliTest {
    @TempDir
    Path dir;

    private static Tensor coo(long rows, long cols, int r, int c, float v) throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, rows, cols).name("m")
                .layout(Layout.coo(ElementType.INT32, 1, true)).buffer(BufferSpec.cpu(4)).buffer(BufferSpec.cpu(8)).build();
        return Tensor.copyOf(d, MemorySegment.ofArray(new float[] {v}), MemorySegment.ofArray(new int[] {r, c}));
    }

    private Path stream(String name, Tensor t) throws IOException {
        Path p = dir.resolve(name);
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
             Writer w = Writer.of(ch)) {
            w.write(t);
            w.finish();
        }
        return p;
    }

    @Test
    void aTinyStreamDescribing13GiBIsRefusedAtOnceNamingTheLimitOption() throws IOException {
        Path in;
        try (Tensor t = coo(60000, 60000, 5, 7, 1f)) {
            in = stream("huge.hrrys", t);
        }
        assertTrue(Files.size(in) < 400, "a few hundred bytes: " + Files.size(in));
        long t0 = System.nanoTime();
        CliTest.Result r = CliTest.run("convert", "--densify", in.toString(), dir.resolve("out.hrry").toString());
        r.assertError(ExitCode.BAD_INPUT, "--max-dense-bytes");
        assertTrue(r.err().contains("14400000000 bytes"), r.err());
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "refused before any work");
        assertFalse(Files.exists(dir.resolve("out.hrry")));
        // A format that cannot be written is a usage error before the input is read.
        CliTest.run("convert", "--densify", in.toString(), dir.resolve("out.json").toString())
                .assertError(ExitCode.USAGE, "");
        CliTest.run("convert", "--densify", "--max-dense-bytes", "-1", in.toString(), dir.resolve("o.hrry").toString())
                .assertError(ExitCode.USAGE, "--max-dense-bytes");
    }

    @Test
    void sparseAndPagedTensorsOfHurrayFilesAndStreamsDensifyToAnyFormat() throws IOException {
        Path hrry = dir.resolve("m.hrry");
        float[] pages = new float[3 * 2 * 2];
        for (int i = 0; i < pages.length; i++) {
            pages[i] = i;
        }
        TensorDescriptor pd = TensorDescriptor.builder(ElementType.FLOAT32, 5, 2).name("p")
                .layout(Layout.paged(ElementType.INT32, 2, 3, 3))
                .buffer(BufferSpec.cpu(4L * pages.length)).buffer(BufferSpec.cpu(12)).build();
        try (HurrayFileWriter w = HurrayFile.create(hrry);
             Tensor m = coo(2, 3, 1, 2, 4f);
             Tensor p = Tensor.copyOf(pd, MemorySegment.ofArray(pages), MemorySegment.ofArray(new int[] {2, 0, 1}))) {
            w.add("m", m);
            w.add("p", p);
            w.finish();
        }
        // HRRYFILE -> HRRYFILE keeps layouts without --densify, and densifies with it.
        Path dense = dir.resolve("dense.hrry");
        CliTest.run("convert", "--densify", hrry.toString(), dense.toString()).assertOk();
        try (HurrayFile f = HurrayFile.open(dense); Tensor m = f.read("m"); Tensor p = f.read("p")) {
            assertEquals(Layout.Kind.ROW_MAJOR, m.descriptor().layout().kind());
            assertArrayEquals(new float[] {0, 0, 0, 0, 0, 4}, m.toFloatArray());
            assertArrayEquals(new float[] {8, 9, 10, 11, 0, 1, 2, 3, 4, 5}, p.toFloatArray());
        }
        Path kept = dir.resolve("kept.hrry");
        CliTest.run("convert", hrry.toString(), kept.toString()).assertOk();
        try (HurrayFile f = HurrayFile.open(kept)) {
            assertEquals(Layout.Kind.COO, f.entry("m").orElseThrow().descriptor().layout().kind());
        }
        // A stream with a sparse tensor to .npy (refused before: "3 buffers").
        Path s;
        try (Tensor t = coo(2, 3, 0, 1, 2.5f)) {
            s = stream("m.hrrys", t);
        }
        Path npy = dir.resolve("m.npy");
        CliTest.run("convert", "--densify", s.toString(), npy.toString()).assertOk();
        try (ForeignModel fm = Npy.read(npy, "m")) {
            assertArrayEquals(new float[] {0, 2.5f, 0, 0, 0, 0},
                    fm.tensors().get(0).data().toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT));
        }
        // The limit can be lowered and raised.
        CliTest.run("convert", "--densify", "--max-dense-bytes", "23", s.toString(), dir.resolve("x.npy").toString())
                .assertError(ExitCode.BAD_INPUT, "--max-dense-bytes=23");
        CliTest.run("convert", "--densify", "--max-dense-bytes", "24", s.toString(), dir.resolve("x.npy").toString())
                .assertOk();
    }

    @Test
    void outOfMemoryIsOneLineWithoutAStack() throws Exception {
        // 96 MiB of CSR values written to npz, which copies each array onto the heap, in a JVM of 32 MiB.
        long nnz = 12L << 20;
        Path in = dir.resolve("big.hrry");
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT64, 1, nnz).name("big")
                .layout(Layout.csr(ElementType.INT32, nnz, true))
                .buffer(BufferSpec.cpu(8 * nnz)).buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(4 * nnz)).build();
        try (Tensor t = Tensor.allocate(d); HurrayFileWriter w = HurrayFile.create(in)) {
            t.buffer(1).setAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, 1, (int) nnz);
            for (int i = 0; i < nnz; i++) {
                t.buffer(2).setAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, i, i);
            }
            w.add("big", t);
            w.finish();
        }
        ChildJvm.Result r = ChildJvm.run(List.of("-Xmx32m"), Main.class.getName(), "convert", in.toString(),
                dir.resolve("big.npz").toString());
        String out = r.out();
        assertEquals(ExitCode.IO_ERROR, r.exit(), out);
        assertTrue(out.contains("hurray: error: out of memory") && out.contains("HURRAY_JAVA_OPTS=-Xmx"), out);
        assertFalse(out.contains("\tat "), out);
    }

    @Test
    void int8PerChannelRefusesNonFiniteInputAsTheBlockKindsDo() throws IOException {
        Path in = dir.resolve("nan.npy");
        dev.hurray.formats.ForeignTensor ft = new dev.hurray.formats.ForeignTensor("x", ElementType.FLOAT32, new long[] {2, 32},
                Layout.Kind.ROW_MAJOR, MemorySegment.ofArray(nanAt(64, 3)), null, -1);
        Npy.write(ft, in, null);
        for (String kind : new String[] {"int8-per-channel", "q8_0", "mxfp4"}) {
            CliTest.Result r = CliTest.run("convert", "--quantize", kind, in.toString(), dir.resolve(kind + ".hrry").toString());
            r.assertError(ExitCode.BAD_INPUT, "finite");
            assertFalse(Files.exists(dir.resolve(kind + ".hrry")), kind);
        }
    }

    /** {@code n} float32 ones, little-endian, with a NaN at {@code i}. */
    private static byte[] nanAt(int n, int i) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 * n).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int k = 0; k < n; k++) {
            b.putFloat(k == i ? Float.NaN : 1f);
        }
        return b.array();
    }
}
