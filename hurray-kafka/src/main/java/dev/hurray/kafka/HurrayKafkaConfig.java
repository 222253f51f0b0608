package dev.hurray.kafka;

import dev.hurray.TensorScope;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;

/**
 * The configuration keys of {@link HurrayTensorSerializer}, {@link HurrayTensorDeserializer} and
 * {@link HurrayTensorSerde}, read from the map Kafka passes to {@code configure} (the producer's,
 * consumer's or Streams application's own properties: put the keys there). Values may be strings
 * (as in a {@code .properties} file) or the Java types named below.
 *
 * <table>
 * <caption>Keys</caption>
 * <tr><th>key</th><th>side</th><th>default</th><th>meaning</th></tr>
 * <tr><td>{@value #PAYLOAD_CHECKSUMS}</td><td>serializer</td><td>false</td><td>write a CRC32C of
 *     each payload into the record (the descriptor always has one). Kafka's record batches already
 *     carry a CRC32C from producer to consumer; turn this on when records are copied by tools that
 *     rewrite batches, or to check end to end.</td></tr>
 * <tr><td>{@value #HEADERS}</td><td>serializer</td><td>true</td><td>add the
 *     {@link TensorHeaders} (dtype, shape, name, claim-check) to each record</td></tr>
 * <tr><td>{@value #CLOSE_AFTER_SERIALIZE}</td><td>serializer</td><td>false</td><td>close each
 *     tensor once it is encoded (for Kafka Streams, where nobody else holds the mapped value)</td></tr>
 * <tr><td>{@value #CLAIM_CHECK_THRESHOLD}</td><td>serializer</td><td>921600 (900 KiB)</td><td>a
 *     tensor whose payload bytes exceed this goes to the claim-check store and the record holds
 *     a reference; needs a store. -1 turns the claim-check off.</td></tr>
 * <tr><td>{@value #CLAIM_CHECK_DIR}</td><td>both</td><td>none</td><td>a directory every
 *     producer and consumer sees at the same path: the store is a
 *     {@link SharedDirectoryStore} there</td></tr>
 * <tr><td>{@value #CLAIM_CHECK_STORE}</td><td>both</td><td>none</td><td>a
 *     {@link ClaimCheckStore} instance, or the name of a class implementing it with a public
 *     no-argument constructor (configured with this map); wins over the directory</td></tr>
 * <tr><td>{@value #REQUIRE_PAYLOAD_CHECKSUMS}</td><td>deserializer</td><td>false</td><td>refuse
 *     records written without payload checksums</td></tr>
 * <tr><td>{@value #TENSOR_SCOPE}</td><td>deserializer</td><td>CONFINED</td><td>{@link TensorScope}
 *     of the tensors returned: CONFINED (only the polling thread may use and close them) or
 *     SHARED (any thread; costs a handshake per close)</td></tr>
 * <tr><td>{@value #MAX_CLAIM_CHECK_BYTES}</td><td>deserializer</td><td>68719476736 (64 GiB)</td>
 *     <td>largest tensor a reference may name</td></tr>
 * </table>
 */
public final class HurrayKafkaConfig {
    /** Serializer: write payload CRC32Cs (boolean, default false). */
    public static final String PAYLOAD_CHECKSUMS = "hurray.payload.checksums";
    /** Serializer: add {@link TensorHeaders} to records (boolean, default true). */
    public static final String HEADERS = "hurray.headers";
    /** Serializer: close each tensor after encoding it (boolean, default false). */
    public static final String CLOSE_AFTER_SERIALIZE = "hurray.close.after.serialize";
    /** Serializer: payload bytes above which a tensor goes through the claim-check (long, default 900 KiB; -1 = never). */
    public static final String CLAIM_CHECK_THRESHOLD = "hurray.claim.check.threshold.bytes";
    /** Both: directory of a {@link SharedDirectoryStore} (string or {@link Path}). */
    public static final String CLAIM_CHECK_DIR = "hurray.claim.check.dir";
    /** Both: a {@link ClaimCheckStore} instance or class name. */
    public static final String CLAIM_CHECK_STORE = "hurray.claim.check.store";
    /** Deserializer: refuse records without payload checksums (boolean, default false). */
    public static final String REQUIRE_PAYLOAD_CHECKSUMS = "hurray.require.payload.checksums";
    /** Deserializer: {@link TensorScope} of returned tensors (CONFINED or SHARED, default CONFINED). */
    public static final String TENSOR_SCOPE = "hurray.tensor.scope";
    /** Deserializer: largest tensor a claim-check reference may name, in bytes (default 64 GiB). */
    public static final String MAX_CLAIM_CHECK_BYTES = "hurray.max.claim.check.bytes";

    /** The default claim-check threshold: 900 KiB of payload, below Kafka's default 1 MiB record limit. */
    public static final long DEFAULT_CLAIM_CHECK_THRESHOLD = 900L * 1024;

    private HurrayKafkaConfig() {
    }

    static boolean bool(Map<String, ?> configs, String key, boolean def) {
        Object v = configs.get(key);
        if (v == null) {
            return def;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        String s = v.toString().trim().toLowerCase(Locale.ROOT);
        return switch (s) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new ConfigException(key, v, "expected true or false");
        };
    }

    static long longValue(Map<String, ?> configs, String key, long def) {
        Object v = configs.get(key);
        if (v == null) {
            return def;
        }
        if (v instanceof Number n) {
            return n.longValue();
        }
        try {
            return Long.parseLong(v.toString().trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(key, v, "expected a whole number of bytes");
        }
    }

    static TensorScope scope(Map<String, ?> configs) {
        Object v = configs.get(TENSOR_SCOPE);
        if (v == null) {
            return TensorScope.CONFINED;
        }
        if (v instanceof TensorScope s) {
            return s;
        }
        try {
            return TensorScope.valueOf(v.toString().trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(TENSOR_SCOPE, v, "expected CONFINED or SHARED");
        }
    }

    /** The configured store, or null when neither key is set. */
    static ClaimCheckStore store(Map<String, ?> configs) {
        Object s = configs.get(CLAIM_CHECK_STORE);
        if (s instanceof ClaimCheckStore store) {
            return store;
        }
        if (s != null) {
            String name = s instanceof Class<?> c ? c.getName() : s.toString().trim();
            try {
                Class<?> c = Class.forName(name, true, Thread.currentThread().getContextClassLoader() != null
                        ? Thread.currentThread().getContextClassLoader() : HurrayKafkaConfig.class.getClassLoader());
                ClaimCheckStore store = (ClaimCheckStore) c.getDeclaredConstructor().newInstance();
                store.configure(configs);
                return store;
            } catch (ReflectiveOperationException | ClassCastException | LinkageError e) {
                throw new ConfigException(CLAIM_CHECK_STORE, s, "cannot make a ClaimCheckStore of it: " + e);
            }
        }
        Object dir = configs.get(CLAIM_CHECK_DIR);
        if (dir != null) {
            try {
                Path p = dir instanceof Path path ? path : Path.of(dir.toString().trim());
                return new SharedDirectoryStore(p);
            } catch (java.io.UncheckedIOException | java.nio.file.InvalidPathException e) {
                throw new ConfigException(CLAIM_CHECK_DIR, dir, e.getMessage());
            }
        }
        return null;
    }
}
