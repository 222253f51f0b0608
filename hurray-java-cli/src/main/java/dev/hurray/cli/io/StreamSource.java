package dev.hurray.cli.io;

import dev.hurray.Composite;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.formats.Format;
import java.io.IOException;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A Hurray stream (a {@code .hrrys} file, stdin, a socket) as a {@link Source}. It reads the
 * stream's assembled view ({@link Reader#nextItem()}): a composite reaches {@link #forEach}
 * only once the native reader has checked all of it (member counts, depths and indices, the
 * end marker outside it, at most 65,536 descriptors; docs/spec/stream.md §Composites), and is
 * then handed on as its head followed by its members in preorder, as the stream carries it.
 * So a malformed composite fails the read before any of it is handed on. Opening reads the
 * first item, so that a leading {@link StreamMetadata} item becomes {@link #metadata()}; the
 * rest is read by {@link #forEach}, one item at a time, each closed once handed on. Counts and
 * offsets are unknown until the stream is read.
 */
public final class StreamSource implements Source {
    private final Reader reader;
    private final Map<String, byte[]> metadata;
    private dev.hurray.Item pending;
    private long composites;

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
            dev.hurray.Item first = reader.nextItem();
            if (meta.isEmpty() && first != null && first.tensor().isPresent()
                    && StreamMetadata.isMetadataItem(first.tensor().get().descriptor())) {
                meta = first.tensor().get().descriptor().metadata();
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

    /** The number of composites {@link #forEach} has handed on so far. */
    public long composites() {
        return composites;
    }

    @Override
    public void forEach(Action action) throws IOException {
        dev.hurray.Item it = pending;
        pending = null;
        if (it == null && !reader.isEndOfStream()) {
            it = reader.nextItem();
        }
        while (it != null) {
            try (dev.hurray.Item cur = it) {
                if (cur.isComposite()) {
                    composites++;
                    handOn(cur.composite().get(), action);
                } else {
                    Tensor t = cur.tensor().get();
                    action.accept(new Item(t.descriptor(), t.buffers(), -1));
                }
            }
            it = reader.nextItem();
        }
    }

    /** The head, then every member in preorder (a nested composite as its head, then its members). */
    private static void handOn(Composite c, Action action) throws IOException {
        action.accept(new Item(c.head(), List.of(), -1));
        for (Composite.Member m : c.members()) {
            if (m.isComposite()) {
                handOn(m.composite(), action);
            } else {
                action.accept(new Item(m.tensor().descriptor(), m.tensor().buffers(), -1));
            }
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
