package dev.hurray;

import dev.hurray.internal.NativeFileEntry;
import dev.hurray.internal.NativeFileReader;
import dev.hurray.internal.TensorAdopters;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.RandomAccess;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The index entries a {@link HurrayFile} hands out: lookups by name and by position, listing,
 * the on-demand index view and iteration, and which entries keep their native entry. Each
 * public-facing call holds the file's guard (one thread at a time), as the file's own calls do;
 * the file's Javadoc describes what each costs.
 *
 * <p>Entries already looked up by name are cached (immutable values; at most
 * {@link #ENTRY_CACHE_MAX}), so that repeated lookups cost a hash probe instead of a native
 * search and a new entry. The native entries of the first {@link #ENTRY_CACHE_MAX} distinct
 * entries handed out are this index's ({@link #ownedEntries}), destroyed when the file closes:
 * no cleaner registration per lookup, and their memory comes back at close rather than after a
 * garbage collection. Entries beyond those own their native entry themselves (freed by the
 * garbage collector). <em>Listed</em> entries (listing, the view, iteration) keep no native
 * entry: each one's native copy is freed as soon as its fields are read.
 */
final class FileIndex {
    static final int ENTRY_CACHE_MAX = 1 << 16;

    private final HurrayFile file;
    private final NativeFileReader reader;
    private final HandleGuard guard;
    /** Entries by name; guarded by {@link #guard}. */
    private final HashMap<String, FileEntry> entryCache = new HashMap<>();
    /** Entries by index whose native entries are {@link #ownedEntries}, so that one index has at most one; guarded by {@link #guard}. */
    private final HashMap<Long, FileEntry> entriesByIndex = new HashMap<>();
    private final NativeFileEntry.Owned ownedEntries = new NativeFileEntry.Owned(ENTRY_CACHE_MAX);
    /** Entries handed out that own their native entry (beyond {@link #ownedEntries}), for {@link #retainedNativeEntries()}. */
    private final AtomicInteger detachedOwn = new AtomicInteger();

    FileIndex(HurrayFile file, NativeFileReader reader, HandleGuard guard) {
        this.file = file;
        this.reader = reader;
        this.guard = guard;
    }

    /** The native entries this index owns: destroyed when the file closes, or by its leak cleaner. */
    NativeFileEntry.Owned ownedEntries() {
        return ownedEntries;
    }

    /** The entry already looked up under {@code name}, or null; the caller holds the guard. */
    FileEntry cached(String name) {
        return entryCache.get(name);
    }

    /**
     * The native entry to read {@code entry} through, the caller holding the guard: its own,
     * or for a listed entry the index entry looked up again, which {@link #doneWith} frees.
     */
    MemorySegment nativeEntry(FileEntry entry) throws HurrayException {
        MemorySegment h = entry.handle();
        return h != null ? h : reader.entry(entry.index());
    }

    /** Ends a use of {@code h} from {@link #nativeEntry}: a native entry looked up again is destroyed. */
    static void doneWith(FileEntry entry, MemorySegment h) {
        if (h != entry.handle()) {
            NativeFileEntry.destroy(h);
        }
    }

    /** {@link HurrayFile#entry(long)}. */
    FileEntry entry(long index) throws HurrayException {
        guard.enter();
        try {
            FileEntry known = entriesByIndex.get(index);
            return known != null ? known : toEntry(reader.entry(index));
        } finally {
            guard.exit();
        }
    }

    /** {@link HurrayFile#entry(String)}. */
    Optional<FileEntry> entry(String name) throws HurrayException {
        Objects.requireNonNull(name, "name");
        guard.enter();
        try {
            FileEntry cached = entryCache.get(name);
            if (cached != null) {
                return Optional.of(cached);
            }
            byte[] utf8 = dev.hurray.internal.Utf8.encodeOrNull(name);
            MemorySegment h = utf8 == null ? null : reader.find(utf8);
            if (h == null) {
                return Optional.empty();
            }
            FileEntry e = toEntry(h);
            if (entryCache.size() < ENTRY_CACHE_MAX) {
                entryCache.put(name, e);
            }
            return Optional.of(e);
        } finally {
            guard.exit();
        }
    }

    /** {@link HurrayFile#entries()}. */
    List<FileEntry> entries() throws HurrayException {
        guard.enter();
        try {
            long n = reader.count();
            List<FileEntry> out = new ArrayList<>((int) Math.min(n, Integer.MAX_VALUE - 8));
            for (long i = 0; i < n; i++) {
                out.add(listedEntryAt(i));
            }
            return Collections.unmodifiableList(out);
        } finally {
            guard.exit();
        }
    }

    /** {@link HurrayFile#index()}. */
    List<FileEntry> index() throws HurrayException {
        long n = file.count();
        if (n > Integer.MAX_VALUE) {
            throw new HurrayException(Status.LIMIT_EXCEEDED, n + " entries do not fit a List; use entry(long)", null);
        }
        return new IndexView((int) n);
    }

    /** {@link HurrayFile#index()}: listed entries read on {@code get}. */
    private final class IndexView extends AbstractList<FileEntry> implements RandomAccess {
        private final int size;

        IndexView(int size) {
            this.size = size;
        }

        @Override
        public FileEntry get(int i) {
            Objects.checkIndex(i, size);
            try {
                return listedEntry(i);
            } catch (HurrayException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public int size() {
            return size;
        }
    }

    /** {@link HurrayFile#iterator()}. */
    Iterator<FileEntry> iterator() {
        return new Iterator<>() {
            private long next;
            private long count = -1;

            @Override
            public boolean hasNext() {
                try {
                    if (count < 0) {
                        count = file.count();
                    }
                } catch (HurrayException e) {
                    throw new UncheckedIOException(e);
                }
                return next < count;
            }

            @Override
            public FileEntry next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("no more entries");
                }
                try {
                    FileEntry e = listedEntry(next);
                    next++;
                    return e;
                } catch (HurrayException e) {
                    throw new UncheckedIOException(e);
                }
            }
        };
    }

    /** {@link #listedEntryAt} for a caller outside the guard. */
    private FileEntry listedEntry(long index) throws HurrayException {
        guard.enter();
        try {
            return listedEntryAt(index);
        } finally {
            guard.exit();
        }
    }

    /**
     * Entry {@code index} as a listed entry: the one already made, else one whose native copy
     * is freed before this returns (its {@link FileEntry#handle()} is null; reads look the
     * index entry up again).
     */
    private FileEntry listedEntryAt(long index) throws HurrayException {
        FileEntry known = entriesByIndex.get(index);
        if (known != null) {
            return known;
        }
        MemorySegment raw = reader.entry(index);
        try {
            return toEntry(raw, null, index);
        } finally {
            NativeFileEntry.destroy(raw);
        }
    }

    /**
     * Native entries this index holds, plus those handed out to own their native entry (freed
     * by the garbage collector): for tests of what listing costs.
     */
    int retainedNativeEntries() {
        return ownedEntries.size() + detachedOwn.get();
    }

    /** The entry for native entry {@code raw}, which this takes over (see the class comment). */
    private FileEntry toEntry(MemorySegment raw) throws HurrayException {
        long index;
        try {
            index = NativeFileEntry.index(raw);
        } catch (HurrayException | RuntimeException e) {
            NativeFileEntry.destroy(raw);
            throw e;
        }
        FileEntry known = entriesByIndex.get(index);
        if (known != null) {
            NativeFileEntry.destroy(raw);
            return known;
        }
        boolean owned = ownedEntries.add(raw);
        if (!owned) {
            detachedOwn.incrementAndGet();
        }
        FileEntry e = toEntry(raw, owned ? raw : NativeFileEntry.own(raw), index);
        if (owned) {
            entriesByIndex.put(index, e);
        }
        return e;
    }

    /** An entry read from native entry {@code h}, keeping {@code handle} (null: a listed entry). */
    private FileEntry toEntry(MemorySegment h, MemorySegment handle, long index) throws HurrayException {
        String name = NativeFileEntry.name(h);
        TensorDescriptor descriptor = TensorAdopters.descriptor(NativeFileEntry.descriptor(h), null);
        int n = NativeFileEntry.bufferCount(h);
        List<FileEntry.BufferLocation> locations = new ArrayList<>(n);
        for (int b = 0; b < n; b++) {
            long[] l = NativeFileEntry.buffer(h, b);
            locations.add(new FileEntry.BufferLocation(l[0], l[1], (int) l[2],
                    (l[4] & NativeFileEntry.HAS_CRC) != 0, l[3]));
        }
        return new FileEntry(file, handle, index, name, descriptor, locations);
    }
}
