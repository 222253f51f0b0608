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
 * HRRYFILE random-read throughput: one operation reads one random tensor of
 * {@code size} bytes from a 128 MiB container warm in the page cache and sums its longs
 * ({@link FileReads}); {@code impl=raw} is {@code FileChannel.read} of the same ranges into a
 * reused direct buffer. ops/s × size is bytes/s ({@link Suite} prints GB/s and ratios).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {BenchJvm.PRETOUCH, BenchJvm.XMS, BenchJvm.XMX, BenchJvm.NATIVE, BenchJvm.NIO,
    BenchJvm.UNSAFE})
@State(Scope.Benchmark)
public class FileReadBench {
    /** Container size in bytes (payloads only). */
    static final int FILE_BYTES = 128 << 20;

    /** Payload bytes per tensor: 4 KiB and 1 MiB. */
    @Param({"4096", "1048576"})
    public int size;

    /** {@code raw} (baseline), {@code open}, {@code open-nocrc}, {@code map}. */
    @Param({FileReads.RAW, FileReads.OPEN, FileReads.OPEN_NOCRC, FileReads.MAP})
    public String impl;

    private Path dir;
    private FileReads reads;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Files.createTempDirectory("hurray-bench-read");
        Path file = Containers.write(dir.resolve("c.hrry"), FILE_BYTES / size, size);
        Containers.warm(file);
        reads = FileReads.open(impl, file, 42);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        reads.close();
        Containers.deleteTree(dir);
    }

    @Benchmark
    public long randomRead() throws IOException {
        return reads.readOne();
    }
}
