package dev.hurray.cli;

import dev.hurray.cli.foreign.ForeignFormats;
import dev.hurray.cli.foreign.ForeignModel;
import dev.hurray.cli.foreign.ForeignTensor;
import dev.hurray.cli.foreign.Format;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code hurray convert IN OUT}: formats from content/extension or {@code --from}/{@code --to}.
 * The output is written to a temporary file next to it and renamed into place, so it is never
 * seen half-written. Values are moved byte for byte; nothing is converted unless
 * {@code --dequantize} asks for it.
 */
@Command(name = "convert", description = {
        "Convert tensors between formats, bit-exact.",
        "Now: safetensors, npy, npz and tfjs weights (input only) to safetensors, npy or npz.",
        "HRRYFILE (.hrry) and stream files (.hrrys): not available in this build."})
final class ConvertCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    HurrayCommand parent;

    @Mixin
    CommonOptions common;

    @Parameters(index = "0", paramLabel = "IN", description = "Input file.")
    Path in;

    @Parameters(index = "1", paramLabel = "OUT", description = "Output file (replaced atomically if it exists).")
    Path out;

    @Option(names = "--from", paramLabel = "FORMAT", converter = FormatConverter.class,
            completionCandidates = FormatNames.class, description = "Input format: ${COMPLETION-CANDIDATES}.")
    Format from;

    @Option(names = "--to", paramLabel = "FORMAT", converter = FormatConverter.class,
            completionCandidates = FormatNames.class, description = "Output format (default: from OUT's extension).")
    Format to;

    @Option(names = "--dequantize",
            description = "tfjs: compute float32/int32 values (as tfjs does) instead of keeping the quantization.")
    boolean dequantize;

    @Option(names = "--compress", description = "npz: deflate entries (like np.savez_compressed).")
    boolean compress;

    @Override
    public Integer call() throws CliException {
        Format inFormat = Inputs.format(in, from);
        try {
            if (Files.exists(out) && Files.isSameFile(in, out)) {
                throw new CliException(ExitCode.USAGE, "input and output are the same file: " + out);
            }
        } catch (IOException e) {
            throw Errors.reading(e);
        }
        Format outFormat = to != null ? to : Format.byName(out);
        if (outFormat == null) {
            throw new CliException(ExitCode.USAGE, out + ": cannot tell the output format from its name; pass --to");
        }
        if (!outFormat.isForeign() || !inFormat.isForeign()) {
            throw CliException.notAvailable("converting " + inFormat + " to " + outFormat);
        }
        if (!outFormat.writable()) {
            throw new CliException(ExitCode.USAGE, outFormat + " can be read but not written");
        }
        PrintWriter err = spec.commandLine().getErr();
        boolean terminal = parent != null && parent.terminal();
        try (ForeignModel model = read(inFormat, err, terminal)) {
            check(model, outFormat);
            if (!model.metadata().isEmpty() && outFormat != Format.SAFETENSORS && !common.quiet) {
                err.println("hurray: warning: " + outFormat + " cannot hold file metadata; "
                        + model.metadata().size() + " entries dropped");
            }
            try (Progress p = Progress.start(err, "writing", model.totalBytes(), common.quiet, terminal)) {
                ForeignFormats.write(model, out, outFormat, compress, p);
            } catch (IOException e) {
                throw Errors.writing(e, out);
            }
            if (!common.quiet) {
                spec.commandLine().getOut().println("converted " + Units.count(model.tensors().size(), "tensor") + " ("
                        + Units.bytes(model.totalBytes()) + ") " + in + " [" + inFormat + "] -> " + out + " ["
                        + outFormat + "]");
            }
        }
        return ExitCode.OK;
    }

    private ForeignModel read(Format inFormat, PrintWriter err, boolean terminal) throws CliException {
        long size;
        try {
            size = Files.size(in);
        } catch (IOException e) {
            throw Errors.reading(e);
        }
        // For most formats the payload is about the file's size; the bar is only a guide.
        try (Progress p = Progress.start(err, "reading", inFormat == Format.TFJS ? 0 : size, common.quiet, terminal)) {
            return Inputs.readForeign(in, inFormat, dequantize, p);
        }
    }

    /** Refuses what the target cannot hold instead of silently changing it. */
    private void check(ForeignModel model, Format outFormat) throws CliException {
        for (ForeignTensor t : model.tensors()) {
            if (t.quantization().isPresent()) {
                throw new CliException(ExitCode.BAD_INPUT, "tensor '" + t.name() + "' is quantized ("
                        + t.quantization().get().describe() + "); " + outFormat
                        + " cannot record quantization: pass --dequantize to compute the values"
                        + " (HRRYFILE keeps it, when available)");
            }
        }
        if (outFormat == Format.NPY && model.tensors().size() != 1) {
            throw new CliException(ExitCode.BAD_INPUT, "npy holds exactly one array; " + in + " has "
                    + model.tensors().size() + " tensors (write .npz instead)");
        }
    }
}
