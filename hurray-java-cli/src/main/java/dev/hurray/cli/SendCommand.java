package dev.hurray.cli;

import dev.hurray.cli.foreign.Format;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code hurray send HOST:PORT FILE}: streams a file's tensors over TCP (needs the Hurray library). */
@Command(name = "send", description = {"Send a file's tensors as a Hurray stream over TCP.",
        "Not available in this build."})
final class SendCommand implements Callable<Integer> {
    @Mixin
    CommonOptions common;

    @Parameters(index = "0", paramLabel = "HOST:PORT", converter = HostPort.Converter.class,
            description = "Where a 'hurray recv' listens.")
    HostPort target;

    @Parameters(index = "1", paramLabel = "FILE", description = "HRRYFILE or any importable file.")
    Path file;

    @Option(names = "--from", paramLabel = "FORMAT", converter = FormatConverter.class,
            completionCandidates = FormatNames.class, description = "Input format: ${COMPLETION-CANDIDATES}.")
    Format from;

    @Option(names = "--connect-timeout", paramLabel = "SECONDS", defaultValue = "10",
            description = "Give up connecting after this long (default: ${DEFAULT-VALUE}).")
    int connectTimeout;

    @Override
    public Integer call() throws CliException {
        Inputs.format(file, from);
        throw CliException.notAvailable("sending a Hurray stream");
    }
}
