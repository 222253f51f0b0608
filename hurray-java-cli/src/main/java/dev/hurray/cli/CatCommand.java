package dev.hurray.cli;

import dev.hurray.Reader;
import dev.hurray.cli.io.ReadLimits;
import dev.hurray.TensorDescriptor;
import dev.hurray.cli.io.Entry;
import dev.hurray.cli.io.StreamSource;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code hurray cat}: reads a Hurray stream on stdin (e.g. {@code hurray cat < model.hrrys}) and
 * prints one line per tensor as it arrives, then a total. Payloads are read (and their
 * checksums, when the stream has them, checked) and discarded.
 */
@Command(name = "cat", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = {"Read a Hurray stream on stdin and print one line per tensor, then a total.",
        "Example: hurray cat < model.hrrys"})
final class CatCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    HurrayCommand parent;

    @Mixin
    CommonOptions common;

    @Override
    public Integer call() throws CliException {
        PrintWriter out = spec.commandLine().getOut();
        long[] totals = new long[2];
        long t0 = System.nanoTime();
        try (StreamSource src = new StreamSource(Reader.of(parent.stdin(), ReadLimits.streams()))) {
            for (Map.Entry<String, byte[]> e : src.metadata().entrySet()) {
                out.println("metadata " + Errors.printable(e.getKey()) + " = " + Errors.oneLine(InspectCommand.text(e.getValue())));
            }
            src.forEach(item -> {
                TensorDescriptor d = item.descriptor();
                out.println(Errors.printable(item.name()) + "  " + d.elementType() + d.shape() + "  " + d.layout() + "  "
                        + Entry.describe(d.quantization().orElse(null)) + "  " + item.bytes() + " B");
                out.flush();
                totals[0]++;
                totals[1] += item.bytes();
            });
        } catch (IOException e) {
            out.flush();
            throw Errors.reading(e, "stdin", null);
        }
        long dt = System.nanoTime() - t0;
        out.println("total: " + Units.count(totals[0], "tensor") + ", " + Units.bytes(totals[1]) + " (" + totals[1]
                + " bytes) in " + Units.seconds(dt) + ", " + Units.rate(totals[1], dt));
        return ExitCode.OK;
    }
}
