package dev.hurray.bench;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@code Tensor.densify()} (CSR, 1024 × 1024 float32 at 10 % density) and {@code Tensor.gather()}
 * (a 2048 × 512 float32 KV cache in shuffled pages of 16 rows), each producing a 4 MiB dense
 * tensor, against {@code raw}: allocating a tensor of the same size and copying 4 MiB into it
 * (the least any routine producing that output must do). µs per call.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {BenchJvm.PRETOUCH, BenchJvm.XMS, BenchJvm.XMX, BenchJvm.NATIVE, BenchJvm.NIO,
    BenchJvm.UNSAFE})
@State(Scope.Benchmark)
public class SparseBench {
    /** {@code raw} (allocate + copy the output's bytes), {@code densify}, {@code gather}. */
    @Param({"raw", "densify", "gather"})
    public String impl;

    private Tensor csr;
    private Tensor paged;
    private Tensor dense;
    private TensorDescriptor denseDesc;

    @Setup(Level.Trial)
    public void open() throws HurrayException {
        Random rnd = new Random(7);
        int n = 1024;
        int nnzMax = n * n / 5;
        float[] vals = new float[nnzMax];
        int[] idx = new int[nnzMax];
        int[] ptr = new int[n + 1];
        int k = 0;
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < n; c++) {
                if (rnd.nextInt(10) == 0 && k < nnzMax) {
                    vals[k] = r + c;
                    idx[k++] = c;
                }
            }
            ptr[r + 1] = k;
        }
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, n, n).layout(Layout.csr(ElementType.INT32, k, true))
                .buffer(BufferSpec.cpu(4L * k)).buffer(BufferSpec.cpu(4L * (n + 1))).buffer(BufferSpec.cpu(4L * k)).build();
        csr = Tensor.copyOf(d, MemorySegment.ofArray(vals).asSlice(0, 4L * k), MemorySegment.ofArray(ptr),
                MemorySegment.ofArray(idx).asSlice(0, 4L * k));
        int tokens = 2048;
        int row = 512;
        int ps = 16;
        int blocks = tokens / ps;
        int[] table = new int[blocks];
        for (int i = 0; i < blocks; i++) {
            table[i] = i;
        }
        for (int i = blocks - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = table[i];
            table[i] = table[j];
            table[j] = t;
        }
        TensorDescriptor pd = TensorDescriptor.builder(ElementType.FLOAT32, tokens, row)
                .layout(Layout.paged(ElementType.INT32, ps, blocks, blocks))
                .buffer(BufferSpec.cpu(4L * tokens * row)).buffer(BufferSpec.cpu(4L * blocks)).build();
        paged = Tensor.copyOf(pd, MemorySegment.ofArray(new float[tokens * row]), MemorySegment.ofArray(table));
        denseDesc = TensorDescriptor.of(ElementType.FLOAT32, n, n);
        dense = Tensor.allocate(denseDesc);
    }

    @TearDown(Level.Trial)
    public void close() {
        csr.close();
        paged.close();
        dense.close();
    }

    @Benchmark
    public long run() throws HurrayException {
        Tensor out;
        switch (impl) {
            case "densify" -> out = csr.densify();
            case "gather" -> out = paged.gather();
            default -> {
                out = Tensor.allocate(denseDesc);
                MemorySegment.copy(dense.buffer(0), 0, out.buffer(0), 0, dense.buffer(0).byteSize());
            }
        }
        try (out) {
            return out.buffer(0).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 12345);
        }
    }
}
