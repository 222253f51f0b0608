package dev.hurray.cli;

import dev.hurray.formats.Format;
import dev.hurray.cli.io.Pipeline;
import dev.hurray.cli.io.Source;
import dev.hurray.cli.io.StreamSink;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
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
 * {@code hurray send HOST:PORT FILE}: connects to a {@code hurray recv} (or any Hurray stream
 * reader) and writes every tensor of FILE, in file order, as one Hurray stream with payload
 * checksums, preceded by the file's metadata (see {@link dev.hurray.cli.io.StreamMetadata}).
 * Payloads go from the file's memory straight to the socket channel.
 */
@Command(name = "send", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = {"Send a file's tensors as a Hurray stream over TCP.",
        "FILE is any readable format (HRRYFILE, stream, safetensors, npy, npz, tfjs)."})
final class SendCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    HurrayCommand parent;

    @Mixin
    CommonOptions common;

    @Parameters(index = "0", paramLabel = "HOST:PORT", converter = HostPort.Converter.class,
            description = "Where a 'hurray recv' listens.")
    HostPort target;

    @Parameters(index = "1", paramLabel = "FILE", description = "File whose tensors to send.")
    Path file;

    @Option(names = "--from", paramLabel = "FORMAT", converter = FormatConverter.class,
            completionCandidates = FormatNames.class, description = "Input format: ${COMPLETION-CANDIDATES}.")
    Format from;

    @Option(names = "--dequantize", description = "Send the values of quantized tensors instead of their quantization.")
    boolean dequantize;

    @Option(names = "--connect-timeout", paramLabel = "SECONDS", defaultValue = "10",
            description = "Give up connecting after this long (default: ${DEFAULT-VALUE}).")
    int connectTimeout;

    @Override
    public Integer call() throws CliException {
        if (connectTimeout < 0) {
            throw new CliException(ExitCode.USAGE, "--connect-timeout must not be negative");
        }
        Format format = Inputs.format(file, from);
        PrintWriter err = spec.commandLine().getErr();
        boolean terminal = parent != null && parent.terminal();
        try (Source src = Inputs.open(file, format, dequantize, null)) {
            SocketChannel ch = connect();
            long t0 = System.nanoTime();
            Pipeline.Stats stats;
            try (StreamSink sink = StreamSink.toChannel(ch);
                 Progress p = Progress.start(err, "sending", src.totalBytes(), common.quiet, terminal)) {
                stats = Pipeline.copy(src, sink, dequantize, p);
            } catch (IOException e) {
                throw Errors.reading(e, file, target);
            }
            long dt = System.nanoTime() - t0;
            if (!common.quiet) {
                spec.commandLine().getOut().println("sent " + Units.count(stats.tensors(), "tensor") + " ("
                        + Units.bytes(stats.bytes()) + ") from " + file + " [" + format + "] to " + target + " in "
                        + Units.seconds(dt) + ", " + Units.rate(stats.bytes(), dt));
            }
        } catch (IOException e) {
            throw Errors.reading(e, file, target);
        }
        return ExitCode.OK;
    }

    private SocketChannel connect() throws CliException {
        InetSocketAddress addr = new InetSocketAddress(target.host(), target.port());
        if (addr.isUnresolved()) {
            throw new CliException(ExitCode.IO_ERROR, "cannot connect to " + target + ": unknown host " + target.host());
        }
        SocketChannel ch = null;
        try {
            ch = SocketChannel.open();
            ch.socket().connect(addr, (int) Math.min(Integer.MAX_VALUE, connectTimeout * 1000L));
            ch.socket().setTcpNoDelay(true);
            return ch;
        } catch (IOException e) {
            if (ch != null) {
                try {
                    ch.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw new CliException(ExitCode.IO_ERROR, "cannot connect to " + target + ": " + Errors.describe(e), e);
        }
    }
}
