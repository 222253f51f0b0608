package dev.hurray.cli;

import dev.hurray.Reader;
import dev.hurray.cli.io.ReadLimits;
import dev.hurray.formats.Format;
import dev.hurray.cli.io.Pipeline;
import dev.hurray.cli.io.Sink;
import dev.hurray.cli.io.Sinks;
import dev.hurray.cli.io.StreamSource;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.channels.ServerSocketChannel;
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
 * {@code hurray recv --listen PORT --out FILE}: listens on {@code --bind} (127.0.0.1 by
 * default), accepts one connection, reads one Hurray stream from it and writes its tensors to
 * FILE in the format FILE's extension (or {@code --to}) names. The output is created as a
 * temporary file before listening (so an unwritable output fails at once) and renamed into place
 * only after the stream's end-of-stream marker arrived intact: a sender that dies half way
 * leaves no output. A leading file-metadata item becomes the file's metadata.
 *
 * <p>Two time limits: {@code --timeout} bounds the wait for the connection, and
 * {@code --idle-timeout} (default 60 s) bounds each wait for the next byte once connected: a peer
 * that connects and sends nothing, or stalls half way, fails the command with an I/O error
 * (exit 3) after that many seconds of silence, and no output is left. With an idle timeout the
 * socket is read through its input stream (whose reads honour {@code SO_TIMEOUT}), one 64 KiB
 * chunk at a time; {@code --idle-timeout 0} waits forever and reads the channel directly.
 */
@Command(name = "recv", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = {"Listen for one Hurray stream over TCP and write what arrives to a file.",
        "Prints 'listening on ADDRESS:PORT' on stderr once it listens (with --listen 0, the port picked)."})
