package dev.hurray.cli.io;

import java.io.IOException;
import java.util.Map;

/**
 * Where tensors go: an HRRYFILE, a stream (file or socket), or a foreign file. Use in this
 * order: {@link #begin} once, {@link #accept} per tensor, {@link #commit} once; {@link #close()}
 * always. A file sink writes to a temporary file and renames it over the target only in
 * {@code commit}; closed without a commit, it leaves the target untouched. Not thread-safe.
 */
public interface Sink extends AutoCloseable {
    /**
     * Starts the output with the file-level metadata (see {@link Source#metadata()}).
     *
     * @throws IOException if the target cannot hold the metadata or writing fails
     */
    void begin(Map<String, byte[]> metadata) throws IOException;

    /** Writes one tensor; the item is valid only during the call. */
    void accept(Item item) throws IOException;

    /** Completes the output (end-of-stream marker, HRRYFILE index, foreign file) and publishes it. */
    void commit() throws IOException;

    /** Releases everything; without a commit, discards the output. Idempotent. */
    @Override
    void close() throws IOException;
}
