package dev.hurray.cli;

import picocli.CommandLine.Option;

/** Options every subcommand takes ({@code --verbose}, {@code --quiet}). */
public final class CommonOptions {
    @Option(names = {"-v", "--verbose"}, description = "Print stack traces with errors.")
    boolean verbose;

    @Option(names = {"-q", "--quiet"}, description = "Print nothing but errors: no progress bar, no summary.")
    boolean quiet;
}
