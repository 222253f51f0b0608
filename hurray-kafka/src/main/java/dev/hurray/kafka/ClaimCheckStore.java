package dev.hurray.kafka;

import dev.hurray.FileReaderOptions;
import dev.hurray.HurrayFile;
import dev.hurray.Tensor;
import java.io.IOException;
import java.net.URI;
import java.util.Map;

/**
 * Where {@link HurrayTensorSerializer} puts tensors too large for a record, and where
 * {@link HurrayTensorDeserializer} finds them again (the claim-check pattern). Each tensor is
 * written as its own HRRYFILE container with payload checksums, which a consumer checks.
 * The first implementation is {@link SharedDirectoryStore}; an object store would implement the
 * same interface.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>{@link #put} returns only once the file is complete and durable: a consumer that sees
 *       the reference record (which is sent after {@code put} returns) finds a whole file, never
 *       a partial one.</li>
 *   <li>{@link #open} of a file that is gone (deleted by retention, never written) throws at once
 *       ({@link java.nio.file.NoSuchFileException}); it never waits for the file to appear.</li>
 *   <li>A store never deletes files on its own: retention is the operator's (see
 *       {@link SharedDirectoryStore#purgeOlderThan}).</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * One store may be shared by the serializers and deserializers of many threads: implementations
 * are thread-safe.
 */
public interface ClaimCheckStore extends AutoCloseable {
    /**
     * Called with the client's configuration when the store was named by class in
     * {@link HurrayKafkaConfig#CLAIM_CHECK_STORE}. Default: nothing.
     */
    default void configure(Map<String, ?> configs) {
    }

    /** The store's identity, written into every reference; compared by deserializers. */
    URI uri();

    /**
     * Writes {@code tensor} as the only tensor of a new container named {@code tensorName}.
     *
     * @param topic the record's topic (implementations may use it in the file's key)
     * @return the new file's key, as {@link ClaimCheckReference#file()}
     * @throws IOException if the file cannot be written (nothing is left behind)
     */
    String put(String topic, String tensorName, Tensor tensor) throws IOException;

    /**
     * Opens the container a reference names for positional reads into owned memory
     * ({@link HurrayFile#open}), never memory-mapped: the deserializer refuses a mapped file
     * ({@code UNSUPPORTED}), since another process that truncates it would crash the JVM.
     *
     * @throws java.nio.file.NoSuchFileException when the file is gone
     * @throws IllegalArgumentException for a key this store could not have written (e.g. one
     *     naming another directory)
     * @throws IOException other failures to open, and {@link dev.hurray.HurrayException} for a
     *     file that is not a valid container
     */
    HurrayFile open(ClaimCheckReference reference, FileReaderOptions options) throws IOException;

    /** Releases what the store holds. Default: nothing. */
    @Override
    default void close() throws IOException {
    }
}
