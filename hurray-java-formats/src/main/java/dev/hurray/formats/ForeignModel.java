package dev.hurray.formats;

import java.lang.foreign.Arena;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The tensors of one foreign file, in file order, plus its file-level string metadata
 * (safetensors {@code __metadata__}; tfjs {@code format}/{@code generatedBy}/{@code convertedBy}).
 *
 * <p><b>Ownership.</b> The model owns the arena its payloads live in (file mappings and copies);
 * {@link #close()} unmaps and frees them all, after which every payload segment throws
 * {@link IllegalStateException} on access. Closing twice is a no-op. The arena is shared, so
 * payloads may be read from any thread while the model is open; closing while another thread
 * reads fails that read, never the JVM.
 */
public final class ForeignModel implements AutoCloseable {
    private final List<ForeignTensor> tensors;
    private final Map<String, String> metadata;
    private final Arena arena;
    private boolean closed;

    /**
     * @param tensors  tensors in file order; names must be unique
     * @param metadata file-level metadata (copied, order kept)
     * @param arena    the arena that owns every payload, or {@code null} when the caller keeps
     *                 ownership of the payloads (e.g. segments from an arena it closes itself)
     * @throws IllegalArgumentException on a duplicate tensor name
     */
    public ForeignModel(List<ForeignTensor> tensors, Map<String, String> metadata, Arena arena) {
        this.tensors = List.copyOf(tensors);
        this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(metadata)));
        this.arena = arena;
        Set<String> seen = new HashSet<>();
        for (ForeignTensor t : this.tensors) {
            if (!seen.add(t.name())) {
                throw new IllegalArgumentException("duplicate tensor name '" + t.name() + "'");
            }
        }
    }

    /** Tensors in file order. */
    public List<ForeignTensor> tensors() {
        return tensors;
    }

    /** File-level metadata, in file order. */
    public Map<String, String> metadata() {
        return metadata;
    }

    /** The tensor named {@code name}, or {@code null}. */
    public ForeignTensor tensor(String name) {
        for (ForeignTensor t : tensors) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }

    /** Sum of the payload sizes in bytes. */
    public long totalBytes() {
        long n = 0;
        for (ForeignTensor t : tensors) {
            n += t.byteSize();
        }
        return n;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (arena != null) {
                arena.close();
            }
        }
    }
}
