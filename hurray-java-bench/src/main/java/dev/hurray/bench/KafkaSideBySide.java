package dev.hurray.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hurray.Tensor;
import dev.hurray.kafka.HurrayTensorDeserializer;
import dev.hurray.kafka.HurrayTensorSerializer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/**
 * float32[768] records through an in-process single-node KRaft broker, three ways, in one run:
 * {@link HurrayTensorSerializer}/{@link HurrayTensorDeserializer}, {@link ByteArraySerializer} of
 * the raw little-endian floats, and JSON float arrays through Jackson. Each round produces
 * {@code --records} records to a fresh one-partition topic (acks=1, linger 5 ms), flushes, then
 * consumes them all from the beginning; the application work on each side is included (making the
 * tensor or byte[] or JSON from a {@code float[]}, and getting a {@code float[]} back). Contenders
 * take turns in a rotating order; figures are medians over the rounds. Bytes on the wire: the
 * producer's {@code outgoing-byte-total} per record (record batches with headers, no compression).
 *
 * <pre>
 * java -XX:+AlwaysPreTouch -Xms2g -Xmx2g --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
 *      -cp hurray-java-bench/target/benchmarks.jar dev.hurray.bench.KafkaSideBySide [--records 20000] [--rounds 5]
 * </pre>
 */
public final class KafkaSideBySide {
    private static final int DIM = 768;

    private KafkaSideBySide() {
    }

    /** One way of putting a float[] into a record and getting it back. */
    private interface Contender<V> {
        String name();

        Serializer<V> serializer();

        Deserializer<V> deserializer();

        V make(float[] v);

        float[] take(V value);

        void done(V value);
    }

    private static final class HurrayWay implements Contender<Tensor> {
        @Override
        public String name() {
            return "hurray";
        }

        @Override
        public Serializer<Tensor> serializer() {
            return new HurrayTensorSerializer(Map.of());
        }

        @Override
        public Deserializer<Tensor> deserializer() {
            return new HurrayTensorDeserializer(Map.of());
        }

        @Override
        public Tensor make(float[] v) {
            return Tensor.of(v, DIM);
        }

        @Override
        public float[] take(Tensor t) {
            try (t) {
                return t.toFloatArray();
            }
        }

        @Override
        public void done(Tensor t) {
            t.close();
        }
    }

    private static final class RawWay implements Contender<byte[]> {
        @Override
        public String name() {
            return "raw byte[]";
        }

        @Override
        public Serializer<byte[]> serializer() {
            return new ByteArraySerializer();
        }

        @Override
        public Deserializer<byte[]> deserializer() {
            return new ByteArrayDeserializer();
        }

        @Override
        public byte[] make(float[] v) {
            ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            b.asFloatBuffer().put(v);
            return b.array();
        }

        @Override
        public float[] take(byte[] bytes) {
            float[] v = new float[bytes.length / 4];
            ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(v);
            return v;
        }

        @Override
        public void done(byte[] value) {
        }
    }

    private static final class JsonWay implements Contender<float[]> {
        private static final ObjectMapper MAPPER = new ObjectMapper();

        @Override
        public String name() {
            return "JSON (Jackson)";
        }

        @Override
        public Serializer<float[]> serializer() {
            return (topic, v) -> {
                try {
                    return MAPPER.writeValueAsBytes(v);
                } catch (IOException e) {
                    throw new SerializationException(e);
                }
            };
        }

        @Override
        public Deserializer<float[]> deserializer() {
            return (topic, bytes) -> {
                try {
                    return MAPPER.readValue(bytes, float[].class);
                } catch (IOException e) {
                    throw new SerializationException(e);
                }
            };
        }

        @Override
        public float[] make(float[] v) {
            return v;
        }

        @Override
        public float[] take(float[] v) {
            return v;
        }

        @Override
        public void done(float[] value) {
        }
    }

    /** Produce and consume seconds, wire bytes, and the time spent inside the (de)serializer, per round. */
    private record Round(double produceS, double consumeS, double wireBytesPerRecord, double serUs, double deUs) {
    }

    /** Adds up the nanoseconds spent inside a serializer. */
    private static final class TimedSerializer<V> implements Serializer<V> {
        final Serializer<V> inner;
        long nanos;

        TimedSerializer(Serializer<V> inner) {
            this.inner = inner;
        }

        @Override
        public byte[] serialize(String topic, V data) {
            long t = System.nanoTime();
            byte[] b = inner.serialize(topic, data);
            nanos += System.nanoTime() - t;
            return b;
        }

        @Override
        public byte[] serialize(String topic, org.apache.kafka.common.header.Headers headers, V data) {
            long t = System.nanoTime();
            byte[] b = inner.serialize(topic, headers, data);
            nanos += System.nanoTime() - t;
            return b;
        }
    }

    /** Adds up the nanoseconds spent inside a deserializer (the ByteBuffer path the consumer takes). */
    private static final class TimedDeserializer<V> implements Deserializer<V> {
        final Deserializer<V> inner;
        long nanos;

        TimedDeserializer(Deserializer<V> inner) {
            this.inner = inner;
        }

        @Override
        public V deserialize(String topic, byte[] data) {
            long t = System.nanoTime();
            V v = inner.deserialize(topic, data);
            nanos += System.nanoTime() - t;
            return v;
        }

        @Override
        public V deserialize(String topic, org.apache.kafka.common.header.Headers headers, ByteBuffer data) {
            long t = System.nanoTime();
            V v = inner.deserialize(topic, headers, data);
            nanos += System.nanoTime() - t;
            return v;
        }
    }

