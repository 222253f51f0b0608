package dev.hurray.cli;

import dev.hurray.cli.io.Densify;
import dev.hurray.cli.io.Dequantize;
import dev.hurray.cli.io.Pipeline;
import dev.hurray.cli.io.Quantize;
import dev.hurray.cli.io.Sink;
import dev.hurray.cli.io.Sinks;
import dev.hurray.cli.io.Source;
import dev.hurray.formats.Format;
import dev.hurray.formats.Safetensors;
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
@Command(name = "convert", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = {
        "Convert tensors between formats, bit-exact.",
        "Reads safetensors, npy, npz, GGUF, tfjs weights, HRRYFILE (.hrry) and stream",
        "files (.hrrys); writes all of them but tfjs. Quantized tensors keep their quantization",
        "in HRRYFILE and streams (and MX in safetensors, Q8_0/Q4_0 in GGUF);",
        "other targets need --dequantize."})
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

    @Mixin
    SharedOptions.From input;

    @Option(names = "--to", paramLabel = "FORMAT", converter = FormatConverter.class,
            completionCandidates = FormatNames.class, description = "Output format (default: from OUT's extension).")
    Format to;

    @Mixin
    SharedOptions.Dequantize dequantizing;

    @Option(names = "--safetensors-scale-suffix", paramLabel = "SUFFIX",
            description = "safetensors: the scales of an MX tensor W are the F8_E8M0 tensor W+SUFFIX (default: "
                    + Safetensors.DEFAULT_SCALE_SUFFIX + "), paired on read and split on write; 'none' turns pairing off.")
    String scaleSuffix;

    @Option(names = "--densify",
            description = "Write sparse tensors (scipy.sparse npz, HRRYFILE, streams) dense and block-paged ones "
                    + "gathered, instead of keeping their layout.")
    boolean densify;

    @Option(names = "--max-dense-bytes", paramLabel = "BYTES",
            description = "--densify: the largest dense tensor made, in bytes (default: ${DEFAULT-VALUE}, 1 GiB); "
                    + "a larger one is refused before anything is allocated.")
    long maxDenseBytes = dev.hurray.Tensor.DEFAULT_MAX_DENSE_BYTES;

    @Mixin
    SharedOptions.Compress npz;

    @Option(names = "--quantize", paramLabel = "KIND[:block=N][:axis=K]",
            description = {"Quantize float tensors in the native core: nf4, mxfp4, mxfp6_e2m3, mxfp6_e3m2, mxfp8_e4m3,",
                    "mxfp8_e5m2, mxint8, nvfp4, q8_0, q4_0, int8-per-channel. Defaults: MX blocks of 32 and",
                    "NVFP4 blocks of 16 along the last axis, NF4 blocks of 64 row-major elements (float32 absmax),",
                    "GGUF blocks of 32, int8 per-channel along axis 0. Other tensors, and tensors whose shape",
                    "the blocks do not fit, are copied unchanged. Outputs: HRRYFILE, streams, and safetensors for",
                    "MX kinds (values + E8M0 scales, see --safetensors-scale-suffix); other formats refuse",
                    "quantized tensors."})
    String quantize;

    @Override
    public Integer call() throws CliException {
        Format inFormat = Inputs.format(in, input.format);
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
        if (!outFormat.writable()) {
            throw new CliException(ExitCode.USAGE, outFormat + " can be read but not written");
        }
        if (maxDenseBytes < 0) {
            throw new CliException(ExitCode.USAGE, "--max-dense-bytes: " + maxDenseBytes + " is negative");
        }
        if (!densify && SparseConvert.applies(in, inFormat, outFormat)) {
            try {
                SparseConvert.run(in, inFormat, out, outFormat);
            } catch (IOException e) {
                throw Errors.reading(e, in, out);
            }
            if (!common.quiet) {
                spec.commandLine().getOut().println("converted 1 sparse tensor " + in + " [" + inFormat + "] -> " + out
                        + " [" + outFormat + "]");
            }
            return ExitCode.OK;
        }
        Quantize.Spec q = null;
        if (quantize != null && dequantizing.dequantize) {
            // Quantizing after dequantizing would only write the quantized values dequantized
            // again (lossy floats) to a format that cannot hold quantization.
            throw new CliException(ExitCode.USAGE, "--quantize and --dequantize contradict each other: pass one");
        }
        if (quantize != null) {
            try {
                q = Quantize.parse(quantize);
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCode.USAGE, "--quantize: " + e.getMessage());
            }
        }
        Quantize.Spec qs = q;
        Safetensors.Options st = safetensorsOptions();
        PrintWriter err = spec.commandLine().getErr();
        boolean terminal = parent != null && parent.terminal();
        long t0 = System.nanoTime();
        Pipeline.Stats stats;
        try (Source src = open(inFormat, st)) {
            Sink sink;
            try {
                sink = Sinks.file(out, outFormat, npz.compress, dequantizing.dequantize, st, null, this::warn);
            } catch (IOException e) {
                throw Errors.writing(e, out);
            }
            Pipeline.Transform values = qs != null ? (item, scratch) -> Quantize.apply(item, scratch, qs)
                    : dequantizing.dequantize ? Dequantize::apply : (item, scratch) -> item;
            // The output is opened before the first tensor is read, so a target that cannot be
            // written is refused before any densify work.
            Pipeline.Transform dense = densify ? Densify.upTo(maxDenseBytes) : (item, scratch) -> item;
            try (sink; Progress p = Progress.start(err, "writing", src.totalBytes(), common.quiet, terminal)) {
                stats = Pipeline.copy(src, sink, (item, scratch) -> values.apply(dense.apply(item, scratch), scratch), p);
            }
        } catch (IOException e) {
            throw Errors.reading(e, in, out);
        }
        if (!common.quiet) {
            spec.commandLine().getOut().println("converted " + Units.count(stats.tensors(), "tensor") + " ("
                    + Units.bytes(stats.bytes()) + ") " + in + " [" + inFormat + "] -> " + out + " [" + outFormat + "] in "
                    + Units.seconds(System.nanoTime() - t0));
        }
        return ExitCode.OK;
    }

    private Safetensors.Options safetensorsOptions() throws CliException {
        if (scaleSuffix == null) {
            return Safetensors.Options.defaults();
        }
        if (scaleSuffix.equals("none")) {
            return Safetensors.Options.defaults().withoutPairing();
        }
        if (scaleSuffix.isEmpty()) {
            throw new CliException(ExitCode.USAGE, "--safetensors-scale-suffix: empty (use 'none' to turn pairing off)");
        }
        return Safetensors.Options.defaults().withScaleSuffix(scaleSuffix);
    }

    private void warn(String message) {
        if (!common.quiet) {
            spec.commandLine().getErr().println("hurray: warning: " + Errors.oneLine(message));
        }
    }

    private Source open(Format inFormat, Safetensors.Options st) throws CliException {
        if (densify && inFormat == Format.NPZ && dev.hurray.formats.ScipySparse.isSparseNpz(in)) {
            return SparseConvert.source(in);
        }
        // Opening reads headers only: foreign payloads are read one tensor at a time as they are
        // written, so the "writing" bar is the whole progress.
        return Inputs.open(in, inFormat, dequantizing.dequantize, st, null);
    }
}
