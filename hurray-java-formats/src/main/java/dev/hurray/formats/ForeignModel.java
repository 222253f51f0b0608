package dev.hurray.formats;

import dev.hurray.FileEntry;
import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
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
 * <p><b>Memory.</b> A model the readers of this module open holds the file's header, not its
 * payloads: each tensor reads its own payload on first use and can {@link ForeignTensor#release()
 * release} it (see {@link ForeignTensor}, §Lazy payloads). {@link #residentBytes()} is the payload
 * memory held now. {@link #writeTo(HurrayFileWriter)} and {@link #writeTo(Writer)} read one tensor
 * at a time and free it once written (a tensor the caller loaded stays loaded), so writing a
 * model needs memory for its largest tensor, not for all of them. While the model is open it keeps its
 * file(s) open for those reads.
 *
 * <p><b>Ownership.</b> {@link #close()} releases every payload the model's tensors read, closes
 * its files, and closes the arena it was given (which owns the payloads of a model built from
 * segments); every payload segment then throws {@link IllegalStateException} on access, and so
 * does asking a lazy tensor for its payload. Closing twice is a no-op. Payload memory is in
 * shared arenas, so payloads may be read from any thread while the model is open; closing while
 * another thread reads fails that read, never the JVM.
 */
public final class ForeignModel implements AutoCloseable {
    private final List<ForeignTensor> tensors;
    private final Map<String, String> metadata;
    private final Arena arena;
    private final List<java.io.Closeable> files;
    private boolean closed;

    /**
     * @param tensors  tensors in file order; names must be unique
     * @param metadata file-level metadata (copied, order kept)
     * @param arena    the arena that owns every payload, or {@code null} when the caller keeps
     *                 ownership of the payloads (e.g. segments from an arena it closes itself)
     * @throws IllegalArgumentException on a duplicate tensor name
     * @throws NullPointerException for a null list, map, tensor, or metadata key or value
     */
    public ForeignModel(List<ForeignTensor> tensors, Map<String, String> metadata, Arena arena) {
        this(tensors, metadata, arena, List.of());
    }

    /** A model whose lazy tensors read from {@code files}, which {@link #close()} closes. */
    ForeignModel(List<ForeignTensor> tensors, Map<String, String> metadata, Arena arena, List<? extends java.io.Closeable> files) {
        this.tensors = List.copyOf(tensors);
        for (Map.Entry<String, String> e : Objects.requireNonNull(metadata, "metadata").entrySet()) {
            if (e.getKey() == null || e.getValue() == null) {
                throw new NullPointerException("metadata holds a null " + (e.getKey() == null ? "key" : "value for '"
                        + e.getKey() + "'"));
            }
        }
        this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
        this.arena = arena;
        this.files = List.copyOf(files);
        Set<String> seen = new HashSet<>();
        for (ForeignTensor t : this.tensors) {
            if (!seen.add(t.name())) {
                throw new IllegalArgumentException("duplicate tensor name '" + dev.hurray.TensorNames.forMessage(t.name()) + "'");
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

    /** Sum of the payload sizes in bytes (scale buffers included); reads no payload. */
    public long totalBytes() {
        long n = 0;
        for (ForeignTensor t : tensors) {
            n += t.totalBytes();
        }
        return n;
    }

    /**
     * Payload bytes in memory now (scale buffers included): the lazy tensors loaded and not
     * released, plus the tensors built from segments ({@link ForeignTensor#residentBytes()}).
     * 0 for a model just opened by a reader of this module.
     */
    public long residentBytes() {
        long n = 0;
        for (ForeignTensor t : tensors) {
            n += t.residentBytes();
        }
        return n;
    }

    /** {@link ForeignTensor#release() Releases} every tensor's payload; the model stays open. */
    public void release() {
        for (ForeignTensor t : tensors) {
            t.release();
        }
    }

    /**
     * Runs {@code action} on each tensor as a Hurray tensor (as {@link ForeignTensor#toTensor(Arena)}
     * makes it), in model order, one at a time, on the calling thread. A tensor that is not
     * loaded is read for this call only, into memory freed when {@code action} returns (the
     * tensor stays unloaded; {@link #residentBytes()} counts that memory meanwhile), so at most
     * one payload is in memory at a time besides those the caller loaded. The Hurray tensor is
     * valid only during the call and only on this thread.
     *
     * @return the number of tensors
     * @throws IOException as {@link ForeignTensor#toTensor(Arena)} and {@code action} throw; the
     *     tensors after the failing one are not read
     */
    public long forEachTensor(TensorAction action) throws IOException {
        for (ForeignTensor t : tensors) {
            TensorDescriptor d = t.descriptor();
            t.withPayload((data, scales) -> {
                try (Arena scratch = Arena.ofConfined(); Tensor h = ForeignTensor.wrap(d, data, scales, scratch)) {
                    action.accept(t, h);
                }
            });
        }
        return tensors.size();
    }

    /** What {@link #forEachTensor} runs for each tensor. */
    @FunctionalInterface
    public interface TensorAction {
        /**
         * @param foreign the model's tensor
         * @param tensor  its Hurray view, valid until this call returns
         */
        void accept(ForeignTensor foreign, Tensor tensor) throws IOException;
    }

    // ---------------------------------------------------------------- Hurray containers and streams

    /**
     * Adds this model to an HRRYFILE being written: its file metadata (UTF-8 values) and each
     * tensor, in model order, under its name, one at a time ({@link #forEachTensor}: a payload
     * is read, written and freed before the next is read; payloads that are not 64-byte
     * aligned are copied into memory freed right after). The caller finishes the file.
     *
     * @return the number of tensors added
     * @throws ForeignFormatException if a tensor cannot be a Hurray tensor, or the file changed
     *     since it was opened (see {@link ForeignTensor#data()})
     * @throws HurrayException as {@link HurrayFileWriter#add(Tensor)} and
     *     {@link HurrayFileWriter#metadata(String, String)} throw (limits, a closed writer)
     */
    public long writeTo(HurrayFileWriter writer) throws IOException {
        for (Map.Entry<String, String> e : metadata.entrySet()) {
            writer.metadata(e.getKey(), e.getValue());
        }
        return forEachTensor((t, h) -> writer.add(h));
    }

    /**
     * Writes this model as the HRRYFILE {@code target}, atomically ({@link HurrayFile#create(Path)}).
     *
     * @throws IOException as {@link #writeTo(HurrayFileWriter)} and {@link HurrayFileWriter#finish()} throw
     */
    public void toHurrayFile(Path target) throws IOException {
        try (HurrayFileWriter w = HurrayFile.create(target)) {
            writeTo(w);
            w.finish();
        }
    }

    /**
     * Writes each tensor, in model order, to a Hurray stream; the file metadata (if any) goes
     * first, as the stream's metadata (docs/spec/stream.md §Stream metadata), so the writer must
     * not have written anything yet when the model has metadata. Tensors are read, written and
     * freed one at a time, as {@link #writeTo(HurrayFileWriter)}.
     *
     * @return the number of tensors written
     * @throws ForeignFormatException if a tensor cannot be a Hurray tensor, or the file changed
     *     since it was opened
     * @throws IOException as {@link Writer#metadata(java.util.Map)} and {@link Writer#write(Tensor)} throw
     */
    public long writeTo(Writer writer) throws IOException {
        if (!metadata.isEmpty()) {
            Map<String, byte[]> bytes = new java.util.LinkedHashMap<>();
            metadata.forEach((k, v) -> bytes.put(k, v.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            writer.metadata(bytes);
        }
        return forEachTensor((t, h) -> writer.write(h));
    }

    /**
     * Reads an HRRYFILE as a model a foreign format can be written from: every tensor (in
     * payload order) copied into memory the model owns, and the file metadata whose values are
     * UTF-8 text.
     *
     * @throws ForeignFormatException if a tensor has no foreign counterpart (no name, strided,
     *     several buffers) or a metadata value is not UTF-8 text
     * @throws HurrayException as the file's reads throw
     */
    public static ForeignModel of(HurrayFile file) throws IOException {
        Arena arena = Arena.ofShared();
        try {
            List<ForeignTensor> ts = new ArrayList<>();
            List<FileEntry> entries = new ArrayList<>(file.entries());
            entries.sort(java.util.Comparator.comparingLong(e -> e.buffers().isEmpty() ? 0 : e.buffers().get(0).offset()));
            for (FileEntry e : entries) {
                try (Tensor t = file.read(e)) {
                    ts.add(copy(t, arena));
                }
            }
            Map<String, String> meta = new LinkedHashMap<>();
            for (Map.Entry<String, byte[]> e : file.metadata().entrySet()) {
                try {
                    meta.put(e.getKey(), StandardCharsets.UTF_8.newDecoder()
                            .decode(java.nio.ByteBuffer.wrap(e.getValue())).toString());
                } catch (java.nio.charset.CharacterCodingException notText) {
                    throw new ForeignFormatException("file metadata '" + e.getKey() + "' is not UTF-8 text");
                }
            }
            return new ForeignModel(ts, meta, arena);
        } catch (Throwable t) {
            arena.close();
            throw t;
        }
    }

    /**
     * Reads every tensor of a Hurray stream into a model, copying each payload into memory the
     * model owns (the stream's tensors are closed as they are copied); the stream's metadata
     * entries whose values are UTF-8 text become the model's metadata.
     *
     * @throws ForeignFormatException if a tensor has no foreign counterpart
     * @throws IOException as the reader throws
     */
    public static ForeignModel of(Reader reader) throws IOException {
        Arena arena = Arena.ofShared();
        try {
            Map<String, String> meta = new java.util.LinkedHashMap<>();
            java.nio.charset.CharsetDecoder utf8 = java.nio.charset.StandardCharsets.UTF_8.newDecoder();
            for (Map.Entry<String, byte[]> e : reader.metadata().entrySet()) {
                try {
                    meta.put(e.getKey(), utf8.decode(java.nio.ByteBuffer.wrap(e.getValue())).toString());
                } catch (java.nio.charset.CharacterCodingException binary) {
                    // not text: a foreign model's metadata holds strings only
                }
            }
            List<ForeignTensor> ts = new ArrayList<>();
            for (Tensor t : reader) {
                try (t) {
                    ts.add(copy(t, arena));
                }
            }
            return new ForeignModel(ts, meta, arena);
        } catch (Throwable t) {
            arena.close();
            throw t;
        }
    }

    private static ForeignTensor copy(Tensor t, Arena arena) throws IOException {
        ForeignTensor view = ForeignTensor.of(t);
        MemorySegment c = Payloads.allocate(arena, view.byteSize());
        MemorySegment.copy(view.data(), 0, c, 0, view.byteSize());
        List<MemorySegment> scales = new ArrayList<>();
        for (MemorySegment s : view.scaleBuffers()) {
            MemorySegment sc = Payloads.allocate(arena, s.byteSize());
            MemorySegment.copy(s, 0, sc, 0, s.byteSize());
            scales.add(sc);
        }
        return new ForeignTensor(view.name(), view.dtype(), view.shape(), view.layout(), c,
                view.quantization().orElse(null), scales, -1);
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            for (ForeignTensor t : tensors) {
                t.closeFromModel();
            }
            for (java.io.Closeable f : files) {
                try {
                    f.close();
                } catch (IOException ignored) {
                    // a read-only file: nothing was written that closing could lose
                }
            }
            if (arena != null) {
                arena.close();
            }
        }
    }
}
