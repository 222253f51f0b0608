package dev.hurray.cli;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.cli.io.Entry;
import dev.hurray.cli.io.Item;
import dev.hurray.cli.io.Sink;
import dev.hurray.cli.io.Source;
import dev.hurray.cli.io.StreamMetadata;
import dev.hurray.formats.Format;
import dev.hurray.kafka.HurrayKafkaConfig;
import dev.hurray.kafka.HurrayTensorDeserializer;
import dev.hurray.kafka.HurrayTensorSerializer;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import picocli.CommandLine.Option;

/**
 * {@code hurray send kafka://HOST:PORT/TOPIC FILE} and {@code hurray recv kafka://HOST:PORT/TOPIC
 * --out FILE}: a file's tensors through a Kafka topic, one record per tensor
 * ({@link HurrayTensorSerializer}; key = tensor name, so the default partitioner spreads tensors
 * over the partitions by name).
 *
 * <p>A transfer is, on <em>every</em> partition of the topic: one file-metadata record (the
 * stream metadata item, {@link StreamMetadata}), the tensors the partitioner put there, and an
 * end record (an empty Hurray stream, null key, header {@value #END_HEADER} = the number of
 * tensors sent in all). The receiver reads every partition from its beginning until it has seen
 * the end record of each, checks the count, and publishes the output file only then. Use a fresh
 * topic per transfer (the receiver takes the first transfer it finds). Large tensors go through
 * the claim-check when {@code --claim-check-dir} is given on both sides.
 */
final class KafkaTransport {
    /** Header of the end records: total tensors in the transfer (decimal text). */
    static final String END_HEADER = "hurray.end";

    private KafkaTransport() {
    }

    /** Options that only kafka:// targets use (a picocli mixin of send and recv). */
    static final class Options {
        @Option(names = "--claim-check-dir", paramLabel = "DIR",
                description = "kafka:// only: a directory both sides see; tensors over 900 KiB go there as HRRYFILEs "
                        + "and the records carry references.")
        Path claimCheckDir;

        @Option(names = "--kafka-property", paramLabel = "KEY=VALUE",
                description = "kafka:// only: a Kafka client property (repeatable), e.g. security.protocol=SSL.")
        Map<String, String> properties = new HashMap<>();

