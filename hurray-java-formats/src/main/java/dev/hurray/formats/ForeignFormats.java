package dev.hurray.formats;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.LongConsumer;

/** Reading and writing any foreign {@link Format} through one entry point. */
public final class ForeignFormats {
    private ForeignFormats() {
    }

    /**
     * Opens {@code file} in the foreign format its content (or, when that does not tell, its
     * name) shows ({@link Format#detect}): its header is read and checked now, each payload when
     * its tensor is first used ({@link ForeignTensor}, §Lazy payloads). With the defaults: tfjs quantization kept, MX scale
     * pairing for safetensors, no progress callback. The common call; the other overloads name
     * the format and options.
     *
     * @throws ForeignFormatException if no known format is recognised, or the file is not valid
     *     in its format
     * @throws IllegalArgumentException if the file is a Hurray container or stream (read those
     *     with {@code HurrayFile} or {@code Reader})
     * @throws IOException if the file cannot be read
     */
    public static ForeignModel read(Path file) throws IOException {
        return read(file, Format.detect(file), false, null);
    }

    /**
     * Reads {@code file} as {@code format}.
     *
     * @param dequantize tfjs only: compute dequantized values instead of keeping quantization
     * @param progress   npz and tfjs: called with byte counts as a payload is read (when its
     *                   tensor is first used, on the thread that uses it), or {@code null}
     * @throws IllegalArgumentException for a non-foreign format (Hurray's own are not read here)
     */
    public static ForeignModel read(Path file, Format format, boolean dequantize, LongConsumer progress)
            throws IOException {
        return read(file, format, dequantize, Safetensors.Options.defaults(), progress);
    }

    /**
     * Reads {@code file} as {@code format}; safetensors pairs MX scale tensors with their values
     * as {@code safetensors} says ({@link Safetensors.Options}).
     *
     * @param dequantize tfjs only: compute dequantized values instead of keeping quantization
     * @param progress   as {@link #read(Path, Format, boolean, LongConsumer)}
     * @throws IllegalArgumentException for a non-foreign format (Hurray's own are not read here)
     */
    public static ForeignModel read(Path file, Format format, boolean dequantize, Safetensors.Options safetensors,
                                    LongConsumer progress) throws IOException {
        if (format == Format.HRRYFILE || format == Format.STREAM) {
            throw new IllegalArgumentException(format + " is not a foreign format");
        }
        try {
            return switch (format) {
                case SAFETENSORS -> Safetensors.read(file, safetensors);
                case NPY -> Npy.read(file, stem(file, ".npy"));
                case NPZ -> Npz.read(file, progress);
                case TFJS -> Tfjs.read(file, dequantize, progress);
                case GGUF -> Gguf.read(file);
                case ARROW -> throw new ForeignFormatException(file + ": Arrow IPC is read by the hurray-arrow module "
                        + "(dev.hurray.arrow.ArrowTables)");
                case HRRYFILE, STREAM -> throw new AssertionError(format);
            };
        } catch (IllegalArgumentException e) {
            // A tensor the file describes that Hurray refuses (e.g. a name against the name
            // rule, docs/spec/descriptor.md §Names) is bad input, exit 2, not an internal error.
            throw new ForeignFormatException(file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Writes {@code model} to {@code target} as {@code format}, atomically.
     *
     * @param compress npz only: deflate the entries
     * @throws ForeignFormatException if the format cannot hold the model (a quantized tensor,
     *                                an unsupported element type, several tensors for npy)
     */
    public static void write(ForeignModel model, Path target, Format format, boolean compress, LongConsumer progress)
            throws IOException {
        write(model, target, format, compress, Safetensors.Options.defaults(), progress);
    }

    /**
     * Writes {@code model} to {@code target} as {@code format}, atomically; safetensors splits MX
     * tensors into values and scales as {@code safetensors} says ({@link Safetensors.Options}).
     *
     * @param compress npz only: deflate the entries
     * @throws ForeignFormatException if the format cannot hold the model (a quantized tensor,
     *                                an unsupported element type, several tensors for npy)
     */
    public static void write(ForeignModel model, Path target, Format format, boolean compress,
                             Safetensors.Options safetensors, LongConsumer progress) throws IOException {
        switch (format) {
            case SAFETENSORS -> Safetensors.write(model, target, safetensors, progress);
            case NPZ -> Npz.write(model, target, compress, progress);
            case GGUF -> Gguf.write(model, target, progress);
            case NPY -> {
                List<ForeignTensor> ts = model.tensors();
                if (ts.size() != 1) {
                    throw new ForeignFormatException("npy holds exactly one array; this model has " + ts.size()
                            + " tensors (write .npz instead)");
                }
                Npy.write(ts.get(0), target, progress);
            }
            default -> throw new IllegalArgumentException(format + " cannot be written by this module");
        }
    }

    /** The file name without {@code suffix} (case-insensitive), used as the npy tensor name. */
    static String stem(Path file, String suffix) {
        String n = file.getFileName().toString();
        if (n.toLowerCase(java.util.Locale.ROOT).endsWith(suffix) && n.length() > suffix.length()) {
            return n.substring(0, n.length() - suffix.length());
        }
        return n;
    }
}
