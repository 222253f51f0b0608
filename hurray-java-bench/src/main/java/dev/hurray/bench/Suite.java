package dev.hurray.bench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;

/**
 * Runs JMH with the usual command-line options, then prints every result next to its baseline
 * from the same run: results that differ only in their {@code impl} parameter are compared to
 * the one with {@code impl=raw}, and Hurray's results also to {@code impl=arrow} where there is
 * one. A ratio is the speed of the row over the baseline's (above 1 is faster, whatever the
 * JMH mode). For throughput results with a {@code size} parameter (payload
 * bytes per operation) it also prints GB/s (10^9 bytes per second).
 *
 * <pre>java -cp benchmarks.jar dev.hurray.bench.Suite [JMH options, e.g. -f 1 -wi 2 -i 3 Loopback]</pre>
 */
public final class Suite {
    private Suite() {
    }

    public static void main(String[] args) throws Exception {
        Options options = new CommandLineOptions(args);
        Collection<RunResult> results = new Runner(options).run();
        System.out.println();
        System.out.println(table(results));
    }

    /** A row of the ratio table. */
    record Row(String benchmark, String params, String impl, double score, double error, String unit,
            boolean higherIsBetter, double gbPerSecond) {
    }

    static String table(Collection<RunResult> results) {
        Map<String, List<Row>> groups = new LinkedHashMap<>();
        for (RunResult r : results) {
            BenchmarkParams p = r.getParams();
            Result<?> primary = r.getPrimaryResult();
            StringBuilder key = new StringBuilder();
            String impl = "";
            double size = Double.NaN;
            for (String k : p.getParamsKeys()) {
                String v = p.getParam(k);
                if (k.equals("impl")) {
                    impl = v;
                    continue;
                }
                if (k.equals("size")) {
                    size = Double.parseDouble(v);
                }
                key.append(key.isEmpty() ? "" : " ").append(k).append('=').append(v);
            }
            boolean throughput = p.getMode() == org.openjdk.jmh.annotations.Mode.Throughput;
            double gb = throughput && !Double.isNaN(size) && primary.getScoreUnit().equals("ops/s")
                    ? primary.getScore() * size / 1e9 : Double.NaN;
            String bench = p.getBenchmark().replaceFirst("^dev\\.hurray\\.bench\\.", "");
            groups.computeIfAbsent(bench + "|" + key, x -> new ArrayList<>())
                    .add(new Row(bench, key.toString(), impl, primary.getScore(), primary.getScoreError(),
                            primary.getScoreUnit(), throughput, gb));
        }
        StringBuilder out = new StringBuilder();
        String format = "%-26s %-14s %-11s %26s %7s %7s %8s %9s%n";
        out.append(String.format(Locale.ROOT, format, "benchmark", "params", "impl", "score ± error", "unit", "GB/s",
                "vs raw", "vs arrow"));
        for (List<Row> g : groups.values()) {
            Row raw = g.stream().filter(r -> r.impl().equals("raw")).findFirst().orElse(null);
            Row arrow = g.stream().filter(r -> r.impl().equals("arrow")).findFirst().orElse(null);
            for (Row r : g) {
                out.append(String.format(Locale.ROOT, format, r.benchmark(), r.params(), r.impl(),
                        String.format(Locale.ROOT, "%.3f ± %.3f", r.score(), r.error()), r.unit(),
                        Double.isNaN(r.gbPerSecond()) ? "" : String.format(Locale.ROOT, "%.2f", r.gbPerSecond()),
                        ratio(r, raw), r.impl().startsWith("hurray") || r.impl().startsWith("open") || r.impl().equals("map")
                                ? ratio(r, arrow) : ""));
            }
        }
        return out.toString();
    }

    /** {@code r}'s speed over {@code base}'s, as "1.23x"; empty when there is no such baseline. */
    private static String ratio(Row r, Row base) {
        if (base == null || r == base) {
            return "";
        }
        double x = r.higherIsBetter() ? r.score() / base.score() : base.score() / r.score();
        return String.format(Locale.ROOT, "%.2fx", x);
    }
}
