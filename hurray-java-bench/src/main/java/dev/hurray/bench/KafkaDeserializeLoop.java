package dev.hurray.bench;

import dev.hurray.Tensor;
import dev.hurray.kafka.HurrayTensorDeserializer;
import dev.hurray.kafka.HurrayTensorSerializer;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The consumer's per-record cost without a broker: {@link HurrayTensorDeserializer} on one
 * float32[768] record, passed as a {@link ByteBuffer} view as the consumer passes it, then one
 * float read and the tensor closed, {@code --records} times per round in one warm JVM. Prints
 * µs per record for each round, the median and the minimum. It needs only public API, so it
 * also runs as a single source file against an older build's jar (see the README).
 */
public final class KafkaDeserializeLoop {
    private KafkaDeserializeLoop() {
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
        float[] v = new float[768];
        for (int i = 0; i < v.length; i++) {
            v[i] = i * 0.5f;
        }
        byte[] record;
        try (HurrayTensorSerializer s = new HurrayTensorSerializer(Map.of()); Tensor t = Tensor.of(v, 768)) {
            record = s.serialize("t", new RecordHeaders(), t);
        }
        double[] us = new double[rounds];
        float sink = 0;
        try (HurrayTensorDeserializer d = new HurrayTensorDeserializer(Map.of())) {
            ByteBuffer view = ByteBuffer.wrap(record);
            for (int r = 0; r < rounds; r++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < records; i++) {
                    try (Tensor t = d.deserialize("t", null, view)) {
                        sink += t.buffer(0).get(ValueLayout.JAVA_FLOAT, 4L * (i % 768));
                    }
                }
                us[r] = (System.nanoTime() - t0) / 1e3 / records;
            }
        }
        double[] sorted = us.clone();
        Arrays.sort(sorted);
        StringBuilder each = new StringBuilder();
        for (double u : us) {
            each.append(String.format(Locale.ROOT, " %.2f", u));
        }
        System.out.printf(Locale.ROOT, "µs per record, each round:%s; median %.2f, min %.2f (checksum %s)%n",
                each, sorted[rounds / 2], sorted[0], sink);
    }
}
