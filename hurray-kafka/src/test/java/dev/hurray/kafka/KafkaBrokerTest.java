package dev.hurray.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.hurray.ElementType;
import dev.hurray.Status;
import dev.hurray.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tensors through a real single-node KRaft broker started in-process (kafka-test-common-runtime,
 * no Docker). One broker for the whole class: starting one takes ~10 s and ~600 MB.
 */
class KafkaBrokerTest {
    private static KafkaClusterTestKit cluster;
    private static String bootstrap;

    @TempDir
    static Path store;

    @BeforeAll
    static void startBroker() throws Exception {
        TestKitNodes nodes = new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1)
                .setNumControllerNodes(1).build();
        cluster = new KafkaClusterTestKit.Builder(nodes)
                .setConfigProp("offsets.topic.replication.factor", "1")
                .setConfigProp("offsets.topic.num.partitions", "2")
                .setConfigProp("transaction.state.log.replication.factor", "1")
                .setConfigProp("transaction.state.log.min.isr", "1")
                .setConfigProp("group.initial.rebalance.delay.ms", "0")
                .setConfigProp("message.max.bytes", String.valueOf(2 << 20))
                .build();
        cluster.format();
        cluster.startup();
        cluster.waitForReadyBrokers();
        bootstrap = cluster.bootstrapServers();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static void createTopic(String name, int partitions) throws Exception {
        try (Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
    }

    private static Map<String, Object> producerProps(Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, HurrayTensorSerializer.class);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.putAll(extra);
        return p;
    }

