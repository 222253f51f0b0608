package dev.hurray.kafka;

import dev.hurray.Tensor;
import java.util.Map;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * The {@link Serde} of {@link HurrayTensorSerializer} and {@link HurrayTensorDeserializer}, for
 * Kafka Streams ({@code default.value.serde}, or {@code Consumed.with}/{@code Produced.with}).
 *
 * <pre>{@code
 * props.put(HurrayKafkaConfig.CLOSE_AFTER_SERIALIZE, true);   // Streams owns the mapped values
 * builder.stream("in", Consumed.with(Serdes.String(), new HurrayTensorSerde()))
 *        .mapValues(t -> { try (t) { return normalize(t); } })
 *        .to("out", Produced.with(Serdes.String(), new HurrayTensorSerde()));
 * }</pre>
 *
 * <p>In Kafka Streams a stream thread deserializes, runs the topology and serializes, so the
 * default CONFINED tensors work; the mapper closes its input, and
 * {@link HurrayKafkaConfig#CLOSE_AFTER_SERIALIZE} lets the serializer close the output it encoded
 * (a value that is sent to two topics must then be copied). Configuration keys:
 * {@link HurrayKafkaConfig}; both halves get the same map.
 */
public class HurrayTensorSerde implements Serde<Tensor> {
    private final HurrayTensorSerializer serializer = new HurrayTensorSerializer();
    private final HurrayTensorDeserializer deserializer = new HurrayTensorDeserializer();

    /** A serde with the defaults; Kafka then calls {@link #configure}. */
    public HurrayTensorSerde() {
    }

    /** A serde configured with {@code configs}. */
    public HurrayTensorSerde(Map<String, ?> configs) {
        configure(configs, false);
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        serializer.configure(configs, isKey);
        deserializer.configure(configs, isKey);
    }

    @Override
    public Serializer<Tensor> serializer() {
        return serializer;
    }

    @Override
    public Deserializer<Tensor> deserializer() {
        return deserializer;
    }

    @Override
    public void close() {
        try {
            serializer.close();
        } finally {
            deserializer.close();
        }
    }
}
