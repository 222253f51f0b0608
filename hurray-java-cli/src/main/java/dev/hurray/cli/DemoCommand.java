package dev.hurray.cli;

import dev.hurray.FileEntry;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.Format;
import dev.hurray.cli.io.HrryFileSink;
import dev.hurray.cli.io.HrryFileSource;
import dev.hurray.cli.io.Pipeline;
import dev.hurray.cli.io.Source;
import dev.hurray.cli.io.Sources;
import dev.hurray.cli.io.StreamSink;
import dev.hurray.cli.io.StreamSource;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code hurray demo}: the whole path on real weights. For each model (by default the three
 * face-api models bundled in the jar): (1) extract its tfjs weights; (2) convert them to an
 * HRRYFILE, quantization kept; (3) stream that file over loopback TCP from this thread to a
 * receiver thread; (4) the receiver writes what arrives into a second HRRYFILE; (5) compare the
 * two: file metadata, and for every tensor its descriptor (encoded bytes) and every payload
 * byte. Prints a table; exit 0 only if every model came through bit-exact, else 4.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = {"Real weights through HRRYFILE and TCP, proven bit-exact.",
        "Converts the bundled face-api tfjs models to HRRYFILEs, streams each over",
        "loopback TCP to another thread, writes what arrives to a second HRRYFILE and",
        "compares the two: file metadata, every descriptor and every payload byte.",
        "Exit 0 only if they are identical."})
final class DemoCommand implements Callable<Integer> {
    /** How long the receiver waits for the sender, and the sender for the receiver. */
    private static final long TIMEOUT_SECONDS = 120;

    @Spec
    CommandSpec spec;

    @Mixin
    CommonOptions common;

    @Option(names = "--model", paramLabel = "NAME", split = ",",
            description = "Bundled model(s) to use (default: all; see --list).")
    List<String> models;

    @Option(names = "--dir", paramLabel = "DIR",
            description = "Use every *weights_manifest.json in DIR instead of the bundled models "
                    + "(e.g. the folder .ci/fetch-face-api.sh fills).")
    Path dir;

    @Option(names = "--keep", paramLabel = "DIR", description = "Write the files into DIR and keep them.")
    Path keep;

    @Option(names = "--list", description = "List the bundled models and exit.")
    boolean list;

    /** One model's run. */
    record Row(String model, long tensors, long quantized, long bytes, long fileSize, long convertNanos,
               long transferNanos, boolean bitExact, boolean identicalFiles, String mismatch) {
    }

    @Override
    public Integer call() throws CliException {
        PrintWriter out = spec.commandLine().getOut();
        if (list) {
            for (String name : BundledModels.NAMES) {
                out.println(name);
            }
            return ExitCode.OK;
        }
        List<String> names = models == null || models.isEmpty() ? BundledModels.NAMES : models;
        if (dir == null) {
            for (String m : names) {
                if (!BundledModels.NAMES.contains(m)) {
                    throw new CliException(ExitCode.USAGE, "no bundled model '" + m + "' (see --list)");
                }
            }
        } else if (models != null) {
            throw new CliException(ExitCode.USAGE, "--model and --dir exclude each other");
        }
        Path work;
        try {
            work = keep != null ? Files.createDirectories(keep) : Files.createTempDirectory("hurray-demo");
        } catch (IOException e) {
            throw Errors.writing(e, keep != null ? keep : "a temporary directory");
        }
        List<Row> rows = new ArrayList<>();
        try {
            List<Path> manifests = dir != null ? manifests(dir) : extract(names, work);
            if (!common.quiet) {
                out.println("hurray demo: tfjs weights -> HRRYFILE -> TCP 127.0.0.1 (thread to thread) -> HRRYFILE, "
                        + "compared bit for bit" + (keep != null ? "; files in " + work : ""));
                out.flush();
            }
            for (Path m : manifests) {
                rows.add(run(m, work));
            }
        } finally {
            if (keep == null) {
                deleteTree(work);
            }
        }
        boolean allExact = rows.stream().allMatch(Row::bitExact);
        if (!common.quiet) {
            print(out, rows, allExact);
        }
        if (!allExact) {
            for (Row r : rows) {
                if (!r.bitExact) {
                    spec.commandLine().getErr().println("hurray: error: " + r.model + ": the copies differ: " + r.mismatch);
                }
            }
            return ExitCode.VERIFY_FAILED;
        }
        return ExitCode.OK;
    }

