package dev.hurray.cli.io;

import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.formats.Format;
import java.io.IOException;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A Hurray stream (a {@code .hrrys} file, stdin, a socket) as a {@link Source}. Opening reads
 * the first item, so that a leading {@link StreamMetadata} item becomes {@link #metadata()};
 * the rest is read by {@link #forEach}, one tensor at a time, each closed once handed on.
 * Counts and offsets are unknown until the stream is read.
 */
public final class StreamSource implements Source {
    private final Reader reader;
    private final Map<String, byte[]> metadata;
    private Tensor pending;

    /**
     * Reads the first item of {@code reader} (taking ownership of the reader).
     *
     * @throws IOException the reader's failure (e.g. {@code INVALID_MAGIC} for a file that is not a stream)
     */
    public StreamSource(Reader reader) throws IOException {
        this.reader = reader;
        Map<String, byte[]> meta = Map.of();
        try {
            // The stream-metadata frame; streams written before it existed carry the file
            // metadata as a leading __metadata__ item instead, which is still accepted.
            meta = reader.metadata();
            Tensor first = reader.read();
            if (meta.isEmpty() && first != null && StreamMetadata.isMetadataItem(first.descriptor())) {
                meta = first.descriptor().metadata();
                first.close();
                first = null;
            }
            pending = first;
        } catch (IOException | RuntimeException e) {
            try {
                reader.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        this.metadata = Collections.unmodifiableMap(meta);
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
        Tensor t = pending;
        pending = null;
        if (t == null && !reader.isEndOfStream()) {
            t = reader.read();
        }
        while (t != null) {
            try (Tensor cur = t) {
                action.accept(new Item(cur.descriptor(), cur.buffers(), -1));
            }
            t = reader.read();
        }
    }

    @Override
    public void close() throws IOException {
        try {
            if (pending != null) {
                pending.close();
                pending = null;
            }
        } finally {
            reader.close();
        }
    }
}
