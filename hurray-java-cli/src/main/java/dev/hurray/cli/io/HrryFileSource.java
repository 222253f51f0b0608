package dev.hurray.cli.io;

import dev.hurray.CompositeMembership;
import dev.hurray.FileEntry;
import dev.hurray.FileReaderOptions;
import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.formats.Format;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.AbstractList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * An HRRYFILE container as a {@link Source}. The file is read with positional reads
 * ({@link HurrayFile#open}), not mapped: a user's file may be shortened by another process
 * while it is read, which a read reports as an error ({@code TRUNCATED}) where a mapping would
 * raise SIGBUS and kill the JVM. Listing reads the index only; each tensor is read into native
 * memory with its payload checksums checked, handed on, and freed. Tensors are delivered in <em>file</em>
 * order (by payload offset: the order they were added), not in the index's name order, so that
 * copying a container into another adds the tensors in the same order and gives the same bytes.
 *
 * <p>The index is read lazily ({@link HurrayFile#index()}): nothing is kept per entry but, for
 * {@link #forEach}, its payload offset and position (16 bytes), so a container of a million
 * small entries is listed or copied without holding a million entries.
 */
public final class HrryFileSource implements Source {
    private final HurrayFile file;
    private final Map<String, byte[]> metadata;
    private final List<FileEntry> index;
    private long totalBytes = -1;

    private HrryFileSource(HurrayFile file, Map<String, byte[]> metadata, List<FileEntry> index) {
        this.file = file;
        this.metadata = metadata;
        this.index = index;
    }

    /**
     * Opens {@code path}, reads its metadata and checks its composites from the index.
     *
     * @throws IOException a {@link dev.hurray.HurrayException} for a file that is not a valid
     *     container, or the file system's exception
     */
    public static HrryFileSource open(Path path) throws IOException {
        HurrayFile f = HurrayFile.open(path, ReadLimits.files()
                .withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY));
        try {
            // Composite structure first, from the index alone (no payload read): a malformed
            // composite fails opening instead of being copied or listed.
            f.checkComposites();
            return new HrryFileSource(f, f.metadata(), f.index());
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

    /** The index entries, in name order: a view read on demand ({@link HurrayFile#index()}). */
    public List<FileEntry> fileEntries() {
        return index;
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
        return index.size();
    }

    /** One pass over the index on the first call; -1 (unknown) if the index cannot be read ({@link #forEach} says why). */
    @Override
    public long totalBytes() {
        if (totalBytes < 0) {
            try {
                long n = 0;
                for (FileEntry e : index) {
                    n += e.totalBytes();
                }
                totalBytes = n;
            } catch (UncheckedIOException | ArithmeticException e) {
                return -1;
            }
        }
        return totalBytes;
    }

    /**
     * Name order, as the index lists them; the offset is buffer 0's. A view: each iteration
     * reads the index again, entry by entry.
     */
    @Override
    public Optional<List<Entry>> entries() {
        return Optional.of(new AbstractList<>() {
            @Override
            public Entry get(int i) {
                FileEntry e = index.get(i);
                return Entry.of(e.descriptor(), offset(e));
            }

            @Override
            public int size() {
                return index.size();
            }
        });
    }

    private static long offset(FileEntry e) {
        return e.buffers().isEmpty() ? -1 : e.buffers().get(0).offset();
    }

    /**
     * The entries in file order: by buffer 0's offset. A zero-length payload sits at the
     * writer's position when it was added, which is also where the next payload starts, so on a
     * tie the empty one was added first; ties between empty ones fall back to name order. One
     * pass over the index keeps each entry's offset and position; the result is a view.
     */
    public List<FileEntry> inFileOrder() {
        int n = index.size();
        long[] offsets = new long[n];
        java.util.BitSet nonEmpty = new java.util.BitSet(n);
        for (int i = 0; i < n; i++) {
            FileEntry e = index.get(i);
            offsets[i] = offset(e);
            if (e.totalBytes() > 0) {
                nonEmpty.set(i);
            }
        }
        int[] order = java.util.stream.IntStream.range(0, n).boxed()
                .sorted(Comparator.<Integer>comparingLong(i -> offsets[i]).thenComparing((Integer i) -> nonEmpty.get(i)))
                .mapToInt(Integer::intValue).toArray();
        return new AbstractList<>() {
            @Override
            public FileEntry get(int k) {
                return index.get(order[k]);
            }

            @Override
            public int size() {
                return n;
            }
        };
    }

    /**
     * Tensors outside composites in file order; each composite whole, as a stream carries it
     * (its head, then its members in preorder, docs/spec/stream.md §Composites), at the place
     * of its first tensor member in the file (every composite has one: its tree ends in
     * tensors), so that copying a container keeps the payload order and writing a stream gives
     * a valid one. The structure was checked at open.
     */
    @Override
    public void forEach(Action action) throws IOException {
        try {
            copy(action);
        } catch (UncheckedIOException e) {
            throw e.getCause(); // an index entry that could not be read
        }
    }

    private void copy(Action action) throws IOException {
        Set<String> done = new HashSet<>();
        for (FileEntry e : inFileOrder()) {
            Optional<CompositeMembership> c = e.descriptor().compositeMembership();
            if (c.isEmpty()) {
                handOn(e, action);
            } else if (c.get().depth() > 0 && !c.get().isHead()) {
                String top = topLevel(e.name(), c.get().depth());
                if (done.add(top)) {
                    handOnComposite(entry(top), action);
                }
            }
        }
    }

    private void handOn(FileEntry e, Action action) throws IOException {
        try (Tensor t = file.read(e)) {
            action.accept(new Item(t.descriptor(), t.buffers(), offset(e)));
        }
    }

    private void handOnComposite(FileEntry head, Action action) throws IOException {
        action.accept(new Item(head.descriptor(), List.of(), -1));
        for (String role : head.descriptor().compositeMembership().orElseThrow().roles()) {
            FileEntry m = entry(head.name() + "/" + role);
            if (m.descriptor().compositeMembership().orElseThrow().isHead()) {
                handOnComposite(m, action);
            } else {
                handOn(m, action);
            }
        }
    }

    private FileEntry entry(String name) throws IOException {
        return file.entry(name).orElseThrow(() -> new HurrayException(Status.CORRUPT,
                "composite member \"" + dev.hurray.TensorNames.forMessage(name) + "\" is missing", null));
    }

    /** The top-level composite's name: {@code name} less its last {@code depth} roles (roles hold no '/'). */
    static String topLevel(String name, int depth) throws HurrayException {
        int end = name.length();
        for (int i = 0; i < depth && end > 0; i++) {
            end = name.lastIndexOf('/', end - 1);
        }
        if (end <= 0) {
            throw new HurrayException(Status.CORRUPT, "entry \"" + dev.hurray.TensorNames.forMessage(name) + "\" at composite depth " + depth
                    + " is not stored under a composite's name", null);
        }
        return name.substring(0, end);
    }

    @Override
    public void close() throws IOException {
        file.close();
    }
}
