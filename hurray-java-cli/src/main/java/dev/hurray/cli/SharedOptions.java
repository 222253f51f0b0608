package dev.hurray.cli;

import dev.hurray.formats.Format;
import picocli.CommandLine.Option;

/**
 * Options several subcommands take, each declared once as a picocli mixin
 * ({@code @Mixin SharedOptions.From input;}), so that every command spells and explains it
 * alike. {@link CommonOptions} holds the ones every subcommand takes.
 */
final class SharedOptions {
    private SharedOptions() {
    }

    /** {@code --from FORMAT}: the input format ({@code inspect}, {@code verify}, {@code convert}, {@code send}). */
    static final class From {
        @Option(names = "--from", paramLabel = "FORMAT", converter = FormatConverter.class,
                completionCandidates = FormatNames.class,
                description = "Input format, when the content and name do not tell: ${COMPLETION-CANDIDATES}.")
        Format format;
    }

    /** {@code --dequantize} ({@code convert}, {@code send}, {@code recv}). */
    static final class Dequantize {
        @Option(names = "--dequantize",
                description = "Replace quantized tensors by their values (computed in float64 and rounded once, "
                        + "as tfjs does) instead of keeping their quantization.")
        boolean dequantize;
    }

    /** {@code --compress} ({@code convert}, {@code recv}). */
    static final class Compress {
        @Option(names = "--compress", description = "npz: deflate entries (like np.savez_compressed).")
        boolean compress;
    }
}
