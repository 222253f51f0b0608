package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
 * Dequantization through the Java API (target ≥ 0.5× memcpy of the output on one
 * core): one operation dequantizes a [2048, 2048] tensor (16 MiB of float32 output) into a new
 * float32 {@link Tensor} with {@link Tensor#dequantize()}, which calls the native core.
 * {@code kind=raw} is the baseline: a new tensor of the same size filled by a segment copy.
 * ops/s × 16 MiB is output bytes/s; {@link Suite} prints the ratio to raw. The Rust example
 * {@code native/hurray-core/examples/quant_bench.rs} measures the core without the JVM.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {BenchJvm.PRETOUCH, BenchJvm.XMS, BenchJvm.XMX, BenchJvm.NATIVE, BenchJvm.NIO,
    BenchJvm.UNSAFE})
@State(Scope.Benchmark)
public class DequantizeBench {
    private static final int SIDE = 2048;

    /** {@code raw} (copy baseline), {@code mxfp4}, {@code nf4}, {@code q4_0}. */
    @Param({"raw", "mxfp4", "nf4", "q4_0"})
    public String impl;

    /** Output bytes per operation, for {@link Suite}'s GB/s column. */
    @Param({"16777216"})
    public int size;

    private Tensor source;
    private Tensor quantized;
    private TensorDescriptor f32;
    private Arena arena;
    private MemorySegment copySource;

    @Setup(Level.Trial)
    public void open() throws HurrayException {
        float[] w = new float[SIDE * SIDE];
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) Math.sin(i * 0.001) * 4;
        }
        source = Tensor.of(w, SIDE, SIDE);
        f32 = source.descriptor();
        arena = Arena.ofShared();
        copySource = arena.allocate(4L * w.length, 64);
        quantized = switch (impl) {
            case "mxfp4" -> source.quantize(ElementType.FLOAT4_E2M1FN, Quantization.Mx.of(1));
            case "nf4" -> source.quantize(ElementType.UINT4, Quantization.Nf4.of());
            case "q4_0" -> source.quantize(ElementType.UINT4, Quantization.Block.of(Quantization.GgufFormat.Q4_0, 2));
            default -> null;
        };
    }

    @TearDown(Level.Trial)
    public void close() {
        if (quantized != null) {
            quantized.close();
        }
        source.close();
        arena.close();
    }

    @Benchmark
    public long dequantize() throws HurrayException {
        if (quantized == null) {
            try (Tensor t = Tensor.allocate(f32)) {
                MemorySegment.copy(copySource, 0, t.buffer(0), 0, copySource.byteSize());
                return t.buffer(0).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 7);
            }
        }
        try (Tensor t = quantized.dequantize()) {
            return t.buffer(0).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 7);
        }
    }
}
