package dev.hurray.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The key comparisons in about two minutes, as one compact Markdown table per section
 * (operation, size, Hurray, baseline, ratio), for closing notes. Every figure is the median of
 * interleaved rounds ({@link Sampler}), and every ratio compares figures of this run.
 *
 * <pre>
 * java -XX:+AlwaysPreTouch -Xms1g -Xmx1g --enable-native-access=ALL-UNNAMED \
 *      --add-opens=java.base/java.nio=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
 *      -cp hurray-java-bench/target/benchmarks.jar dev.hurray.bench.SideBySide [--rounds N] [--only loopback,memory,file,costs]
 * </pre>
 *
 * The ratio is always Hurray's speed over the baseline's: above 1 means Hurray is faster.
 */
public final class SideBySide {
    private static final int MIB = 1 << 20;

    private final int rounds;
    private final long roundNanos;

    private SideBySide(int rounds, long roundNanos) {
        this.rounds = rounds;
        this.roundNanos = roundNanos;
    }

    public static void main(String[] args) throws Exception {
        int rounds = 7;
        long roundMillis = 200;
        Set<String> only = Set.of("loopback", "memory", "file", "costs");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--round-ms" -> roundMillis = Long.parseLong(args[++i]);
                case "--only" -> only = Set.of(args[++i].split(","));
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (use --rounds N, --round-ms MS, --only loopback,memory,file,costs)");
            }
        }
        SideBySide s = new SideBySide(rounds, roundMillis * 1_000_000L);
        System.out.println(header());
        if (only.contains("loopback")) {
            System.out.println(s.loopback());
        }
        if (only.contains("memory")) {
            System.out.println(s.memory());
        }
        if (only.contains("file")) {
            System.out.println(s.file());
        }
        if (only.contains("costs")) {
            System.out.println(s.costs());
        }
    }

    static String header() {
        List<String> flags = ManagementFactory.getRuntimeMXBean().getInputArguments();
        String warn = flags.contains("-XX:+AlwaysPreTouch") ? "" : "\n**warning: run without -XX:+AlwaysPreTouch**";
        return String.format(Locale.ROOT, "SideBySide %s, JDK %s, %d cores, %s%s%n", LocalDate.now(),
                Runtime.version(), Runtime.getRuntime().availableProcessors(), String.join(" ", flags), warn);
    }

    /** Loopback TCP: Hurray channel transport and Arrow IPC against a raw SocketChannel. */
    String loopback() throws IOException {
        StringBuilder out = new StringBuilder("### Loopback TCP, one connection (GB/s, median of " + rounds
                + " rounds; ratio = GB/s over raw's)\n\n");
        List<String> impls = new ArrayList<>(Loopback.transports());
        out.append("| operation | size | transport | GB/s | vs raw | faults/msg | ms/msg (min–max round) |\n");
        out.append("|---|---:|---|---:|---:|---:|---|\n");
        for (int size : new int[] {MIB, 4 * MIB, 16 * MIB, 64 * MIB}) {
            Map<String, Loopback> open = new LinkedHashMap<>();
            try {
                Map<String, Sampler.Op> ops = new LinkedHashMap<>();
                for (String impl : impls) {
                    Loopback lb = Loopback.open(impl, size);
                    open.put(impl, lb);
                    ops.put(impl, lb::receiveOne);
                }
                Map<String, Sampler.Sample> r = Sampler.run(ops, 3 * roundNanos, rounds, roundNanos);
                Sampler.Sample raw = r.get(Loopback.RAW);
                for (String impl : impls) {
                    Sampler.Sample x = r.get(impl);
                    out.append(String.format(Locale.ROOT, "| receive | %d MiB | %s | %.2f | %s | %.0f | %.2f–%.2f |%n",
                            size / MIB, impl, x.gbPerSecond(), impl.equals(Loopback.RAW) ? ""
                                    : String.format(Locale.ROOT, "%.2f", x.gbPerSecond() / raw.gbPerSecond()),
                            x.faultsPerOp(), x.minNsPerOp() / 1e6, x.maxNsPerOp() / 1e6));
                }
            } finally {
                for (Loopback lb : open.values()) {
                    lb.close();
                }
            }
        }
        return out.toString();
    }

    /** 1 KiB tensors in memory: µs per write, read and write+read; raw copy and Arrow IPC alongside. */
    String memory() throws IOException {
        int size = 1024;
        StringBuilder out = new StringBuilder("### 1 KiB tensors in memory (µs per tensor, median of " + rounds
                + " rounds; ratio = speed over the baseline's)\n\n");
        out.append("| operation | size | Hurray µs | raw copy µs | Hurray/raw | Arrow µs | Hurray/Arrow | faults/op Hurray |\n");
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|\n");
        try (InMemory h = InMemory.open(InMemory.HURRAY, size); InMemory raw = InMemory.open(InMemory.RAW, size);
                InMemory arrow = InMemory.open(InMemory.ARROW, size)) {
            for (String op : new String[] {"write", "read", "writeRead"}) {
                Map<String, Sampler.Op> ops = new LinkedHashMap<>();
                ops.put("hurray", pick(h, op));
                ops.put("raw", pick(raw, op));
                ops.put("arrow", pick(arrow, op));
                // longer warm-up: these paths are short and need the JIT
                Map<String, Sampler.Sample> r = Sampler.run(ops, 5 * roundNanos, rounds, roundNanos);
                Sampler.Sample hs = r.get("hurray");
                Sampler.Sample rs = r.get("raw");
                Sampler.Sample as = r.get("arrow");
                out.append(String.format(Locale.ROOT, "| %s | 1 KiB | %.3f | %.3f | %.3f | %.3f | %.2f | %.3f |%n",
                        op.equals("writeRead") ? "write+read" : op, hs.usPerOp(), rs.usPerOp(),
                        rs.nsPerOp() / hs.nsPerOp(), as.usPerOp(), as.nsPerOp() / hs.nsPerOp(), hs.faultsPerOp()));
            }
        }
        return out.toString();
    }

    private static Sampler.Op pick(InMemory m, String op) {
        return switch (op) {
            case "write" -> m::write;
            case "read" -> m::read;
            case "writeRead" -> m::writeRead;
            default -> throw new IllegalArgumentException(op);
        };
    }

    /** HRRYFILE: open time and random reads through open() and map() against FileChannel.read. */
    String file() throws IOException {
        return FileSide.table(rounds, roundNanos);
    }

    /** Unit costs behind per-tensor overheads. */
    String costs() throws IOException {
        StringBuilder out = new StringBuilder("### Unit costs on this machine (median of " + rounds + " rounds)\n\n");
        out.append("| operation | ns/op | GB/s | faults/op |\n|---|---:|---:|---:|\n");
        try (Arena arena = Arena.ofConfined(); NativeFloor floor = new NativeFloor(1024);
                InMemory h = InMemory.open(InMemory.HURRAY, 1024)) {
            Map<String, Sampler.Op> ops = new LinkedHashMap<>(Costs.ops(arena, 64 * MIB));
            ops.put("1 KiB read, raw bindings: next_tensor + tensor_destroy", floor::readOne);
            ops.put("1 KiB read, Java API: Reader.read + Tensor.close", h::read);
            Map<String, Sampler.Sample> r = Sampler.run(ops, 5 * roundNanos, rounds, roundNanos);
            for (Map.Entry<String, Sampler.Sample> e : r.entrySet()) {
                Sampler.Sample s = e.getValue();
                out.append(String.format(Locale.ROOT, "| %s | %.1f | %s | %.1f |%n", e.getKey(), s.nsPerOp(),
                        s.bytesPerNs() > 0 ? String.format(Locale.ROOT, "%.2f", s.gbPerSecond()) : "", s.faultsPerOp()));
            }
        }
        return out.toString();
    }
}
