package dev.hurray.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import dev.hurray.cli.foreign.ForeignModel;
import dev.hurray.cli.foreign.ForeignTensor;
import dev.hurray.cli.foreign.Format;
import dev.hurray.cli.foreign.Json;
import dev.hurray.cli.foreign.Quantization;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code hurray inspect FILE}: one row per tensor (name, dtype, shape, layout, quantization,
 * bytes, offset), or the same as JSON with {@code --json}.
 *
 * <p>JSON shape: {@code {"file", "format", "tensor_count", "total_bytes", "metadata": {…},
 * "tensors": [{"name", "dtype", "shape": […], "layout", "quantization": null |
 * {"kind": "affine", "scale", "bias", "dequantized"} | {"kind": "cast", "dequantized"},
 * "bytes", "offset": N | null}]}}. {@code dtype} is the stored type; {@code offset} is the
 * payload's byte offset in the file (for tfjs: in its group's concatenated shards), null when
 * it has none (npz entries, byte-swapped npy data).
 */
@Command(name = "inspect", description = "List the tensors of a file: name, dtype, shape, layout, quantization, bytes, offset.")
final class InspectCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    HurrayCommand parent;

    @Mixin
    CommonOptions common;

    @Parameters(index = "0", paramLabel = "FILE",
            description = "safetensors, .npy, .npz, tfjs model.json / *weights_manifest.json; '-' reads a Hurray stream from stdin.")
    String file;

    @Option(names = "--json", description = "Machine-readable output.")
    boolean json;

    @Option(names = "--from", paramLabel = "FORMAT", converter = FormatConverter.class,
            description = "Input format, when the content and name do not tell: ${COMPLETION-CANDIDATES}.",
            completionCandidates = FormatNames.class)
    Format from;

    @Override
    public Integer call() throws CliException {
        if (file.equals("-")) {
            throw CliException.notAvailable("reading a Hurray stream from stdin");
        }
        Path in = Path.of(file);
        Format format = Inputs.format(in, from);
        try (ForeignModel model = Inputs.readForeign(in, format, false, null)) {
            PrintWriter out = spec.commandLine().getOut();
            if (json) {
                printJson(out, in, format, model);
            } else {
                printTable(out, in, format, model);
            }
            out.flush();
        }
        return ExitCode.OK;
    }

    static String quantization(ForeignTensor t) {
        return t.quantization().map(Quantization::describe).orElse("-");
    }

    private static void printTable(PrintWriter out, Path in, Format format, ForeignModel model) {
        out.println(in + ": " + format + ", " + Units.count(model.tensors().size(), "tensor") + ", " + Units.bytes(model.totalBytes())
                + " (" + model.totalBytes() + " bytes)");
        for (Map.Entry<String, String> e : model.metadata().entrySet()) {
            out.println("  " + e.getKey() + " = " + Errors.oneLine(e.getValue()));
        }
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"NAME", "DTYPE", "SHAPE", "LAYOUT", "QUANTIZATION", "BYTES", "OFFSET"});
        for (ForeignTensor t : model.tensors()) {
            rows.add(new String[] {t.name(), t.dtype().typeName(), t.shapeString(), t.layout().label(), quantization(t),
                    Long.toString(t.byteSize()), t.sourceOffset() < 0 ? "-" : Long.toString(t.sourceOffset())});
        }
        Table.print(out, rows, new boolean[] {false, false, false, false, false, true, true});
    }

    private static void printJson(PrintWriter out, Path in, Format format, ForeignModel model) throws CliException {
        try (JsonGenerator g = Json.factory().createGenerator(out)) {
            g.setPrettyPrinter(new DefaultPrettyPrinter());
            g.writeStartObject();
            g.writeStringField("file", in.toString());
            g.writeStringField("format", format.id());
            g.writeNumberField("tensor_count", model.tensors().size());
            g.writeNumberField("total_bytes", model.totalBytes());
            g.writeObjectFieldStart("metadata");
            for (Map.Entry<String, String> e : model.metadata().entrySet()) {
                g.writeStringField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
            g.writeArrayFieldStart("tensors");
            for (ForeignTensor t : model.tensors()) {
                g.writeStartObject();
                g.writeStringField("name", t.name());
                g.writeStringField("dtype", t.dtype().typeName());
                g.writeArrayFieldStart("shape");
                for (long d : t.shape()) {
                    g.writeNumber(d);
                }
                g.writeEndArray();
                g.writeStringField("layout", t.layout().label());
                Quantization q = t.quantization().orElse(null);
                if (q == null) {
                    g.writeNullField("quantization");
                } else {
                    g.writeObjectFieldStart("quantization");
                    if (q instanceof Quantization.Affine a) {
                        g.writeStringField("kind", "affine");
                        g.writeNumberField("scale", a.scale());
                        g.writeNumberField("bias", a.bias());
                    } else {
                        g.writeStringField("kind", "cast");
                    }
                    g.writeStringField("dequantized", q.dequantized().typeName());
                    g.writeEndObject();
                }
                g.writeNumberField("bytes", t.byteSize());
                if (t.sourceOffset() < 0) {
                    g.writeNullField("offset");
                } else {
                    g.writeNumberField("offset", t.sourceOffset());
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        } catch (IOException e) {
            throw new CliException(ExitCode.IO_ERROR, "writing output failed: " + Errors.describe(e), e);
        }
        out.println();
    }
}
