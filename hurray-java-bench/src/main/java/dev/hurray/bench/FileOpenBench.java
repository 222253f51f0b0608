package dev.hurray.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * HRRYFILE open time for containers of 1, 1,000 and 100,000 tensors of 64 bytes:
 * µs per open + count + close, or open + lookup by name + close ({@code op}; {@link FileOpens});
 * {@code impl=raw} is opening the file and reading its trailer.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {BenchJvm.PRETOUCH, BenchJvm.XMS, BenchJvm.XMX, BenchJvm.NATIVE, BenchJvm.NIO,
    BenchJvm.UNSAFE})
@State(Scope.Benchmark)
public class FileOpenBench {
    /** Tensors in the container. */
    @Param({"1", "1000", "100000"})
    public int count;

    /** {@code raw} (baseline), {@code open}, {@code map}. */
    @Param({FileOpens.RAW, FileOpens.OPEN, FileOpens.MAP})
    public String impl;

    /** {@code count}: open + count + close; {@code entry}: open + entry(name) + close. */
    @Param({"count", "entry"})
    public String op;

    private Path dir;
    private FileOpens opens;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Files.createTempDirectory("hurray-bench-open");
        Path file = Containers.write(dir.resolve("c.hrry"), count, 64);
        Containers.warm(file);
        opens = new FileOpens(impl, file, op.equals("entry"));
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        Containers.deleteTree(dir);
    }

    @Benchmark
    public long open() throws IOException {
        return opens.openOnce();
    }
}
