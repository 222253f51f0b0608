package dev.hurray.cli.io;

import dev.hurray.formats.Format;
import dev.hurray.formats.Safetensors;
import java.io.IOException;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/** Opens the {@link Sink} for an output file of a given format. */
public final class Sinks {
    private Sinks() {
    }

    /**
     * A sink writing {@code target} as {@code format}, atomically.
     *
     * @param compress npz: deflate the entries
     * @param dequantize foreign formats: compute the values of quantized tensors instead of refusing them
     * @param progress foreign formats: byte counts while the file is written at commit, or null
     * @param warn receives one-line warnings about what a format dropped
     * @throws IllegalArgumentException for a format that cannot be written (tfjs)
     * @throws IOException if the temporary output cannot be created
     */
    public static Sink file(Path target, Format format, boolean compress, boolean dequantize, LongConsumer progress,
                            Consumer<String> warn) throws IOException {
        return file(target, format, compress, dequantize, Safetensors.Options.defaults(), progress, warn);
    }

    /** {@link #file(Path, Format, boolean, boolean, LongConsumer, Consumer)} with safetensors' MX scale pairing. */
    public static Sink file(Path target, Format format, boolean compress, boolean dequantize,
                            Safetensors.Options safetensors, LongConsumer progress, Consumer<String> warn)
            throws IOException {
        return switch (format) {
            case HRRYFILE -> HrryFileSink.toFile(target);
            case STREAM -> StreamSink.toFile(target);
            case ARROW -> new ArrowSink(target);
            default -> new ForeignSink(target, format, compress, dequantize, safetensors, progress, warn);
        };
    }
}