final class RecvCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    HurrayCommand parent;

    @Mixin
    CommonOptions common;

    @Parameters(index = "0", arity = "0..1", paramLabel = "kafka://HOST:PORT/TOPIC",
            description = "Read one 'hurray send' transfer from this Kafka topic instead of listening.")
    String from;

    @Mixin
    KafkaTransport.Options kafka;

    @Option(names = "--listen", paramLabel = "PORT",
            description = "TCP port to listen on (0 picks a free one); required unless reading from Kafka.")
    Integer port;

    @Option(names = "--bind", paramLabel = "ADDRESS", defaultValue = "127.0.0.1",
            description = "Address to listen on (default: ${DEFAULT-VALUE}; 0.0.0.0 for every interface).")
    String bind;

    @Option(names = "--out", paramLabel = "FILE", required = true, description = "Where to write what arrives.")
    Path out;

    @Option(names = "--to", paramLabel = "FORMAT", converter = FormatConverter.class,
            completionCandidates = FormatNames.class, description = "Output format (default: from the extension).")
    Format to;

    @Mixin
    SharedOptions.Dequantize dequantizing;

    @Mixin
    SharedOptions.Compress npz;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "0",
            description = "Give up when no connection arrives within this long (default: 0, wait forever).")
    int timeout;

    @Option(names = "--idle-timeout", paramLabel = "SECONDS", defaultValue = "60",
            description = {"Give up when a connected peer sends nothing for this long, at the start or half way "
                    + "(default: ${DEFAULT-VALUE}; 0 waits forever)."})
    int idleTimeout;

    @Override
    public Integer call() throws CliException {
        if (from != null && !KafkaTransport.isKafka(from)) {
            throw new CliException(ExitCode.USAGE, "expected kafka://HOST:PORT/TOPIC, got '" + from + "'");
        }
        if (from == null && port == null) {
            throw new CliException(ExitCode.USAGE, "give --listen PORT, or a kafka://HOST:PORT/TOPIC to read from");
        }
        if (from != null && port != null) {
            throw new CliException(ExitCode.USAGE, "--listen and kafka:// exclude each other");
        }
        if (from == null && (port < 0 || port > 65535)) {
            throw new CliException(ExitCode.USAGE, "--listen: port " + port + " is not in 0-65535");
        }
        if (timeout < 0) {
            throw new CliException(ExitCode.USAGE, "--timeout must not be negative");
        }
        if (idleTimeout < 0) {
            throw new CliException(ExitCode.USAGE, "--idle-timeout must not be negative");
        }
        Format format = to != null ? to : Format.byName(out);
        if (format == null) {
            throw new CliException(ExitCode.USAGE, out + ": cannot tell the output format from its name; pass --to");
        }
        if (!format.writable()) {
            throw new CliException(ExitCode.USAGE, format + " can be read but not written");
        }
        InetAddress address;
        try {
            address = InetAddress.getByName(bind);
        } catch (UnknownHostException e) {
            throw new CliException(ExitCode.USAGE, "--bind: unknown address " + bind);
        }
        PrintWriter err = spec.commandLine().getErr();
        boolean terminal = parent != null && parent.terminal();
        if (from != null) {
            return recvFromKafka(format, err, terminal);
        }
        Sink sink;
        try {
            sink = Sinks.file(out, format, npz.compress, dequantizing.dequantize, null, this::warn);
        } catch (IOException e) {
            throw Errors.writing(e, out);
        }
        try (sink; ServerSocketChannel server = ServerSocketChannel.open()) {
            try {
                server.bind(new InetSocketAddress(address, port), 1);
            } catch (IOException e) {
                throw new CliException(ExitCode.IO_ERROR, "cannot listen on " + bind + ":" + port + ": "
                        + Errors.describe(e), e);
            }
            InetSocketAddress local = (InetSocketAddress) server.getLocalAddress();
            if (!common.quiet) {
                err.println("hurray: listening on " + hostPort(local));
                err.flush();
            }
            Pipeline.Stats stats;
            String peer;
            long t0;
            try (SocketChannel conn = accept(server)) {
                peer = hostPort((InetSocketAddress) conn.getRemoteAddress());
                t0 = System.nanoTime();
                try (StreamSource src = new StreamSource(reader(conn));
                     Progress p = Progress.start(err, "receiving", 0, common.quiet, terminal)) {
                    stats = Pipeline.copy(src, sink, dequantizing.dequantize, p);
                } catch (IOException e) {
                    if (idleTimeout > 0 && timedOut(e)) {
                        throw new CliException(ExitCode.IO_ERROR, "reading failed: stream from " + peer
                                + ": nothing arrived for " + idleTimeout + " s (--idle-timeout)", e);
                    }
                    throw Errors.reading(e, "stream from " + peer, out);
                }
            }
            long dt = System.nanoTime() - t0;
            if (!common.quiet) {
                spec.commandLine().getOut().println("received " + Units.count(stats.tensors(), "tensor") + " ("
                        + Units.bytes(stats.bytes()) + ") from " + peer + " in " + Units.seconds(dt) + ", "
                        + Units.rate(stats.bytes(), dt) + " -> " + out + " [" + format + "]");
            }
        } catch (IOException e) {
            throw Errors.writing(e, out);
        }
        return ExitCode.OK;
    }

    private int recvFromKafka(Format format, PrintWriter err, boolean terminal) throws CliException {
        KafkaTransport.Target t = KafkaTransport.parse(from);
        Sink sink;
        try {
            sink = Sinks.file(out, format, npz.compress, dequantizing.dequantize, null, this::warn);
        } catch (IOException e) {
            throw Errors.writing(e, out);
        }
        try (sink) {
            long t0 = System.nanoTime();
            Pipeline.Stats stats;
            try (KafkaTransport.KafkaSource src = new KafkaTransport.KafkaSource(t, kafka, KafkaTransport.seconds(idleTimeout));
                 Progress p = Progress.start(err, "receiving", 0, common.quiet, terminal)) {
                stats = Pipeline.copy(src, sink, dequantizing.dequantize, p);
            } catch (IOException e) {
                throw Errors.reading(e, t, out);
            }
            long dt = System.nanoTime() - t0;
            if (!common.quiet) {
                spec.commandLine().getOut().println("received " + Units.count(stats.tensors(), "tensor") + " ("
                        + Units.bytes(stats.bytes()) + ") from " + t + " in " + Units.seconds(dt) + ", "
                        + Units.rate(stats.bytes(), dt) + " -> " + out + " [" + format + "]");
            }
        } catch (IOException e) {
            throw Errors.writing(e, out);
        }
        return ExitCode.OK;
    }

    private SocketChannel accept(ServerSocketChannel server) throws CliException {
        try {
            if (timeout == 0) {
                return server.accept();
            }
            server.socket().setSoTimeout((int) Math.min(Integer.MAX_VALUE, timeout * 1000L));
            return server.socket().accept().getChannel();
        } catch (SocketTimeoutException e) {
            throw new CliException(ExitCode.IO_ERROR, "no connection within " + timeout + " s", e);
        } catch (IOException e) {
            throw new CliException(ExitCode.IO_ERROR, "accepting a connection failed: " + Errors.describe(e), e);
        }
    }

    /**
     * The connection's reader: with an idle timeout, through the socket's input stream, whose
     * blocking reads throw {@link SocketTimeoutException} after {@code SO_TIMEOUT} (a blocking
     * {@link SocketChannel}'s own reads ignore it); without, straight from the channel.
     */
    private Reader reader(SocketChannel conn) throws IOException {
        if (idleTimeout == 0) {
            return Reader.of(conn, ReadLimits.streams());
        }
        conn.socket().setSoTimeout((int) Math.min(Integer.MAX_VALUE, idleTimeout * 1000L));
        return Reader.of(conn.socket().getInputStream(), ReadLimits.streams());
    }

    /** Whether {@code e} or one of its causes is a read timeout. */
    private static boolean timedOut(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SocketTimeoutException) {
                return true;
            }
        }
        return false;
    }

    static String hostPort(InetSocketAddress a) {
        String host = a.getAddress() == null ? a.getHostString() : a.getAddress().getHostAddress();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    private void warn(String message) {
        if (!common.quiet) {
            spec.commandLine().getErr().println("hurray: warning: " + Errors.oneLine(message));
        }
    }
}
