package dev.hurray.cli.io;

import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import dev.hurray.formats.ForeignFormats;
import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.ForeignTensor;
import dev.hurray.formats.Format;
import dev.hurray.formats.Gguf;
import dev.hurray.formats.PayloadSpool;
import dev.hurray.formats.Safetensors;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * Writes a foreign file (safetensors, npy, npz, GGUF). These formats are written whole (a header
 * or directory names every tensor), while the pipeline hands over one tensor at a time, once: the
 * sink writes each tensor's payload to a {@link PayloadSpool} next to the target as it arrives
 * and keeps only its descriptor, then lays the file out at {@link #commit()}, atomically, reading
 * each payload back for its own write. Memory is one tensor's payload (plus its dequantized
 * values with {@code --dequantize}), whatever the model's size; the spool needs the payloads'
 * size in free disk space beside the target while the command runs, and is deleted by
 * {@link #close()}.
 *
 * <p>What the target cannot hold is refused, never silently changed: a quantized tensor
 * (unless the sink dequantizes, see {@link Dequantize}, or it is an MX tensor safetensors records
 * as values plus scales, see {@link Safetensors.Options}, or GGUF Q8_0/Q4_0 blocks GGUF records
 * as ggml types, see {@link Gguf#records}), strided layouts, several buffers. What
 * it can drop without changing values is dropped with a warning: file metadata for npy/npz,
 * file metadata values that are not UTF-8 text for safetensors and GGUF, per-tensor metadata.
 * GGUF gets the file metadata with its GGUF value types (the {@code gguf.type.KEY} records a
 * GGUF input left, see {@link Gguf}); raw ggml block rows ({@code gguf.tensor_type.NAME}) are
 * written as their ggml type.
 */
public final class ForeignSink implements Sink {
    private final Path target;
    private final Format format;
    private final boolean compress;
    private final boolean dequantize;
    private final Safetensors.Options safetensors;
    private final LongConsumer progress;
    private final Consumer<String> warn;
    private PayloadSpool spool;
    private final List<ForeignTensor> tensors = new ArrayList<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();
    private int droppedTensorMetadata;
    /** File metadata naming a raw ggml block type per tensor (a GGUF input's Q4_1, k-quants…): tensor name → type. */
    private static final String RAW_GGML_TYPE_KEY = Gguf.TENSOR_TYPE_KEY_PREFIX;
    private final Map<String, String> rawGgmlTypes = new java.util.HashMap<>();
    private int rawBlockRows;
    private String rawBlockExample;
    private boolean closed;

    /**
     * @param format safetensors, npy, npz or GGUF
     * @param compress npz: deflate the entries
     * @param dequantize compute the values of quantized tensors instead of refusing them
     * @param safetensors how MX tensors become safetensors values plus scales (safetensors only);
     *     an MX tensor it records is kept, not dequantized
     * @param progress byte counts while the file is written, or null
     * @param warn receives one-line warnings about what was dropped
     */
    public ForeignSink(Path target, Format format, boolean compress, boolean dequantize, Safetensors.Options safetensors,
                       LongConsumer progress, Consumer<String> warn) {
        if (!format.isForeign() || !format.writable()) {
            throw new IllegalArgumentException(format + " is not a writable foreign format");
        }
        this.target = target;
        this.format = format;
        this.compress = compress;
        this.dequantize = dequantize;
        this.safetensors = safetensors;
        this.progress = progress;
        this.warn = warn;
    }

    @Override
    public void begin(Map<String, byte[]> meta) {
        if (meta.isEmpty()) {
            return;
        }
        for (Map.Entry<String, byte[]> e : meta.entrySet()) {
            if (e.getKey().startsWith(RAW_GGML_TYPE_KEY)) {
                rawGgmlTypes.put(e.getKey().substring(RAW_GGML_TYPE_KEY.length()),
                        new String(e.getValue(), StandardCharsets.UTF_8));
            }
        }
        if (format != Format.SAFETENSORS && format != Format.GGUF) {
            warn.accept(format + " cannot hold file metadata; " + meta.size() + " entries dropped");
            return;
        }
        int dropped = 0;
        for (Map.Entry<String, byte[]> e : meta.entrySet()) {
            try {
                metadata.put(e.getKey(), StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(e.getValue())).toString());
            } catch (CharacterCodingException notText) {
                dropped++;
            }
        }
        if (dropped > 0) {
            warn.accept(format + " metadata holds text; " + dropped + " file metadata entries that are not UTF-8 dropped");
        }
    }

    @Override
    public void accept(Item item) throws IOException {
        TensorDescriptor d = item.descriptor();
        boolean paired = format == Format.SAFETENSORS && d.quantization()
                .filter(q -> safetensors.pairs(q, d.shape().rank())).isPresent();
        boolean recorded = paired || format == Format.GGUF && d.quantization()
                .filter(q -> Gguf.records(q, d.shape().rank())).isPresent();
        if (format == Format.NPY && !tensors.isEmpty()) {
            throw new ForeignFormatException("npy holds exactly one array; the input has more tensors (write .npz instead)");
        }
        try (Arena values = Arena.ofConfined()) {
            if (item.descriptor().quantization().isPresent() && !recorded) {
                if (!dequantize) {
                    throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(item.name())
                            + "' is quantized (" + Entry.describe(item.descriptor().quantization().get()) + "); " + format
                            + " cannot record quantization: pass --dequantize to compute the values, or write .hrry");
                }
                item = Dequantize.apply(item, values);
            }
            if (!item.descriptor().metadata().isEmpty()) {
                droppedTensorMetadata++;
            }
            String ggml = rawGgmlTypes.get(item.name());
            if (ggml != null && format != Format.GGUF && item.descriptor().elementType() == dev.hurray.ElementType.UINT8) {
                if (rawBlockRows++ == 0) {
                    rawBlockExample = "'" + dev.hurray.TensorNames.forMessage(item.name()) + "': " + ggml;
                }
            }
            List<MemorySegment> payloads = item.payloads();
            if (payloads.size() != 1 && !paired) {
                throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(item.name()) + "': "
                        + payloads.size() + " buffers; " + format + " holds one dense buffer per tensor");
            }
            ForeignTensor t = ForeignTensor.of(item.descriptor(), payloads);
            if (spool == null) {
                spool = PayloadSpool.create(target);
            }
            tensors.add(spool.add(t));
        }
    }

    @Override
    public void commit() throws IOException {
        if (rawBlockRows > 0) {
            warn.accept(rawBlockRows + " tensors are GGUF block rows Hurray cannot dequantize (" + rawBlockExample
                    + (rawBlockRows > 1 ? ", …" : "") + "); " + format + " gets their raw uint8 bytes, not values");
        }
        if (droppedTensorMetadata > 0) {
            warn.accept(format + " cannot hold per-tensor metadata; dropped from " + droppedTensorMetadata + " tensors");
        }
        ForeignModel model;
        try {
            model = new ForeignModel(tensors, metadata, null);
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException(e.getMessage());
        }
        ForeignFormats.write(model, target, format, compress, safetensors, progress);
    }

    /** Payload bytes this sink holds in memory now (its tensors wait in the spool: 0 between tensors). */
    long residentBytes() {
        long n = 0;
        for (ForeignTensor t : tensors) {
            n += t.residentBytes();
        }
        return n;
    }

    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            if (spool != null) {
                spool.close();
            }
        }
    }
}
