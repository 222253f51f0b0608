package dev.hurray.cli;

import dev.hurray.cli.foreign.Format;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code hurray recv --listen PORT --out FILE}: receives a stream into a file (needs the Hurray library). */
@Command(name = "recv", description = {"Listen for one Hurray stream over TCP and write what arrives to a file.",
        "Not available in this build."})
final class RecvCommand implements Callable<Integer> {
    @Mixin
    CommonOptions common;

    @Option(names = "--listen", paramLabel = "PORT", required = true,
            description = "TCP port to listen on (0 picks a free one and prints it).")
    int port;

    @Option(names = "--bind", paramLabel = "ADDRESS", defaultValue = "127.0.0.1",
            description = "Address to listen on (default: ${DEFAULT-VALUE}).")
    String bind;

    @Option(names = "--out", paramLabel = "FILE", required = true, description = "Where to write what arrives.")
    Path out;

    @Option(names = "--to", paramLabel = "FORMAT", converter = FormatConverter.class,
            completionCandidates = FormatNames.class, description = "Output format (default: from the extension).")
    Format to;

    @Override
    public Integer call() throws CliException {
        if (port < 0 || port > 65535) {
            throw new CliException(ExitCode.USAGE, "--listen: port " + port + " is not in 0-65535");
        }
        throw CliException.notAvailable("receiving a Hurray stream");
    }
}
