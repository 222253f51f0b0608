package dev.hurray.bench;

import dev.hurray.Tensor;
import dev.hurray.kafka.HurrayTensorSerializer;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The producer's per-record cost without a broker: a float32[768] tensor made from a
 * {@code float[]} ({@code Tensor.of}), encoded by {@link HurrayTensorSerializer} with record
 * headers, and closed, {@code --records} times per round in one warm JVM (the application work
 * of {@link KafkaSideBySide}'s producer less {@code send}). Prints µs per record for each round,
 * the median and the minimum. It needs only public API, so it also runs as a single source file
 * against an older build's jar (see {@link KafkaDeserializeLoop}).
 */
public final class KafkaSerializeLoop {
    private KafkaSerializeLoop() {
    }

    public static void main(String[] args) throws Exception {
        int records = 200_000;
        int rounds = 7;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--records" -> records = Integer.parseInt(args[i + 1]);
                case "--rounds" -> rounds = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        float[][] data = new float[256][768];
        Random r = new Random(42);
        for (float[] v : data) {
            for (int j = 0; j < v.length; j++) {
                v[j] = (float) r.nextGaussian();
            }
        }
        double[] us = new double[rounds];
        long bytes = 0;
        try (HurrayTensorSerializer s = new HurrayTensorSerializer(Map.of())) {
            for (int k = 0; k < rounds; k++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < records; i++) {
                    try (Tensor t = Tensor.of(data[i & 255], 768)) {
                        bytes += s.serialize("t", new RecordHeaders(), t).length;
                    }
                }
                us[k] = (System.nanoTime() - t0) / 1e3 / records;
            }
        }
        double[] sorted = us.clone();
        Arrays.sort(sorted);
        StringBuilder each = new StringBuilder();
        for (double u : us) {
            each.append(String.format(Locale.ROOT, " %.2f", u));
        }
        System.out.printf(Locale.ROOT, "µs per record, each round:%s; median %.2f, min %.2f (%d bytes)%n",
                each, sorted[rounds / 2], sorted[0], bytes);
    }
}
