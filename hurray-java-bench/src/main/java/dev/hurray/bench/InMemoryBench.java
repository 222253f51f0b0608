package dev.hurray.bench;

import java.io.IOException;
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
 * Small tensors in memory (target ≤ 2 µs per 1 KiB tensor written and read): µs per
 * operation for {@code write}, {@code read} and {@code writeRead} (see {@link InMemory}).
 * {@code impl=raw} is a plain copy of the payload bytes (the floor); {@code arrow} is Arrow Java
 * IPC (the reference).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {BenchJvm.PRETOUCH, BenchJvm.XMS, BenchJvm.XMX, BenchJvm.NATIVE, BenchJvm.NIO,
    BenchJvm.UNSAFE})
@State(Scope.Benchmark)
public class InMemoryBench {
    /** Payload bytes per tensor. */
    @Param({"1024"})
    public int size;

    /** {@code raw} (baseline), {@code hurray}, {@code arrow} (reference). */
    @Param({InMemory.RAW, InMemory.HURRAY, InMemory.ARROW})
    public String impl;

    private InMemory harness;

    @Setup(Level.Trial)
    public void open() throws IOException {
        harness = InMemory.open(impl, size);
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        harness.close();
    }

    @Benchmark
    public long write() throws IOException {
        return harness.write();
    }

    @Benchmark
    public long read() throws IOException {
        return harness.read();
    }

    @Benchmark
    public long writeRead() throws IOException {
        return harness.writeRead();
    }
}