    private static List<Path> extract(List<String> names, Path work) throws CliException {
        List<Path> l = new ArrayList<>();
        try {
            Path src = Files.createDirectories(work.resolve("tfjs"));
            for (String n : names) {
                l.add(BundledModels.extract(n, src));
            }
        } catch (IOException e) {
            throw Errors.writing(e, work);
        }
        return l;
    }

    private static List<Path> manifests(Path dir) throws CliException {
        if (!Files.isDirectory(dir)) {
            throw new CliException(ExitCode.BAD_INPUT, dir + ": not a directory");
        }
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> l = s.filter(p -> p.getFileName().toString().endsWith("weights_manifest.json")).sorted().toList();
            if (l.isEmpty()) {
                throw new CliException(ExitCode.BAD_INPUT, dir + ": no *weights_manifest.json files");
            }
            return l;
        } catch (IOException e) {
            throw Errors.reading(e, dir, null);
        }
    }

    private Row run(Path manifest, Path work) throws CliException {
        String model = manifest.getFileName().toString().replaceFirst("-?weights_manifest\\.json$", "");
        Path a = work.resolve(model + ".hrry");
        Path b = work.resolve(model + ".received.hrry");
        // (1)+(2): tfjs -> HRRYFILE, quantization kept.
        long t0 = System.nanoTime();
        try (Source tfjs = Inputs.open(manifest, Format.TFJS, false, null);
             HrryFileSink sink = HrryFileSink.toFile(a, keep != null)) {
            Pipeline.copy(withProvenance(tfjs, manifest, dir == null), sink, false, null);
        } catch (IOException e) {
            throw Errors.reading(e, manifest, a);
        }
        long convert = System.nanoTime() - t0;
        // (3)+(4): HRRYFILE -> loopback TCP -> HRRYFILE.
        long transfer = transfer(a, b);
        // (5): compare.
        try (HrryFileSource x = HrryFileSource.open(a); HrryFileSource y = HrryFileSource.open(b)) {
            String mismatch = compare(x, y);
            long quantized = x.fileEntries().stream().filter(e -> e.descriptor().quantization().isPresent()).count();
            return new Row(model, x.count(), quantized, x.totalBytes(), Files.size(a), convert, transfer,
                    mismatch == null, Files.mismatch(a, b) == -1, mismatch);
        } catch (IOException e) {
            throw Errors.reading(e, model, null);
        }
    }

    /**
     * {@code src} with file metadata saying where the weights came from (a weights manifest has
     * none of its own), so that the demo also carries file metadata across the stream.
     */
    private static Source withProvenance(Source src, Path manifest, boolean bundled) {
        return Sources.withMetadata(src, Map.of(
                "source", ("tfjs weights " + manifest.getFileName()
                        + (bundled ? " (bundled: @vladmandic/face-api 1.7.15, model/, MIT licence)" : ""))
                        .getBytes(StandardCharsets.UTF_8),
                "converted-by", "hurray demo".getBytes(StandardCharsets.UTF_8)));
    }

    /** Streams {@code a} to a receiver thread that writes {@code b}; returns the wall time. */
    private long transfer(Path a, Path b) throws CliException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
            InetSocketAddress addr = (InetSocketAddress) server.getLocalAddress();
            CompletableFuture<Pipeline.Stats> received = new CompletableFuture<>();
            Thread receiver = Thread.ofPlatform().name("hurray-demo-recv").daemon().start(() -> {
                try (SocketChannel conn = server.accept();
                     StreamSource src = new StreamSource(Reader.of(conn));
                     HrryFileSink sink = HrryFileSink.toFile(b, keep != null)) {
                    received.complete(Pipeline.copy(src, sink, false, null));
                } catch (Throwable t) {
                    received.completeExceptionally(t);
                }
            });
            long t0 = System.nanoTime();
            try (HrryFileSource src = HrryFileSource.open(a); SocketChannel ch = SocketChannel.open(addr);
                 StreamSink sink = StreamSink.toChannel(ch)) {
                Pipeline.copy(src, sink, false, null);
            } catch (IOException e) {
                server.close(); // unblocks the receiver if it never got a connection
                throw Errors.reading(e, a, addr);
            }
            try {
                received.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                if (c instanceof IOException io) {
                    throw Errors.reading(io, "received stream", b);
                }
                throw new CliException(ExitCode.INTERNAL, "the receiver failed: " + c, c);
            } catch (TimeoutException e) {
                server.close();
                throw new CliException(ExitCode.IO_ERROR, "the receiver did not finish within " + TIMEOUT_SECONDS + " s");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CliException(ExitCode.INTERNAL, "interrupted");
            }
            long dt = System.nanoTime() - t0;
            receiver.join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
            return dt;
        } catch (IOException e) {
            throw new CliException(ExitCode.IO_ERROR, "loopback TCP failed: " + Errors.describe(e), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException(ExitCode.INTERNAL, "interrupted");
        }
    }

    /**
     * Null if the containers hold the same file metadata and the same tensors (name, encoded
     * descriptor, every payload byte), else what differs first.
     */
    static String compare(HrryFileSource x, HrryFileSource y) throws IOException {
        Map<String, byte[]> mx = x.metadata();
        Map<String, byte[]> my = y.metadata();
        if (!mx.keySet().equals(my.keySet())) {
            return "file metadata keys " + mx.keySet() + " vs " + my.keySet();
        }
        for (Map.Entry<String, byte[]> e : mx.entrySet()) {
            if (!Arrays.equals(e.getValue(), my.get(e.getKey()))) {
                return "file metadata '" + e.getKey() + "' differs";
            }
        }
        List<FileEntry> ex = x.fileEntries();
        List<FileEntry> ey = y.fileEntries();
        if (ex.size() != ey.size()) {
            return ex.size() + " tensors vs " + ey.size();
        }
        for (int i = 0; i < ex.size(); i++) {
            FileEntry fx = ex.get(i);
            FileEntry fy = ey.get(i);
            TensorDescriptor dx = fx.descriptor();
            TensorDescriptor dy = fy.descriptor();
            if (!fx.name().equals(fy.name())) {
                return "tensor " + i + " is '" + dev.hurray.TensorNames.forMessage(fx.name()) + "' vs '" + dev.hurray.TensorNames.forMessage(fy.name()) + "'";
            }
            if (!dx.equals(dy) || !Arrays.equals(dx.encode(), dy.encode())) {
                return "tensor '" + dev.hurray.TensorNames.forMessage(fx.name()) + "': descriptor " + dx + " vs " + dy;
            }
            try (Tensor tx = x.file().read(fx); Tensor ty = y.file().read(fy)) {
                for (int k = 0; k < tx.buffers().size(); k++) {
                    MemorySegment px = tx.buffers().get(k);
                    MemorySegment py = ty.buffers().get(k);
                    long at = px.mismatch(py);
                    if (at != -1) {
                        return "tensor '" + dev.hurray.TensorNames.forMessage(fx.name()) + "' buffer " + k + " differs at byte " + at;
                    }
                }
            }
        }
        return null;
    }

    private static void print(PrintWriter out, List<Row> rows, boolean allExact) {
        List<String[]> t = new ArrayList<>();
        t.add(new String[] {"MODEL", "TENSORS", "QUANTIZED", "PAYLOAD", "HRRYFILE", "CONVERT", "TCP", "THROUGHPUT", "BIT-EXACT"});
        long tensors = 0;
        long bytes = 0;
        long size = 0;
        long conv = 0;
        long tcp = 0;
        long quant = 0;
        for (Row r : rows) {
            t.add(new String[] {r.model, Long.toString(r.tensors), Long.toString(r.quantized), Units.bytes(r.bytes),
                    Units.bytes(r.fileSize), Units.seconds(r.convertNanos), Units.seconds(r.transferNanos),
                    Units.rate(r.bytes, r.transferNanos), r.bitExact ? (r.identicalFiles ? "yes (same file bytes)" : "yes") : "NO"});
            tensors += r.tensors;
            bytes += r.bytes;
            size += r.fileSize;
            conv += r.convertNanos;
            tcp += r.transferNanos;
            quant += r.quantized;
        }
        t.add(new String[] {"total", Long.toString(tensors), Long.toString(quant), Units.bytes(bytes), Units.bytes(size),
                Units.seconds(conv), Units.seconds(tcp), Units.rate(bytes, tcp), allExact ? "yes" : "NO"});
        Table.print(out, t, new boolean[] {false, true, true, true, true, true, true, true, false});
        out.println(allExact
                ? "bit-exact: every tensor's descriptor and payload bytes, and the file metadata, arrived unchanged"
                : "NOT bit-exact: see the errors below");
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException ignored) {
            // A temporary directory left behind is harmless.
        }
    }
}
