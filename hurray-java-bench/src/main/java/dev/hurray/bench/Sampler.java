package dev.hurray.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Interleaved sampling for {@link SideBySide}: each task runs for a fixed time in turn, round
 * after round, in a rotating order, so that a burst of load on the noisy 2-core machine hits
 * every task alike; the median round is reported. Also counts minor page faults
 * ({@code /proc/self/stat}), which tell whether a task keeps touching fresh memory.
 */
final class Sampler {
    /** One measured operation; returns the payload bytes it moved. */
    @FunctionalInterface
    interface Op {
        long run() throws IOException;
    }

    /** Per-task result: medians over rounds, and the spread. */
    record Sample(double nsPerOp, double bytesPerNs, double minNsPerOp, double maxNsPerOp, double faultsPerOp,
            long ops) {
        double gbPerSecond() {
            return bytesPerNs;
        }

        double usPerOp() {
            return nsPerOp / 1000;
        }
    }

    private Sampler() {
    }

    /**
     * Runs every task for {@code warmupNanos} once, then {@code rounds} rounds of
     * {@code roundNanos} each, rotating the order every round.
     */
    static Map<String, Sample> run(Map<String, Op> tasks, long warmupNanos, int rounds, long roundNanos)
            throws IOException {
        List<String> names = new ArrayList<>(tasks.keySet());
        for (String n : names) {
            timed(tasks.get(n), warmupNanos);
        }
        Map<String, double[]> ns = new LinkedHashMap<>();
        Map<String, double[]> bpn = new LinkedHashMap<>();
        Map<String, long[]> faults = new LinkedHashMap<>();
        Map<String, long[]> ops = new LinkedHashMap<>();
        for (String n : names) {
            ns.put(n, new double[rounds]);
            bpn.put(n, new double[rounds]);
            faults.put(n, new long[1]);
            ops.put(n, new long[1]);
        }
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < names.size(); i++) {
                String n = names.get((i + r) % names.size());
                long f0 = minorFaults();
                long[] t = timed(tasks.get(n), roundNanos);
                faults.get(n)[0] += minorFaults() - f0;
                ops.get(n)[0] += t[0];
                ns.get(n)[r] = (double) t[2] / t[0];
                bpn.get(n)[r] = (double) t[1] / t[2];
            }
        }
        Map<String, Sample> out = new LinkedHashMap<>();
        for (String n : names) {
            double[] a = ns.get(n).clone();
            Arrays.sort(a);
            out.put(n, new Sample(median(ns.get(n)), median(bpn.get(n)), a[0], a[a.length - 1],
                    (double) faults.get(n)[0] / ops.get(n)[0], ops.get(n)[0]));
        }
        return out;
    }

    /** Runs {@code op} for at least {@code nanos} and at least 2 times: {ops, bytes, elapsed ns}. */
    private static long[] timed(Op op, long nanos) throws IOException {
        long ops = 0;
        long bytes = 0;
        long start = System.nanoTime();
        long now;
        int batch = 1;
        do {
            for (int i = 0; i < batch; i++) {
                bytes += op.run();
            }
            ops += batch;
            now = System.nanoTime();
            // grow the batch while ops are short, so reading the clock costs nothing measurable
            if (now - start < nanos / 100 && batch < 4096) {
                batch *= 2;
            }
        } while (now - start < nanos || ops < 2);
        return new long[] {ops, bytes, now - start};
    }

    static double median(double[] values) {
        double[] a = values.clone();
        Arrays.sort(a);
        int m = a.length / 2;
        return a.length % 2 == 1 ? a[m] : (a[m - 1] + a[m]) / 2;
    }

    /** Minor page faults of this process so far ({@code /proc/self/stat} field 10), or 0 where unavailable. */
    static long minorFaults() {
        try {
            String s = Files.readString(Path.of("/proc/self/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(f[7]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }
}
