package dev.hurray.cli;

import dev.hurray.FileEntry;
import dev.hurray.cli.io.ReadLimits;
import dev.hurray.FileReaderOptions;
import dev.hurray.HurrayFile;
import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.Format;
import dev.hurray.formats.Payloads;
import dev.hurray.cli.io.StreamSource;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code hurray verify FILE}: checks a file's structure and checksums and reads every payload
 * byte; exit 4 when the file is invalid.
 *
 * <ul>
 *   <li>HRRYFILE: the native whole-index check ({@link HurrayFile#verify()}: header, trailer,
 *       index and metadata CRCs, every entry, record and descriptor, name order, payload
 *       ranges, alignment and overlaps, composite structure), then every payload's CRC32C
 *       computed in windows of at most 1 MiB (so a tensor of any size needs that much memory,
 *       whatever the reader limits), and every sparse or paged tensor read with its indices
 *       checked. The file is read with positional reads, not mapped, so another process
 *       shortening it is an error ({@code TRUNCATED}), not a crash.</li>
 *   <li>Stream file: every item read (frame and descriptor CRCs always, payload CRCs when the
 *       stream has them) up to an intact end-of-stream marker, in the assembled view: every
 *       composite's member count, depths and indices, and size.</li>
 *   <li>Foreign formats: the full validation their readers apply (offsets, sizes, dtypes;
 *       npz CRCs), every payload byte read.</li>
 * </ul>
 */
@Command(name = "verify", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = {"Check a file's structure and checksums and read every payload byte.",
        "Exit 4 when the file is invalid."})
final class VerifyCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    CommonOptions common;

    @Parameters(index = "0", paramLabel = "FILE", description = "File to check.")
    Path file;

    @Mixin
    SharedOptions.From input;

    @Override
    public Integer call() throws CliException {
        Format format = Inputs.format(file, input.format);
        String summary;
        try {
            summary = switch (format) {
                case HRRYFILE -> verifyHrryFile();
                case STREAM -> verifyStream();
                default -> verifyForeign(format);
            };
        } catch (IOException e) {
            throw failed(Errors.reading(e, file, null));
        } catch (CliException e) {
            throw failed(e);
        }
        if (!common.quiet) {
            spec.commandLine().getOut().println(file + ": ok (" + format + ", " + summary + ")");
        }
        return ExitCode.OK;
    }

    private static CliException failed(CliException e) {
        if (e.exitCode() == ExitCode.BAD_INPUT) {
            return new CliException(ExitCode.VERIFY_FAILED, "verification failed: " + e.getMessage(), e);
        }
        return e;
    }

    private String verifyHrryFile() throws IOException {
        FileReaderOptions opts = ReadLimits.files().withVerifyAtOpen(true)
                .withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY);
        long tensors = 0;
        long bytes = 0;
        long checksummed = 0;
        long payloads = 0;
        try (HurrayFile f = HurrayFile.open(file, opts)) {
            f.verify(); // reads and checks every tensor, so the counts below need no payload read
            int metadata = f.metadata().size();
            for (FileEntry e : f.index()) {
                tensors++;
                bytes += e.totalBytes();
                for (FileEntry.BufferLocation b : e.buffers()) {
                    payloads++;
                    if (b.hasChecksum()) {
                        checksummed++;
                    }
                }
            }
            return Units.count(tensors, "tensor") + ", " + bytes + " payload bytes, " + metadata + " metadata "
                    + (metadata == 1 ? "entry" : "entries") + ", payload checksums: " + checksummed + " of " + payloads;
        }
    }

    /** Every item read in the assembled view, which checks composite structure as it goes. */
    private String verifyStream() throws IOException {
        long[] totals = new long[2];
        long composites;
        try (StreamSource src = Inputs.stream(file)) {
            src.forEach(item -> {
                totals[0]++;
                totals[1] += item.bytes();
            });
            composites = src.composites();
        }
        return Units.count(totals[0], "tensor") + ", " + totals[1] + " bytes"
                + (composites > 0 ? ", " + Units.count(composites, "composite") : "");
    }

    /** A scipy.sparse save_npz archive: every array read (zip CRCs), then every index checked natively. */
    private String verifyScipySparse() throws CliException {
        try (dev.hurray.cli.io.Source src = SparseConvert.source(file)) {
            long[] bytes = new long[1];
            src.forEach(item -> {
                try (dev.hurray.Tensor t = dev.hurray.Tensor.copyOf(item.descriptor(),
                        item.payloads().toArray(java.lang.foreign.MemorySegment[]::new))) {
                    t.checkContents();
                }
                bytes[0] += item.bytes();
            });
            return "1 sparse tensor (scipy.sparse), " + bytes[0] + " bytes";
        } catch (IOException e) {
            throw Errors.reading(e, file, null);
        }
    }

    private String verifyForeign(Format format) throws CliException, IOException {
        if (format == Format.NPZ && dev.hurray.formats.ScipySparse.isSparseNpz(file)) {
            return verifyScipySparse();
        }
        try (ForeignModel model = Inputs.readForeign(file, format, false, null)) {
            // Reads every byte, one tensor at a time: a shortened file or a bad npz member fails here.
            model.forEachTensor((t, h) -> {
                for (java.lang.foreign.MemorySegment s : h.buffers()) {
                    Payloads.crc32(s);
                }
            });
            return Units.count(model.tensors().size(), "tensor") + ", " + model.totalBytes() + " bytes";
        }
    }
}
