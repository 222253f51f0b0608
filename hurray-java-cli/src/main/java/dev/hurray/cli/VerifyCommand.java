package dev.hurray.cli;

import dev.hurray.cli.foreign.ForeignModel;
import dev.hurray.cli.foreign.ForeignTensor;
import dev.hurray.cli.foreign.Format;
import dev.hurray.cli.foreign.Payloads;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code hurray verify FILE}: checks a file's structure and reads every payload byte.
 * For the foreign formats this is the full validation their readers apply (offsets, sizes,
 * dtypes; npz CRCs). HRRYFILE and stream checksums: not available in this build.
 */
@Command(name = "verify", description = {"Check a file's structure and checksums and read every payload byte.",
        "Exit 4 when the file is invalid."})
final class VerifyCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    CommonOptions common;

    @Parameters(index = "0", paramLabel = "FILE", description = "File to check.")
    Path file;

    @Option(names = "--from", paramLabel = "FORMAT", converter = FormatConverter.class,
            completionCandidates = FormatNames.class, description = "Input format: ${COMPLETION-CANDIDATES}.")
    Format from;

    @Override
    public Integer call() throws CliException {
        Format format = Inputs.format(file, from);
        ForeignModel model;
        try {
            model = Inputs.readForeign(file, format, false, null);
        } catch (CliException e) {
            if (e.exitCode() == ExitCode.BAD_INPUT) {
                throw new CliException(ExitCode.VERIFY_FAILED, "verification failed: " + e.getMessage(), e);
            }
            throw e;
        }
        try (model) {
            for (ForeignTensor t : model.tensors()) {
                Payloads.crc32(t.data()); // touches every byte: a short or unreadable mapping fails here
            }
            if (!common.quiet) {
                spec.commandLine().getOut().println(file + ": ok (" + format + ", " + Units.count(model.tensors().size(), "tensor") + ", " + model.totalBytes() + " bytes)");
            }
        }
        return ExitCode.OK;
    }
}
