package dev.hurray.cli;

import dev.hurray.Reader;
import dev.hurray.cli.io.ReadLimits;
import dev.hurray.formats.ForeignFormatException;
import dev.hurray.formats.ForeignFormats;
import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.Format;
import dev.hurray.formats.Safetensors;
import dev.hurray.cli.io.ForeignSource;
import dev.hurray.cli.io.HrryFileSource;
import dev.hurray.cli.io.Source;
import dev.hurray.cli.io.StreamSource;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.LongConsumer;

/** Finding, recognising and opening input files. */
final class Inputs {
    private Inputs() {
    }

    /**
     * Checks {@code in} names a readable regular file and returns its format: {@code from} if
     * given, else detected from content and name.
     *
     * @throws CliException {@link ExitCode#BAD_INPUT} for a missing file, a directory, or an
     *                      unrecognised format; {@link ExitCode#IO_ERROR} if it cannot be read
     */
    static Format format(Path in, Format from) throws CliException {
        if (!Files.exists(in)) {
            throw new CliException(ExitCode.BAD_INPUT, in + ": no such file or directory");
        }
        if (Files.isDirectory(in)) {
            throw new CliException(ExitCode.BAD_INPUT, in + ": is a directory (for tfjs, name the model.json or "
                    + "*weights_manifest.json file)");
        }
        if (!Files.isRegularFile(in)) {
            throw new CliException(ExitCode.BAD_INPUT, in + ": not a regular file");
        }
        if (from != null) {
            return from;
        }
        try {
            return Format.detect(in);
        } catch (IOException e) {
            throw Errors.reading(e);
        }
    }

    /**
     * Opens {@code in} as a {@link Source} of {@code format}.
     *
     * @param dequantize tfjs: compute values instead of keeping quantization
     * @param progress npz and tfjs: byte counts as payloads are read (on first use), or null
     * @throws CliException {@link ExitCode#BAD_INPUT} for malformed content,
     *     {@link ExitCode#IO_ERROR} when the file cannot be read
     */
    static Source open(Path in, Format format, boolean dequantize, LongConsumer progress) throws CliException {
        return open(in, format, dequantize, Safetensors.Options.defaults(), progress);
    }

    /** {@link #open(Path, Format, boolean, LongConsumer)} with safetensors' MX scale pairing. */
    static Source open(Path in, Format format, boolean dequantize, Safetensors.Options safetensors,
                       LongConsumer progress) throws CliException {
        try {
            // A scipy.sparse save_npz archive is one sparse tensor, not an npz of plain arrays.
            if (format == Format.NPZ && dev.hurray.formats.ScipySparse.isSparseNpz(in)) {
                return SparseConvert.source(in);
            }
            return switch (format) {
                case HRRYFILE -> HrryFileSource.open(in);
                case STREAM -> stream(in);
                case ARROW -> dev.hurray.cli.io.ArrowSource.open(in);
                default -> new ForeignSource(ForeignFormats.read(in, format, dequantize, safetensors, progress), format);
            };
        } catch (ForeignFormatException e) {
            throw new CliException(ExitCode.BAD_INPUT, Errors.describe(e), e);
        } catch (IOException e) {
            throw Errors.reading(e, in, null);
        }
    }

    /** A stream file; the channel is closed if the first item cannot be read. */
    static StreamSource stream(Path in) throws IOException {
        FileChannel ch = FileChannel.open(in, StandardOpenOption.READ);
        Reader reader;
        try {
            reader = Reader.of(ch, ReadLimits.streams());
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
        return new StreamSource(reader); // closes the reader, and so the channel, if it fails
    }

    /** Opens a foreign file ({@code verify} then reads each payload in turn). */
    static ForeignModel readForeign(Path in, Format format, boolean dequantize, LongConsumer progress)
            throws CliException {
        try {
            return ForeignFormats.read(in, format, dequantize, progress);
        } catch (ForeignFormatException e) {
            throw new CliException(ExitCode.BAD_INPUT, Errors.describe(e), e);
        } catch (IOException e) {
            throw Errors.reading(e);
        }
    }
}
