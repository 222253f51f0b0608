package dev.hurray.cli.io;

import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.ForeignTensor;
import dev.hurray.formats.Format;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A foreign file (safetensors, npy, npz, GGUF, tfjs) as a {@link Source}: its tensors in file
 * order, each with a descriptor built by {@link ForeignTensor#descriptor()}. {@link #entries()}
 * reads no payload; {@link #forEach} reads each tensor's payload when it comes to it and releases
 * it once the action has handed the tensor on ({@link ForeignModel#forEachTensor}), so a copy
 * holds one payload at a time.
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
        model.forEachTensor((t, h) -> action.accept(new Item(h.descriptor(), List.copyOf(h.buffers()), t.sourceOffset())));
    }

    @Override
    public void close() {
        model.close();
    }
}
