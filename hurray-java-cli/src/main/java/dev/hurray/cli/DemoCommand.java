package dev.hurray.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code hurray demo}: bundled face-api weights → HRRYFILE → loopback TCP → second HRRYFILE,
 * proven bit-exact. The HRRYFILE and stream steps need the Hurray library: not available in
 * this build. {@code --list} shows the bundled models.
 */
@Command(name = "demo", description = {"Convert a bundled model to an HRRYFILE, stream it over loopback TCP,",
        "write what arrives to a second HRRYFILE and prove the two bit-exact.",
        "Not available in this build (--list works)."})
final class DemoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    CommonOptions common;

    @Option(names = "--model", paramLabel = "NAME", defaultValue = BundledModels.DEFAULT,
            description = "Bundled model to use (default: ${DEFAULT-VALUE}; see --list).")
    String model;

    @Option(names = "--list", description = "List the bundled models and exit.")
    boolean list;

    @Override
    public Integer call() throws CliException {
        if (list) {
            for (String name : BundledModels.NAMES) {
                spec.commandLine().getOut().println(name);
            }
            return ExitCode.OK;
        }
        if (!BundledModels.NAMES.contains(model)) {
            throw new CliException(ExitCode.USAGE, "no bundled model '" + model + "' (see --list)");
        }
        throw CliException.notAvailable("the demo (HRRYFILE and stream)");
    }
}
