package dev.hurray.cli;

import dev.hurray.HurrayFile;
import dev.hurray.cli.io.ReadLimits;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import dev.hurray.cli.io.Entry;
import dev.hurray.cli.io.Item;
import dev.hurray.cli.io.Source;
import dev.hurray.formats.Format;
import dev.hurray.formats.ScipySparse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;

/**
 * The scipy.sparse paths of {@code hurray convert}: a {@code save_npz} archive to HRRYFILE, a
 * stream or another save_npz archive (the layout is kept); and a single sparse tensor in
 * HRRYFILE or a stream back to save_npz. Everything else, {@code --densify} included, goes
 * through the general pipeline ({@link #source} gives it a save_npz archive).
 */
final class SparseConvert {
    private SparseConvert() {}

    /** True when these formats and files take a sparse path. */
    static boolean applies(Path in, Format inFormat, Format outFormat) {
        if (inFormat == Format.NPZ && ScipySparse.isSparseNpz(in)) {
            return true;
        }
        return outFormat == Format.NPZ && (inFormat == Format.HRRYFILE || inFormat == Format.STREAM) && singleSparse(in, inFormat);
    }

    private static boolean singleSparse(Path in, Format f) {
        try (Tensor t = single(in, f)) {
            return t != null && t.descriptor().layout().kind().isSparse();
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** The only tensor of a container or stream, or null when there are several or none. */
    private static Tensor single(Path in, Format f) throws IOException {
        if (f == Format.HRRYFILE) {
            try (HurrayFile h = HurrayFile.open(in, ReadLimits.files())) {
                if (h.count() != 1) {
                    return null;
                }
                return h.read(h.entries().get(0));
            }
        }
        try (Reader r = Reader.of(Files.newInputStream(in), ReadLimits.streams())) {
            Iterator<Tensor> it = r.iterator();
            if (!it.hasNext()) {
                return null;
            }
            Tensor t = it.next();
            if (it.hasNext()) {
                t.close();
                it.next().close();
                return null;
            }
            return t;
        }
    }

    /**
     * Converts; returns the number of tensors written (1).
     *
     * @throws CliException for a target that cannot hold the result
     */
    static int run(Path in, Format inFormat, Path out, Format outFormat) throws IOException, CliException {
        if (outFormat != Format.HRRYFILE && outFormat != Format.STREAM && outFormat != Format.NPZ) {
            throw new CliException(ExitCode.USAGE, "a scipy.sparse matrix can be written to .hrry, "
                    + ".hrrys or .npz (keeping its layout), or densified with --densify to any format");
        }
        try (Tensor w = inFormat == Format.NPZ ? ScipySparse.read(in) : single(in, inFormat)) {
            switch (outFormat) {
                case HRRYFILE -> {
                    // HurrayFile.create writes through a temporary file and renames it at finish.
                    try (HurrayFileWriter fw = HurrayFile.create(out)) {
                        fw.add(name(w), w);
                        fw.finish();
                    }
                }
                case STREAM -> {
                    try (dev.hurray.AtomicOutput o = dev.hurray.AtomicOutput.create(out);
                         Writer wr = Writer.of(o.channel())) {
                        wr.write(w);
                        wr.finish();
                        o.commit();
                    }
                }
                default -> ScipySparse.write(w, out);
            }
        }
        return 1;
    }

    /**
     * A save_npz archive as a one-tensor {@link Source} (the sparse tensor, read and checked),
     * for the general pipeline ({@code --densify}).
     */
    static Source source(Path in) throws CliException {
        Tensor t;
        try {
            t = ScipySparse.read(in);
        } catch (dev.hurray.formats.ForeignFormatException e) {
            throw new CliException(ExitCode.BAD_INPUT, Errors.describe(e), e);
        } catch (IOException e) {
            throw Errors.reading(e, in, null);
        }
        return new Source() {
            @Override
            public Format format() {
                return Format.NPZ;
            }

            @Override
            public java.util.Map<String, byte[]> metadata() {
                return java.util.Map.of();
            }

            @Override
            public long count() {
                return 1;
            }

            @Override
            public long totalBytes() {
                return t.buffers().totalBytes();
            }

            @Override
            public java.util.Optional<java.util.List<Entry>> entries() {
                return java.util.Optional.of(java.util.List.of(Entry.of(t.descriptor(), -1)));
            }

            @Override
            public void forEach(Action action) throws IOException {
                action.accept(new Item(t.descriptor(), t.buffers(), -1));
            }

            @Override
            public void close() {
                t.close();
            }
        };
    }

    private static String name(Tensor t) {
        return t.descriptor().name().filter(n -> !n.isEmpty()).orElse("matrix");
    }
}
