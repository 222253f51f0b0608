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
 * Loopback TCP throughput (target ≥ 0.9× raw): one operation receives one message of
 * {@code size} payload bytes, sent by a thread that sends as fast as the receiver takes them.
 * {@code impl=raw} is the baseline; ops/s × size is bytes/s, and {@link Suite} prints GB/s and
 * the ratio to raw.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {BenchJvm.PRETOUCH, BenchJvm.XMS, BenchJvm.XMX, BenchJvm.NATIVE, BenchJvm.NIO,
    BenchJvm.UNSAFE})
@State(Scope.Benchmark)
public class LoopbackBench {
    /** Payload bytes per message: 1, 4, 16 and 64 MiB. */
    @Param({"1048576", "4194304", "16777216", "67108864"})
    public int size;

    /**
     * {@code raw} (baseline), {@code hurray}, {@code arrow} (reference); add
     * {@code -p impl=raw,hurray,hurray-nopool,arrow} to compare with the reader's buffer pool
     * off, in builds that have one.
     */
    @Param({Loopback.RAW, Loopback.HURRAY, Loopback.ARROW})
    public String impl;

    private Loopback loopback;

    @Setup(Level.Trial)
    public void open() throws IOException {
        loopback = Loopback.open(impl, size);
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        loopback.close();
    }

    @Benchmark
    public long receive() throws IOException {
        return loopback.receiveOne();
    }
}
