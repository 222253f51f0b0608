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
        "FILE is any readable format (HRRYFILE, stream, safetensors, npy, npz, GGUF, tfjs)."})
final class SendCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    HurrayCommand parent;

    @Mixin
    CommonOptions common;

    @Parameters(index = "0", paramLabel = "HOST:PORT|kafka://HOST:PORT/TOPIC",
            description = "Where a 'hurray recv' listens, or a Kafka topic (one record per tensor).")
    String to;

    /** {@link #to} as HOST:PORT (not kafka://). */
    HostPort target;

    @Mixin
    KafkaTransport.Options kafka;

    @Parameters(index = "1", paramLabel = "FILE", description = "File whose tensors to send.")
    Path file;

    @Mixin
    SharedOptions.From input;

    @Mixin
    SharedOptions.Dequantize dequantizing;

    @Option(names = "--connect-timeout", paramLabel = "SECONDS", defaultValue = "10",
            description = "Give up connecting after this long; a refused connection (nothing listening yet) is"
                    + " tried again until then (default: ${DEFAULT-VALUE}; 0: one try, no time limit).")
    int connectTimeout;

    @Override
    public Integer call() throws CliException {
        if (connectTimeout < 0) {
            throw new CliException(ExitCode.USAGE, "--connect-timeout must not be negative");
        }
        if (KafkaTransport.isKafka(to)) {
            KafkaTransport.Target t = KafkaTransport.parse(to);
            return sendToKafka(t, Inputs.format(file, input.format));
        }
        try {
            target = HostPort.parse(to);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCode.USAGE, "HOST:PORT: " + e.getMessage());
        }
        Format format = Inputs.format(file, input.format);
        PrintWriter err = spec.commandLine().getErr();
        boolean terminal = parent != null && parent.terminal();
        try (Source src = Inputs.open(file, format, dequantizing.dequantize, null)) {
            SocketChannel ch = connect();
            long t0 = System.nanoTime();
            Pipeline.Stats stats;
            try (StreamSink sink = StreamSink.toChannel(ch);
                 Progress p = Progress.start(err, "sending", src.totalBytes(), common.quiet, terminal)) {
                stats = Pipeline.copy(src, sink, dequantizing.dequantize, p);
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

    private int sendToKafka(KafkaTransport.Target t, Format format) throws CliException {
        PrintWriter err = spec.commandLine().getErr();
        boolean terminal = parent != null && parent.terminal();
        try (Source src = Inputs.open(file, format, dequantizing.dequantize, null)) {
            long t0 = System.nanoTime();
            Pipeline.Stats stats;
            try (KafkaTransport.KafkaSink sink = new KafkaTransport.KafkaSink(t, kafka, KafkaTransport.seconds(connectTimeout));
                 Progress p = Progress.start(err, "sending", src.totalBytes(), common.quiet, terminal)) {
                stats = Pipeline.copy(src, sink, dequantizing.dequantize, p);
            }
            long dt = System.nanoTime() - t0;
            if (!common.quiet) {
                spec.commandLine().getOut().println("sent " + Units.count(stats.tensors(), "tensor") + " ("
                        + Units.bytes(stats.bytes()) + ") from " + file + " [" + format + "] to " + t + " in "
                        + Units.seconds(dt) + ", " + Units.rate(stats.bytes(), dt));
            }
        } catch (IOException e) {
            throw Errors.reading(e, file, t);
        }
        return ExitCode.OK;
    }

    private SocketChannel connect() throws CliException {
        InetSocketAddress addr = new InetSocketAddress(target.host(), target.port());
        if (addr.isUnresolved()) {
            throw new CliException(ExitCode.IO_ERROR, "cannot connect to " + target + ": unknown host " + target.host());
        }
        // A refused connection (nothing listening yet: a receiver still starting) is tried again
        // every 100 ms until the timeout; other failures end at once.
        long deadline = System.nanoTime() + connectTimeout * 1_000_000_000L;
        while (true) {
            SocketChannel ch = null;
            try {
                ch = SocketChannel.open();
                long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                ch.socket().connect(addr, connectTimeout == 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, left));
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
                if (e instanceof java.net.ConnectException && System.nanoTime() + 100_000_000L < deadline) {
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        throw new CliException(ExitCode.IO_ERROR, "cannot connect to " + target + ": interrupted", ie);
                    }
                    continue;
                }
                String waited = e instanceof java.net.ConnectException && connectTimeout > 0
                        ? " (tried for " + connectTimeout + " s)" : "";
                throw new CliException(ExitCode.IO_ERROR, "cannot connect to " + target + ": " + Errors.describe(e) + waited, e);
            }
        }
    }
}
