package dev.hurray.cli;

import dev.hurray.cli.foreign.ForeignFormatException;
import dev.hurray.cli.foreign.ForeignFormats;
import dev.hurray.cli.foreign.ForeignModel;
import dev.hurray.cli.foreign.Format;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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

    /** Reads a foreign file; Hurray's own formats are {@link ExitCode#NOT_AVAILABLE} here. */
    static ForeignModel readForeign(Path in, Format format, boolean dequantize, LongConsumer progress)
            throws CliException {
        if (!format.isForeign()) {
            throw CliException.notAvailable("reading " + (format == Format.HRRYFILE ? "an HRRYFILE" : "a Hurray stream"));
        }
        try {
            return ForeignFormats.read(in, format, dequantize, progress);
        } catch (ForeignFormatException e) {
            throw new CliException(ExitCode.BAD_INPUT, Errors.describe(e), e);
        } catch (IOException e) {
            throw Errors.reading(e);
        }
    }
}