    private static Map<String, Object> consumerProps(String group, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, HurrayTensorDeserializer.class);
        p.putAll(extra);
        return p;
    }

    private static float[] embedding(int i) {
        Random r = new Random(1000 + i);
        float[] v = new float[768];
        for (int j = 0; j < v.length; j++) {
            v[j] = (float) r.nextGaussian();
        }
        return v;
    }

    @Test
    void embeddingsThroughTwoPartitionsReadByAConsumerGroupOfTwo() throws Exception {
        String topic = "embeddings";
        createTopic(topic, 2);
        int n = 200;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        Map<String, float[]> got = new ConcurrentHashMap<>();
        Map<Integer, AtomicInteger> perConsumer = Map.of(0, new AtomicInteger(), 1, new AtomicInteger());
        CountDownLatch assigned = new CountDownLatch(2);
        List<Future<?>> done = new ArrayList<>();
        try {
            for (int c = 0; c < 2; c++) {
                int id = c;
                done.add(pool.submit(() -> {
                    try (KafkaConsumer<String, Tensor> consumer = new KafkaConsumer<>(consumerProps("group-emb", Map.of()))) {
                        consumer.subscribe(List.of(topic));
                        boolean counted = false;
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                        while (got.size() < n && System.nanoTime() < deadline) {
                            for (ConsumerRecord<String, Tensor> r : consumer.poll(Duration.ofMillis(100))) {
                                try (Tensor t = r.value()) {
                                    assertEquals(ElementType.FLOAT32, TensorHeaders.dtype(r.headers()).orElseThrow());
                                    assertArrayEquals(new long[] {768}, TensorHeaders.shape(r.headers()).orElseThrow());
                                    assertEquals(r.key(), t.descriptor().name().orElseThrow());
                                    got.put(r.key(), t.toFloatArray());
                                    perConsumer.get(id).incrementAndGet();
                                }
                            }
                            if (!counted && consumer.assignment().size() == 1) {
                                counted = true;
                                assigned.countDown();
                            }
                        }
                    }
                    return null;
                }));
            }
            assertTrue(assigned.await(60, TimeUnit.SECONDS), "the group did not give each consumer one partition");
            try (KafkaProducer<String, Tensor> producer = new KafkaProducer<>(producerProps(Map.of()))) {
                for (int i = 0; i < n; i++) {
                    String key = "doc-" + i;
                    try (Tensor t = Tensor.copyOf(dev.hurray.TensorDescriptor.builder(ElementType.FLOAT32, 768).name(key).build(),
                            java.lang.foreign.MemorySegment.ofArray(toLe(embedding(i))))) {
                        producer.send(new ProducerRecord<>(topic, key, t));   // encoded inside send: close right after
                    }
                }
                producer.flush();
            }
            for (Future<?> f : done) {
                f.get(90, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(n, got.size());
        for (int i = 0; i < n; i++) {
            assertArrayEquals(embedding(i), got.get("doc-" + i), "doc-" + i);
        }
        assertTrue(perConsumer.get(0).get() > 0 && perConsumer.get(1).get() > 0, "both consumers read: " + perConsumer);
    }

    private static byte[] toLe(float[] v) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(v.length * 4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(v);
        return b.array();
    }

    @Test
    void sixteenMebibyteTensorThroughTheClaimCheckAndAConsumerOfADeletedFile() throws Exception {
        String topic = "big";
        createTopic(topic, 1);
        Path dir = Files.createDirectory(store.resolve("claim-check"));
        Map<String, Object> cfg = Map.of(HurrayKafkaConfig.CLAIM_CHECK_DIR, dir.toString());
        float[] big = new float[4 << 20];   // 16 MiB
        for (int i = 0; i < big.length; i++) {
            big[i] = i * 0.25f - 7;
        }
        float[] mid = new float[300_000];   // 1.2 MB: over the threshold too
        java.util.Arrays.fill(mid, 3.5f);
        List<RecordMetadata> meta = new ArrayList<>();
        try (KafkaProducer<String, Tensor> producer = new KafkaProducer<>(producerProps(cfg));
             Tensor t = Tensor.of(big, 4096, 1024);
             Tensor m = Tensor.of(mid, mid.length);
             Tensor small = Tensor.of(new float[] {1, 2, 3}, 3)) {
            meta.add(producer.send(new ProducerRecord<>(topic, "weights", t)).get());
            meta.add(producer.send(new ProducerRecord<>(topic, "doomed", m)).get());
            meta.add(producer.send(new ProducerRecord<>(topic, "after", small)).get());
        }
        assertTrue(meta.get(0).serializedValueSize() < 1024, "reference record: " + meta.get(0).serializedValueSize() + " bytes");
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".hrry")).sorted().toList();
        }
        assertEquals(2, files.size());
        try (KafkaConsumer<String, Tensor> consumer = new KafkaConsumer<>(consumerProps("group-big", withOneRecordPerPoll(cfg)))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            ConsumerRecord<String, Tensor> first = pollOne(consumer);
            try (Tensor t = first.value()) {
                assertTrue(TensorHeaders.isClaimCheck(first.headers()));
                assertArrayEquals(new long[] {4096, 1024}, t.descriptor().shape().dims());
                assertArrayEquals(big, t.toFloatArray());
            }
            // Retention removed the second file before this consumer got to it.
            for (Path f : files) {
                if (Files.readAllBytes(f).length < 2 << 20) {
                    Files.delete(f);
                }
            }
            RecordDeserializationException e = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                try {
                    pollOne(consumer);
                    return fail("a reference to a deleted file was decoded");
                } catch (RecordDeserializationException ex) {
                    return ex;
                }
            });
            TensorSerializationException cause = assertInstanceOf(TensorSerializationException.class, e.getCause());
            assertEquals(Status.NOT_FOUND, cause.status());
            assertEquals(1, e.offset());
            // The consumer lives on: skip the record and read the next one.
            consumer.seek(tp, e.offset() + 1);
            ConsumerRecord<String, Tensor> after = pollOne(consumer);
            try (Tensor t = after.value()) {
                assertArrayEquals(new float[] {1, 2, 3}, t.toFloatArray());
            }
        }
    }

    private static Map<String, Object> withOneRecordPerPoll(Map<String, Object> cfg) {
        Map<String, Object> m = new HashMap<>(cfg);
        m.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1);
        return m;
    }

    private static <V> ConsumerRecord<String, V> pollOne(KafkaConsumer<String, V> consumer) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            var records = consumer.poll(Duration.ofMillis(200));
            if (!records.isEmpty()) {
                assertEquals(1, records.count(), "max.poll.records should be 1");
                return records.iterator().next();
            }
        }
        throw new AssertionError("no record within 20 s");
    }

    @Test
    void badRecordsFailWithTheHurrayStatusAndTheConsumerSkipsThem() throws Exception {
        String topic = "bad";
        createTopic(topic, 1);
        byte[] good;
        try (HurrayTensorSerializer ser = new HurrayTensorSerializer(Map.of()); Tensor t = Tensor.of(new float[] {4, 5, 6}, 3)) {
            good = ser.serialize(topic, t);
        }
        byte[] corrupt = good.clone();
        corrupt[45] ^= 0x10;   // inside the descriptor: its CRC32C no longer matches
        List<byte[]> values = List.of("[0.1, 0.2, 0.3, 0.4, 0.5]".getBytes(), java.util.Arrays.copyOf(good, good.length - 10), corrupt, good);
        Map<String, Object> raw = producerProps(Map.of(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(raw)) {
            for (byte[] v : values) {
                producer.send(new ProducerRecord<>(topic, "k", v)).get();
            }
        }
        List<Status> statuses = new ArrayList<>();
        try (KafkaConsumer<String, Tensor> consumer = new KafkaConsumer<>(consumerProps("group-bad",
                Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1)))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            while (true) {
                try {
                    ConsumerRecord<String, Tensor> r = pollOne(consumer);
                    try (Tensor t = r.value()) {
                        assertArrayEquals(new float[] {4, 5, 6}, t.toFloatArray());
                    }
                    break;
                } catch (RecordDeserializationException e) {
                    statuses.add(assertInstanceOf(TensorSerializationException.class, e.getCause()).status());
                    consumer.seek(tp, e.offset() + 1);
                }
            }
        }
        assertEquals(List.of(Status.INVALID_MAGIC, Status.TRUNCATED, Status.CORRUPT), statuses);
    }

    @Test
    void abortedTransactionsAreInvisibleToReadCommittedConsumersAndOrphanOnlyTheirFiles() throws Exception {
        createTopic("tx", 1);
        Path dir = Files.createDirectory(store.resolve("tx-claim-check"));
        Map<String, Object> cfg = Map.of(HurrayKafkaConfig.CLAIM_CHECK_DIR, dir.toString(),
                HurrayKafkaConfig.CLAIM_CHECK_THRESHOLD, 4096);
        Map<String, Object> pp = new HashMap<>(producerProps(cfg));
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "hurray-tx");
        try (KafkaProducer<String, Tensor> producer = new KafkaProducer<>(pp);
             Tensor small = Tensor.of(new float[] {1, 2}, 2);
             Tensor big = Tensor.of(new float[2048], 2048)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("tx", "aborted-small", small));
            producer.send(new ProducerRecord<>("tx", "aborted-big", big));
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("tx", "kept", small));
            producer.send(new ProducerRecord<>("tx", "kept-big", big));
            producer.commitTransaction();
        }
        List<String> keys = new ArrayList<>();
        try (KafkaConsumer<String, Tensor> consumer = new KafkaConsumer<>(consumerProps("group-tx",
                Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed", HurrayKafkaConfig.CLAIM_CHECK_DIR, dir.toString())))) {
            consumer.subscribe(List.of("tx"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (keys.size() < 2 && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Tensor> r : consumer.poll(Duration.ofMillis(200))) {
                    try (Tensor t = r.value()) {
                        keys.add(r.key());
                        assertEquals(r.key().endsWith("big") ? 2048 : 2, t.descriptor().shape().dim(0));
                    }
                }
            }
        }
        assertEquals(List.of("kept", "kept-big"), keys);
        // The aborted big tensor's file stays behind, named by no committed record (retention deletes it).
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(2, s.filter(p -> p.toString().endsWith(".hrry")).count());
        }
    }

    @Test
    void kafkaStreamsMapsTensorsThroughTheSerde() throws Exception {
        createTopic("st-in", 1);
        createTopic("st-out", 1);
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "hurray-double");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, store.resolve("streams-state").toString());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        Map<String, Object> serdeCfg = Map.of(HurrayKafkaConfig.CLOSE_AFTER_SERIALIZE, true);
        HurrayTensorSerde inSerde = new HurrayTensorSerde(serdeCfg);
        HurrayTensorSerde outSerde = new HurrayTensorSerde(serdeCfg);
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("st-in", Consumed.with(Serdes.String(), inSerde))
                .mapValues(t -> {
                    try (t) {
                        float[] v = t.toFloatArray();
                        for (int i = 0; i < v.length; i++) {
                            v[i] = v[i] * 2 + 1;
                        }
                        return Tensor.of(v, t.descriptor().shape().dims());
                    }
                })
                .to("st-out", Produced.with(Serdes.String(), outSerde));
        int n = 20;
        try (inSerde; outSerde; KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.start();
            try (KafkaProducer<String, Tensor> producer = new KafkaProducer<>(producerProps(Map.of()))) {
                for (int i = 0; i < n; i++) {
                    try (Tensor t = Tensor.of(embedding(i), 24, 32)) {
                        producer.send(new ProducerRecord<>("st-in", "e" + i, t));
                    }
                }
            }
            Map<String, float[]> out = new HashMap<>();
            try (KafkaConsumer<String, Tensor> consumer = new KafkaConsumer<>(consumerProps("group-st-out", Map.of()))) {
                consumer.subscribe(List.of("st-out"));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (out.size() < n && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, Tensor> r : consumer.poll(Duration.ofMillis(200))) {
                        try (Tensor t = r.value()) {
                            assertArrayEquals(new long[] {24, 32}, t.descriptor().shape().dims());
                            out.put(r.key(), t.toFloatArray());
                        }
                    }
                }
            }
            assertEquals(n, out.size());
            for (int i = 0; i < n; i++) {
                float[] want = embedding(i);
                for (int j = 0; j < want.length; j++) {
                    want[j] = want[j] * 2 + 1;
                }
                assertArrayEquals(want, out.get("e" + i));
            }
        }
    }
}
