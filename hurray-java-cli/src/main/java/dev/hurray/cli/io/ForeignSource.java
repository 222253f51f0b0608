package dev.hurray.cli.io;

import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.ForeignTensor;
import dev.hurray.formats.Format;
import dev.hurray.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A foreign file (safetensors, npy, npz, tfjs) as a {@link Source}: its tensors in file order,
 * each with a descriptor built by {@link ForeignTensor#descriptor()}; payloads that are not 64-byte
 * aligned native memory (most slices of a safetensors or npy mapping) are copied, one tensor
 * at a time, into memory freed after the tensor was handed on.
 */
public final class ForeignSource implements Source {
    private final ForeignModel model;
    private final Format format;
    private final Map<String, byte[]> metadata;

    /** Takes ownership of {@code model} (closed by {@link #close()}). */
    public ForeignSource(ForeignModel model, Format format) {
        this.model = model;
        this.format = format;
        Map<String, byte[]> m = new LinkedHashMap<>();
        model.metadata().forEach((k, v) -> m.put(k, v.getBytes(StandardCharsets.UTF_8)));
        this.metadata = Collections.unmodifiableMap(m);
    }

    /** The model read (owned by this source). */
    public ForeignModel model() {
        return model;
    }

    @Override
    public Format format() {
        return format;
    }

    @Override
    public Map<String, byte[]> metadata() {
        return metadata;
    }

    @Override
    public long count() {
        return model.tensors().size();
    }

    @Override
    public long totalBytes() {
        return model.totalBytes();
    }

    @Override
    public Optional<List<Entry>> entries() {
        List<Entry> l = new ArrayList<>();
        for (ForeignTensor t : model.tensors()) {
            l.add(Entry.of(t));
        }
        return Optional.of(l);
    }

    @Override
    public void forEach(Action action) throws IOException {
        for (ForeignTensor t : model.tensors()) {
            try (Arena scratch = Arena.ofConfined(); Tensor h = t.toTensor(scratch)) {
                action.accept(new Item(h.descriptor(), List.copyOf(h.buffers()), t.sourceOffset()));
            }
        }
    }

    @Override
    public void close() {
        model.close();
    }
}