        /**
         * The client properties both sides share.
         *
         * @throws CliException (usage) when {@code --claim-check-dir} names no directory
         */
        Map<String, Object> common(Target t) throws CliException {
            Map<String, Object> p = new HashMap<>(properties);
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, t.bootstrap());
            if (claimCheckDir != null) {
                if (!java.nio.file.Files.isDirectory(claimCheckDir)) {
                    throw new CliException(ExitCode.USAGE, "--claim-check-dir " + claimCheckDir
                            + " is not a directory: create it (shared by every sender and receiver) or drop the option");
                }
                p.put(HurrayKafkaConfig.CLAIM_CHECK_DIR, claimCheckDir.toString());
            }
            return p;
        }
    }

    /** A parsed {@code kafka://HOST:PORT[,HOST:PORT…]/TOPIC}. */
    record Target(String bootstrap, String topic) {
        @Override
        public String toString() {
            return "kafka://" + bootstrap + "/" + topic;
        }
    }

    static boolean isKafka(String arg) {
        return arg != null && arg.startsWith("kafka://");
    }

    /**
     * Parses {@code kafka://HOST:PORT[,HOST:PORT…]/TOPIC}.
     *
     * @throws CliException (usage) for anything else
     */
    static Target parse(String arg) throws CliException {
        String rest = arg.substring("kafka://".length());
        int slash = rest.indexOf('/');
        if (slash <= 0 || slash == rest.length() - 1) {
            throw new CliException(ExitCode.USAGE, "expected kafka://HOST:PORT/TOPIC, got '" + arg + "'");
        }
        String topic = rest.substring(slash + 1);
        if (!topic.matches("[A-Za-z0-9._-]{1,249}")) {
            throw new CliException(ExitCode.USAGE, "'" + topic + "' is not a Kafka topic name (letters, digits, . _ -)");
        }
        for (String hp : rest.substring(0, slash).split(",")) {
            try {
                HostPort.parse(hp);
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCode.USAGE, arg + ": " + e.getMessage());
            }
        }
        return new Target(rest.substring(0, slash), topic);
    }

    /** The end record's value: an empty Hurray stream (header and end-of-stream marker). */
    private static byte[] emptyStream() throws HurrayException {
        try (Writer w = Writer.toMemory()) {
            w.finish();
            return w.toByteArray();
        }
    }

    // ------------------------------------------------------------------ send

    /**
     * The error for a Kafka client that could not be made: a broker host that does not resolve
     * is an I/O error (exit 3) like an unknown TCP host; another configuration the client refuses
     * (a bad {@code --kafka-property}) is a usage error; anything else is the client's failure.
     */
    static CliException clientFailure(Target target, KafkaException e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof org.apache.kafka.common.config.ConfigException ce) {
                String m = String.valueOf(ce.getMessage());
                if (m.contains("resolvable bootstrap")) {
                    return new CliException(ExitCode.IO_ERROR, "cannot reach " + target + ": the broker address "
                            + target.bootstrap() + " does not resolve", e);
                }
                return new CliException(ExitCode.USAGE, "Kafka client configuration refused: " + m, e);
            }
        }
        return new CliException(ExitCode.IO_ERROR, "cannot reach " + target + ": " + e.getMessage(), e);
    }

    /**
     * A {@link Sink} that produces records: {@code begin} sends the metadata record to every
     * partition, {@code accept} one record per tensor, {@code commit} the end records and waits
     * until the broker acknowledged everything.
     */
    static final class KafkaSink implements Sink {
        private final Target target;
        private final KafkaProducer<String, byte[]> producer;
        private final HurrayTensorSerializer serializer;
        private final AtomicReference<Exception> failure = new AtomicReference<>();
        private List<PartitionInfo> partitions;
        private long sent;

        KafkaSink(Target target, Options options, Duration timeout) throws CliException {
            this.target = target;
            Map<String, Object> p = options.common(target);
            p.putIfAbsent(ProducerConfig.ACKS_CONFIG, "all");
            p.putIfAbsent(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            p.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, "5");
            p.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(timeout.toMillis()));
            p.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(timeout.toMillis(), 30_000)));
            p.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(Math.min(timeout.toMillis(), 30_000)));
            try {
                this.serializer = new HurrayTensorSerializer(p);
                this.producer = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer());
            } catch (KafkaException e) {
                throw clientFailure(target, e);
            }
        }

        @Override
        public void begin(Map<String, byte[]> metadata) throws IOException {
            try {
                partitions = producer.partitionsFor(target.topic());
            } catch (KafkaException e) {
                throw new IOException("cannot reach " + target + ": " + e.getMessage(), e);
            }
            TensorDescriptor d = StreamMetadata.descriptor(metadata);
            try (Tensor meta = Tensor.copyOf(d, MemorySegment.ofArray(new byte[0]))) {
                for (PartitionInfo pi : partitions) {
                    send(pi.partition(), StreamMetadata.NAME, meta, null);
                }
            }
        }

        @Override
        public void accept(Item item) throws IOException {
            if (item.name().equals(StreamMetadata.NAME)) {
                throw new IOException("a tensor named '" + StreamMetadata.NAME + "' cannot be sent: the name marks file metadata");
            }
            refuseComposite(item.descriptor(), target);
            try (Tensor t = view(item)) {
                send(null, item.name().isEmpty() ? null : item.name(), t, null);
            }
            sent++;
        }

        /** The item as a tensor: a view of its payloads, or a copy when they are not native or not aligned. */
        private static Tensor view(Item item) {
            MemorySegment[] payloads = item.payloads().toArray(MemorySegment[]::new);
            try {
                return Tensor.wrap(item.descriptor(), payloads);
            } catch (IllegalArgumentException notNativeOrAligned) {
                return Tensor.copyOf(item.descriptor(), payloads);
            }
        }

        private void send(Integer partition, String key, Tensor t, byte[] raw) throws IOException {
            rethrow();
            RecordHeaders headers = new RecordHeaders();
            byte[] value;
            try {
                value = raw != null ? raw : serializer.serialize(target.topic(), headers, t);
            } catch (org.apache.kafka.common.errors.SerializationException e) {
                throw e.getCause() instanceof HurrayException h ? h : new IOException(e.getMessage(), e);
            }
            if (raw != null) {
                headers.add(END_HEADER, Long.toString(sent).getBytes(StandardCharsets.UTF_8));
            }
            try {
                producer.send(new ProducerRecord<>(target.topic(), partition, key, value, headers), (md, e) -> {
                    if (e != null) {
                        failure.compareAndSet(null, e);
                    }
                });
            } catch (KafkaException e) {
                throw new IOException("sending to " + target + " failed: " + e.getMessage(), e);
            }
        }

        private void rethrow() throws IOException {
            Exception e = failure.get();
            if (e != null) {
                throw new IOException("sending to " + target + " failed: " + e.getMessage(), e);
            }
        }

        @Override
        public void commit() throws IOException {
            byte[] end = emptyStream();
            for (PartitionInfo pi : partitions) {
                send(pi.partition(), null, null, end);
            }
            try {
                producer.flush();
            } catch (KafkaException e) {
                throw new IOException("sending to " + target + " failed: " + e.getMessage(), e);
            }
            rethrow();
        }

        @Override
        public void close() {
            try {
                producer.close(Duration.ofSeconds(10));
            } finally {
                serializer.close();
            }
        }
    }

    // ------------------------------------------------------------------ recv

    /**
     * A {@link Source} that consumes one transfer: every partition from its beginning until its
     * end record. Opening waits for the first record (the metadata record of some partition).
     */
    static final class KafkaSource implements Source {
        private final Target target;
        private final KafkaConsumer<String, Tensor> consumer;
        private final Duration idle;
        private final Set<Integer> ended = new HashSet<>();
        private final ArrayDeque<ConsumerRecord<String, Tensor>> pending = new ArrayDeque<>();
        private final Map<String, byte[]> metadata;
        private final int partitionCount;
        private long expected = -1;

        KafkaSource(Target target, Options options, Duration idle) throws IOException, CliException {
            this.target = target;
            this.idle = idle;
            Map<String, Object> p = options.common(target);
            p.putIfAbsent(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.putIfAbsent(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            p.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "64");
            try {
                this.consumer = new KafkaConsumer<>(p, new StringDeserializer(), new HurrayTensorDeserializer(p));
            } catch (KafkaException e) {
                throw clientFailure(target, e);
            }
            try {
                List<PartitionInfo> infos = consumer.partitionsFor(target.topic(), idle.isZero() ? Duration.ofDays(1) : idle);
                if (infos == null || infos.isEmpty()) {
                    throw new IOException("no topic " + target.topic() + " at " + target.bootstrap());
                }
                List<TopicPartition> tps = new ArrayList<>();
                for (PartitionInfo pi : infos) {
                    tps.add(new TopicPartition(target.topic(), pi.partition()));
                }
                partitionCount = tps.size();
                consumer.assign(tps);
                consumer.seekToBeginning(tps);
                ConsumerRecord<String, Tensor> first = next();
                if (first != null && first.value() != null && StreamMetadata.isMetadataItem(first.value().descriptor())) {
                    metadata = first.value().descriptor().metadata();
                    first.value().close();
                } else {
                    throw new HurrayException(Status.CORRUPT, target + " does not start with a 'hurray send' transfer "
                            + "(no metadata record first)", null);
                }
            } catch (KafkaException e) {
                close();
                throw new IOException(target + ": " + e.getMessage(), e);
            } catch (IOException | RuntimeException e) {
                close();
                throw e;
            }
        }

        /** The next record of a partition not yet ended, or null once every partition ended. */
        private ConsumerRecord<String, Tensor> next() throws IOException {
            long deadline = System.nanoTime() + idle.toNanos();
            while (pending.isEmpty()) {
                if (ended.size() == partitionCount) {
                    return null;
                }
                if (!idle.isZero() && System.nanoTime() > deadline) {
                    throw new IOException("nothing arrived from " + target + " for " + idle.toSeconds() + " s (--idle-timeout)");
                }
                try {
                    for (ConsumerRecord<String, Tensor> r : consumer.poll(Duration.ofMillis(200))) {
                        if (ended.contains(r.partition())) {
                            if (r.value() != null) {
                                r.value().close();   // a later transfer on this partition
                            }
                        } else {
                            pending.add(r);
                        }
                    }
                } catch (RecordDeserializationException e) {
                    if (e.getCause() != null && e.getCause().getCause() instanceof HurrayException h) {
                        throw new HurrayException(h.status(), "record at offset " + e.offset() + " of " + e.topicPartition()
                                + ": " + h.nativeMessage(), h);
                    }
                    throw new IOException(e.getMessage(), e);
                }
            }
            ConsumerRecord<String, Tensor> r = pending.poll();
            if (r.value() == null) {
                var h = r.headers().lastHeader(END_HEADER);
                if (h == null) {
                    throw new HurrayException(Status.CORRUPT, "a record without a tensor at offset " + r.offset() + " of "
                            + target, null);
                }
                long n;
                try {
                    n = Long.parseLong(new String(h.value(), StandardCharsets.UTF_8));
                } catch (NumberFormatException e) {
                    throw new HurrayException(Status.CORRUPT, "a malformed end record in " + target, e);
                }
                if (expected >= 0 && n != expected) {
                    throw new HurrayException(Status.CORRUPT, "end records of " + target + " disagree on the count", null);
                }
                expected = n;
                ended.add(r.partition());
                return next();
            }
            return r;
        }

        @Override
        public Format format() {
            return Format.STREAM;
        }

        @Override
        public Map<String, byte[]> metadata() {
            return metadata;
        }

        @Override
        public long count() {
            return -1;
        }

        @Override
        public long totalBytes() {
            return -1;
        }

        @Override
        public Optional<List<Entry>> entries() {
            return Optional.empty();
        }

        @Override
        public void forEach(Action action) throws IOException {
            long got = 0;
            for (ConsumerRecord<String, Tensor> r = next(); r != null; r = next()) {
                try (Tensor t = r.value()) {
                    if (StreamMetadata.isMetadataItem(t.descriptor())) {
                        continue;   // each partition starts with a copy
                    }
                    refuseComposite(t.descriptor(), target);
                    action.accept(new Item(t.descriptor(), t.buffers(), -1));
                    got++;
                }
            }
            if (got != expected) {
                throw new HurrayException(Status.TRUNCATED, target + ": the sender sent " + expected + " tensors, "
                        + got + " arrived", null);
            }
        }

        @Override
        public void close() {
            for (ConsumerRecord<String, Tensor> r : pending) {
                if (r.value() != null) {
                    r.value().close();
                }
            }
            pending.clear();
            consumer.close(Duration.ofSeconds(5));
        }
    }

    /**
     * Composites do not travel over Kafka: each tensor is its own record, and records of
     * different partitions arrive in no set order, so a head and its members could not be kept
     * together (docs/spec/stream.md §Composites). Refused on both sides.
     */
    static void refuseComposite(dev.hurray.TensorDescriptor d, Target target) throws IOException {
        if (d.compositeMembership().isPresent()) {
            throw new dev.hurray.formats.ForeignFormatException("'" + d.name().orElse("") + "' is part of a composite, which "
                    + target + " cannot carry (one record per tensor, no order across partitions); send a file or a "
                    + "stream instead");
        }
    }

    static Duration seconds(int s) {
        return Duration.ofSeconds(s);
    }

}