    public static void main(String[] args) throws Exception {
        int records = 20_000;
        int rounds = 5;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--records" -> records = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        float[][] data = new float[256][DIM];
        Random r = new Random(42);
        for (float[] v : data) {
            for (int j = 0; j < DIM; j++) {
                v[j] = (float) r.nextGaussian();
            }
        }
        List<Contender<?>> contenders = List.of(new HurrayWay(), new RawWay(), new JsonWay());
        Map<String, List<Round>> results = new HashMap<>();
        TestKitNodes nodes = new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build();
        try (KafkaClusterTestKit cluster = new KafkaClusterTestKit.Builder(nodes)
                .setConfigProp("offsets.topic.replication.factor", "1")
                .setConfigProp("group.initial.rebalance.delay.ms", "0").build()) {
            cluster.format();
            cluster.startup();
            cluster.waitForReadyBrokers();
            String bootstrap = cluster.bootstrapServers();
            try (Admin admin = cluster.admin()) {
                // Round 0 is a warm-up (JIT, broker log segments) and is not counted.
                for (int round = 0; round <= rounds; round++) {
                    for (int k = 0; k < contenders.size(); k++) {
                        Contender<?> c = contenders.get((k + round) % contenders.size());
                        String topic = "bench-" + round + "-" + c.name().replaceAll("[^a-z]", "");
                        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
                        Round res = run(c, bootstrap, topic, data, round == 0 ? Math.min(records, 5000) : records);
                        if (round > 0) {
                            results.computeIfAbsent(c.name(), x -> new ArrayList<>()).add(res);
                        }
                        admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
                    }
                }
            }
        }
        print(results, contenders, records, rounds);
    }

    private static <V> Round run(Contender<V> c, String bootstrap, String topic, float[][] data, int n) throws Exception {
        Map<String, Object> pp = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.ACKS_CONFIG, "1", ProducerConfig.LINGER_MS_CONFIG, 5,
                ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        double wire;
        long t0 = System.nanoTime();
        TimedSerializer<V> ser = new TimedSerializer<>(c.serializer());
        TimedDeserializer<V> de = new TimedDeserializer<>(c.deserializer());
        try (KafkaProducer<byte[], V> producer = new KafkaProducer<>(pp, new ByteArraySerializer(), ser)) {
            for (int i = 0; i < n; i++) {
                V v = c.make(data[i & 255]);
                try {
                    producer.send(new ProducerRecord<>(topic, v));
                } finally {
                    c.done(v);
                }
            }
            producer.flush();
            wire = metric(producer.metrics(), "outgoing-byte-total") / n;
        }
        long t1 = System.nanoTime();
        Map<String, Object> cp = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, topic, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000,
                ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 64 << 20, ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 16 << 20);
        long t2;
        long t3;
        try (KafkaConsumer<byte[], V> consumer = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), de)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            t2 = System.nanoTime();
            int got = 0;
            double check = 0;
            while (got < n) {
                for (ConsumerRecord<byte[], V> rec : consumer.poll(java.time.Duration.ofMillis(500))) {
                    float[] v = c.take(rec.value());
                    if (v.length != DIM) {
                        throw new IllegalStateException("got " + v.length + " floats");
                    }
                    check += v[got & 511];
                    got++;
                }
                if (System.nanoTime() - t2 > TimeUnit.SECONDS.toNanos(120)) {
                    throw new IllegalStateException(c.name() + ": only " + got + " of " + n + " records in 120 s");
                }
            }
            t3 = System.nanoTime();
            if (Double.isNaN(check)) {
                throw new IllegalStateException();
            }
        }
        return new Round((t1 - t0) / 1e9, (t3 - t2) / 1e9, wire, ser.nanos / 1e3 / n, de.nanos / 1e3 / n);
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        for (var e : metrics.entrySet()) {
            if (e.getKey().name().equals(name) && e.getKey().group().equals("producer-metrics")) {
                return ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return Double.NaN;
    }

    private static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static void print(Map<String, List<Round>> results, List<Contender<?>> contenders, int n, int rounds) {
        System.out.printf(Locale.ROOT, "%n%d records of float32[%d] per round, median of %d rounds%n%n", n, DIM, rounds);
        System.out.println("| contender | produce rec/s | consume rec/s | end to end rec/s | bytes on the wire per record | serialize µs | deserialize µs | Hurray's end to end rate vs this |");
        System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|");
        double hurrayE2e = 0;
        Map<String, double[]> rows = new HashMap<>();
        for (Contender<?> c : contenders) {
            List<Round> rs = results.get(c.name());
            double p = median(rs.stream().mapToDouble(x -> n / x.produceS()).toArray());
            double q = median(rs.stream().mapToDouble(x -> n / x.consumeS()).toArray());
            double e = median(rs.stream().mapToDouble(x -> n / (x.produceS() + x.consumeS())).toArray());
            double w = median(rs.stream().mapToDouble(Round::wireBytesPerRecord).toArray());
            double su = median(rs.stream().mapToDouble(Round::serUs).toArray());
            double du = median(rs.stream().mapToDouble(Round::deUs).toArray());
            rows.put(c.name(), new double[] {p, q, e, w, su, du});
            if (c instanceof HurrayWay) {
                hurrayE2e = e;
            }
        }
        for (Contender<?> c : contenders) {
            double[] x = rows.get(c.name());
            System.out.printf(Locale.ROOT, "| %s | %,.0f | %,.0f | %,.0f | %,.0f | %.1f | %.1f | %.2f× |%n", c.name(), x[0], x[1], x[2], x[3], x[4], x[5],
                    hurrayE2e / x[2]);
        }
    }
}
