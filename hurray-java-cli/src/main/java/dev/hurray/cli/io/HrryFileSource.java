package dev.hurray.cli.io;

import dev.hurray.FileEntry;
import dev.hurray.FileReaderOptions;
import dev.hurray.HurrayFile;
import dev.hurray.Tensor;
import dev.hurray.formats.Format;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An HRRYFILE container as a {@link Source}. The file is read with positional reads into
 * memory each tensor owns ({@link HurrayFile#open}), never memory-mapped: a user's file that
 * another process truncates meanwhile is then an error, not a JVM crash (SIGBUS). Listing
 * reads the index only, and payload checksums are checked as each tensor is read. Tensors are
 * delivered in <em>file</em>
 * order (by payload offset: the order they were added), not in the index's name order, so that
 * copying a container into another adds the tensors in the same order and gives the same bytes.
 */
public final class HrryFileSource implements Source {
    private final HurrayFile file;
    private final Map<String, byte[]> metadata;
    private final List<FileEntry> entries;

    private HrryFileSource(HurrayFile file, Map<String, byte[]> metadata, List<FileEntry> entries) {
        this.file = file;
        this.metadata = metadata;
        this.entries = entries;
    }

    /**
     * Opens {@code path}, reads its metadata and index.
     *
     * @throws IOException a {@link dev.hurray.HurrayException} for a file that is not a valid
     *     container, or the file system's exception
     */
    public static HrryFileSource open(Path path) throws IOException {
        HurrayFile f = HurrayFile.open(path, FileReaderOptions.defaults()
                .withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY));
        try {
            List<FileEntry> list = new ArrayList<>();
            for (long i = 0, n = f.count(); i < n; i++) {
                list.add(f.entry(i));
            }
            return new HrryFileSource(f, f.metadata(), List.copyOf(list));
        } catch (IOException | RuntimeException e) {
            try {
                f.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** The open container. */
    public HurrayFile file() {
        return file;
    }

    /** The index entries, in name order. */
    public List<FileEntry> fileEntries() {
        return entries;
    }

    @Override
    public Format format() {
        return Format.HRRYFILE;
    }

    @Override
    public Map<String, byte[]> metadata() {
        return metadata;
    }

    @Override
    public long count() {
        return entries.size();
    }

    @Override
    public long totalBytes() {
        long n = 0;
        for (FileEntry e : entries) {
            n += e.totalBytes();
        }
        return n;
    }

    /** Name order, as the index lists them; the offset is buffer 0's. */
    @Override
    public Optional<List<Entry>> entries() {
        List<Entry> l = new ArrayList<>();
        for (FileEntry e : entries) {
            l.add(Entry.of(e.descriptor(), offset(e)));
        }
        return Optional.of(l);
    }

    private static long offset(FileEntry e) {
        return e.buffers().isEmpty() ? -1 : e.buffers().get(0).offset();
    }

    /**
     * The entries in file order: by buffer 0's offset. A zero-length payload sits at the
     * writer's position when it was added, which is also where the next payload starts, so on a
     * tie the empty one was added first; ties between empty ones fall back to name order.
     */
    public List<FileEntry> inFileOrder() {
        List<FileEntry> l = new ArrayList<>(entries);
        l.sort(Comparator.comparingLong(HrryFileSource::offset)
                .thenComparing(e -> e.totalBytes() > 0)
                .thenComparingLong(FileEntry::index));
        return l;
    }

    @Override
    public void forEach(Action action) throws IOException {
        for (FileEntry e : inFileOrder()) {
            try (Tensor t = file.read(e)) {
                action.accept(new Item(t.descriptor(), t.buffers(), offset(e)));
            }
        }
    }

    @Override
    public void close() throws IOException {
        file.close();
    }
}
