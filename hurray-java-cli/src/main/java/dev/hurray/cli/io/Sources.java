package dev.hurray.cli.io;

import dev.hurray.formats.Format;
import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Helpers around {@link Source}. */
public final class Sources {
    private Sources() {
    }

    /**
     * {@code src} with {@code extra} added to its file metadata (an extra key replaces the
     * source's value); tensors unchanged. Closing the result closes {@code src}.
     */
    public static Source withMetadata(Source src, Map<String, byte[]> extra) {
        Map<String, byte[]> merged = new LinkedHashMap<>(src.metadata());
        merged.putAll(extra);
        Map<String, byte[]> meta = Collections.unmodifiableMap(merged);
        return new Source() {
            @Override
            public Format format() {
                return src.format();
            }

            @Override
            public Map<String, byte[]> metadata() {
                return meta;
            }

            @Override
            public long count() {
                return src.count();
            }

            @Override
            public long totalBytes() {
                return src.totalBytes();
            }

            @Override
            public Optional<List<Entry>> entries() throws IOException {
                return src.entries();
            }

            @Override
            public void forEach(Action action) throws IOException {
                src.forEach(action);
            }

            @Override
            public void close() throws IOException {
                src.close();
            }
        };
    }
}
