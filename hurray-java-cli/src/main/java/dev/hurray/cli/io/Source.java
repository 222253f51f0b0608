package dev.hurray.cli.io;

import dev.hurray.formats.Format;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Tensors read from a file or a connection, in order, one at a time.
 *
 * <p>Implementations: foreign files (safetensors, npy, npz, tfjs), HRRYFILE containers, and
 * Hurray streams (files, stdin, sockets). A source is read once: {@link #forEach} may be called
 * a single time. Not thread-safe.
 */
public interface Source extends AutoCloseable {
    /** Receives each tensor; see {@link Item} for how long its payloads stay valid. */
    @FunctionalInterface
    interface Action {
        void accept(Item item) throws IOException;
    }

    /** The format read. */
    Format format();

    /**
     * File-level metadata: safetensors {@code __metadata__}, tfjs {@code tfjs.*} keys, the
     * HRRYFILE metadata block, or a stream's leading metadata item ({@link StreamMetadata}).
     * Values are bytes (UTF-8 text for the foreign formats). Unmodifiable.
     */
    Map<String, byte[]> metadata();

    /** The number of tensors when known without reading them all, else -1 (streams). */
    long count();

    /** The sum of payload bytes when known up front, else -1 (streams). */
    long totalBytes();

    /** The tensors' descriptions without reading payloads, where the format allows (not streams). */
    Optional<List<Entry>> entries() throws IOException;

    /**
     * Reads every tensor in order and hands it to {@code action}.
     *
     * @throws IOException a {@link dev.hurray.HurrayException} or
     *     {@link dev.hurray.formats.ForeignFormatException} for bad input, another
     *     {@code IOException} for failed reads, or whatever {@code action} threw
     */
    void forEach(Action action) throws IOException;

    @Override
    void close() throws IOException;
}
