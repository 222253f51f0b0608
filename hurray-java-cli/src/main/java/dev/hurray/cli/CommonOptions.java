package dev.hurray.cli;

import picocli.CommandLine.Option;

/**
 * Options every subcommand takes, as the mixin {@code common}: {@code --verbose} (read by
 * {@link Main}'s error handler, which prints the Java stack trace after the one-line error when
 * it is set) and {@code --quiet} (read by each command).
 */
public final class CommonOptions {
    @Option(names = {"-v", "--verbose"}, description = "Print the Java stack trace after an error's one-line message.")
    boolean verbose;

    @Option(names = {"-q", "--quiet"}, description = "Print nothing but errors: no progress bar, no summary.")
    boolean quiet;
}
