/**
 * Hurray tensors as Apache Kafka records: {@link dev.hurray.kafka.HurrayTensorSerializer},
 * {@link dev.hurray.kafka.HurrayTensorDeserializer}, {@link dev.hurray.kafka.HurrayTensorSerde}
 * for Kafka Streams, record headers for routing ({@link dev.hurray.kafka.TensorHeaders}) and a
 * claim-check to HRRYFILE containers for tensors too large for a record
 * ({@link dev.hurray.kafka.ClaimCheckStore}, {@link dev.hurray.kafka.SharedDirectoryStore}).
 * Configuration keys: {@link dev.hurray.kafka.HurrayKafkaConfig}. Record encodings:
 * docs/spec/kafka.md. Uses only the public API of {@code dev.hurray}.
 */
package dev.hurray.kafka;
