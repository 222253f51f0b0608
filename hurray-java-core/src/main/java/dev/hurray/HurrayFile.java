package dev.hurray;

import dev.hurray.internal.NativeFileEntry;
import dev.hurray.internal.NativeFileReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.FileChannel.MapMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * An HRRYFILE container opened for random access (docs/spec/hrryfile.md): named tensors, each
 * payload aligned in the file, an index found from a fixed-size trailer, file-level metadata.
 * Reading and all format checks are the native library's ({@code hurray_file_reader_*}); this
 * class gives it a file.
 *
 * <pre>{@code
 * try (HurrayFile file = HurrayFile.map(path)) {
 *     for (FileEntry e : file) {                         // the index only, no payload read
 *         System.out.println(e.name() + " " + e.descriptor().shape());
 *     }
 *     try (Tensor w = file.read("layer0/weights")) {      // zero copy: points into the map
 *         float[] values = w.toFloatArray();
 *     }
 * }
 * }</pre>
 *
 * <h2>Two ways in</h2>
 * <ul>
 *   <li>{@link #open(Path)} has the native library open the file and read it with its own
 *       positional reads ({@code pread}) straight into the native memory it allocated for each
 *       buffer (at the buffer's declared alignment; no heap copy), with no call back into Java
 *       ({@code hurray_file_reader_open_path}). {@link #open(FileChannel)} reads the same way
 *       through the channel's positional reads, made in Java between native calls for the
 *       ranges the native reader names ({@code hurray_file_reader_new_ranges}; no callback).
 *       Payload checksums are checked by default. Tensors own their memory.</li>
 *   <li>{@link #map(Path)} has the native library map the whole file read-only and read it
 *       there ({@code hurray_file_reader_open_mapped}; where the library has no memory map,
 *       {@link FileChannel#map(MapMode, long, long, Arena)} maps it for the native span reader;
 *       any size, including over 2 GiB). A tensor's buffer then points
 *       <em>into the mapping</em> without copying whenever its payload's address meets its
 *       declared alignment, which is always the case for alignments up to the page size (the
 *       map starts on a page boundary and the writer aligns every payload in the file); only
 *       a buffer declaring a larger alignment may be an aligned copy. Pages are read lazily by
 *       the operating system.</li>
 * </ul>
 *
 * <h2>What is checked, and when</h2>
 * Both ways check the header, the trailer and every index entry and descriptor they use, and
 * every sparse index and page table of a tensor they hand out. Payload checksums (CRC32C) are
 * where the two differ, and the policy is deliberate: {@link #open} checks each payload as it
 * reads it (it touches every byte anyway); {@link #map} does <em>not</em> by default, because
 * checking would touch every page of a tensor the caller may only want a slice of, and a
 * mapping's pages can change after any check anyway. So a mapped read of a damaged payload
 * returns the damaged bytes without an error. Ask for the checks with
 * {@link FileReaderOptions#withPayloadChecks} ({@code VERIFY}: each tensor is checked in
 * place when read), or call {@link #verify()} once, which checks every payload whatever the
 * options say. A mapped file must also not shrink while mapped (see below).
 *
 * <h2>Costs</h2>
 * Opening reads the header and the trailer, and the whole index when index plus metadata are
 * at most {@link FileReaderOptions#eagerIndexBytes()} (1 MiB by default): at most three
 * ranges whatever the tensor count, one for a file of at most 4 KiB and two when the index
 * lies in the file's last 4 KiB (the first read takes the last 4 KiB). With a larger index, a name lookup
 * ({@link #entry(String)}, {@link #read(String)}) is a binary search costing at most
 * ⌈log2(n + 1)⌉ + 1 small reads (18 for 100,000 tensors), and {@link #entry(long)} two;
 * with a loaded index, none. {@link #readAtCalls()} counts them. Listing ({@link #entries()},
 * iteration) reads no payload.
 *
 * <h2>Ownership and lifetimes</h2>
 * The file owns its file descriptor or channel ({@link #close()} closes it) and, for
 * {@link #map}, the mapping.
 * Every {@link Tensor} returned is owned by the caller, who closes it; its buffers are
 * {@link MemorySegment}s that become inaccessible ({@link IllegalStateException}, never a
 * crash) once it is closed. Tensors stay valid after the file is closed. For a mapped file this
 * means the mapping lives as long as the {@code HurrayFile} <em>or any tensor read from it</em>:
 * it is unmapped when the last of them is closed (a tensor that is never closed keeps it mapped).
 * Buffers of mapped tensors are read-only segments (a write throws
 * {@link IllegalArgumentException} instead of faulting on the read-only map); copy them
 * ({@link Tensor#copyOf}) to modify. As with
 * any memory map, see {@link #map(Path, FileReaderOptions)} for what happens when another
 * process shortens the file while it is mapped (the JVM can crash), and use {@link #open} for
 * files that may change.
 * {@link FileEntry} values need no closing and outlive the file.
 *
 * <h2>Errors</h2>
 * Everything the native library reports is a {@link HurrayException} with its {@link Status}
 * (docs/spec/hrryfile.md §6): a file smaller than header plus trailer or shortened while open
 * is {@link Status#TRUNCATED}; a bad magic (not a container, or one whose writer never
 * finished) {@link Status#INVALID_MAGIC}; damaged bytes and impossible offsets
 * {@link Status#CORRUPT}; a limit {@link Status#LIMIT_EXCEEDED}. When a read fails, the status
 * is {@link Status#TRANSPORT} and the call can be repeated (the reader's state did not change);
 * through a channel the cause is the channel's exception, through {@link #open(Path)} the
 * message names the operating system's error. Opening a missing or unreadable file throws
 * Java's own {@link IOException} ({@link java.nio.file.NoSuchFileException},
 * {@link java.nio.file.AccessDeniedException}, ...); a directory or another file that is not a
 * regular file is {@link Status#INVALID_ARGUMENT} for {@link #open(Path)}.
 *
 * <h2>Threads</h2>
 * One file, one thread at a time (docs/spec/c-abi.md §Threads): a call while another thread is
 * inside the file fails with {@link IllegalStateException}. Tensors follow
 * {@link FileReaderOptions#tensorScope()}; a mapped file's tensors may be closed from any
 * thread their scope allows, and the last close unmaps. A file opened by path is read on the
 * calling thread by the native library: a virtual thread stays on its carrier for each open
 * and read (positional reads of a local file: microseconds), and {@link Thread#interrupt()}
 * does not abort a read in progress (nor, unlike a channel's, close the file).
 */
public final class HurrayFile implements AutoCloseable, Iterable<FileEntry> {
    private final NativeFileReader reader;
    private final FileMapping mapping;
    private final TensorScope scope;
    private final String source;
    private final HandleGuard guard = new HandleGuard("file");
    /** The index entries this file hands out ({@link #entry(String)}, listing, iteration). */
    private final FileIndex entryIndex;

    /** A file over newly opened {@code reader} (and {@code mapping}, or null), which it takes over; see {@link FileOpener}. */
    HurrayFile(NativeFileReader reader, FileMapping mapping, TensorScope scope, String source) {
        this.reader = reader;
        this.mapping = mapping;
        this.scope = scope;
        this.source = source;
        this.entryIndex = new FileIndex(this, reader, guard);
        NativeFileEntry.Owned owned = entryIndex.ownedEntries();
        reader.watch(this, mapping == null ? owned::destroyAll : () -> {
            owned.destroyAll();
            mapping.release();
        });
    }

    // ---------------------------------------------------------------- opening

    /** {@link #open(Path, FileReaderOptions)} with default options. */
    public static HurrayFile open(Path path) throws IOException {
        return open(path, FileReaderOptions.defaults());
    }

    /**
     * Opens the container at {@code path} for reading with positional reads into native memory
     * (see the class comment): the native library opens the file and reads it itself, so no
     * read calls back into Java. A path of another {@link java.nio.file.FileSystem} than the
     * default one (a zip file system, an in-memory one) is read through a {@link FileChannel}
     * of that file system instead.
     *
     * @throws java.nio.file.NoSuchFileException and the other {@link IOException}s
     *     {@link FileChannel#open} throws for a file that cannot be opened
     * @throws HurrayException when the file is not a valid container (see the class comment),
     *     {@link Status#INVALID_ARGUMENT} when it is a directory or another non-regular file
     */
    public static HurrayFile open(Path path, FileReaderOptions options) throws IOException {
        return FileOpener.open(path, options);
    }

    /** {@link #open(FileChannel, FileReaderOptions)} with default options. */
    public static HurrayFile open(FileChannel channel) throws HurrayException {
        return open(channel, FileReaderOptions.defaults());
    }

    /**
     * Opens a container through a readable channel's positional reads
     * ({@link FileChannel#read(java.nio.ByteBuffer, long)}; the channel's own position is never
     * used or changed). The file owns the channel from then on: {@link #close()} closes it. If
     * opening fails, the channel is not closed.
     *
     * @throws HurrayException when the bytes are not a valid container; {@link Status#TRANSPORT}
     *     (with the channel's exception as cause) when the channel fails
     */
    public static HurrayFile open(FileChannel channel, FileReaderOptions options) throws HurrayException {
        Objects.requireNonNull(channel, "channel");
        Objects.requireNonNull(options, "options");
        return FileOpener.open(channel, options, channel.toString());
    }

    /** {@link #map(Path, FileReaderOptions)} with default options. */
    public static HurrayFile map(Path path) throws IOException {
        return map(path, FileReaderOptions.defaults());
    }

    /**
     * Maps the container at {@code path} read-only into memory and opens it there, so that
     * tensors point into the mapping without copying (see the class comment for when, and for
     * the mapping's lifetime). Works for files of any size, including over 2 GiB. A file of
     * the default file system is mapped by the native library ({@code
     * hurray_file_reader_open_mapped}), which unmaps it when the file and the last tensor
     * pointing into it are closed, on whichever thread that is; where the library has no
     * memory map, or cannot map the file, a {@link FileChannel} maps it. No file descriptor
     * or channel stays open either way.
     *
     * <h4>What mapping risks, and how to avoid it</h4>
     * A memory map is not a copy. If another process <em>truncates</em> the file while it is
     * mapped, every page past the new end is gone, and the next access to one of them, by the
     * native library (open, {@link #verify()}, a payload checksum, {@link #readBuffer}) or by
     * Java code reading a tensor's segments or {@link #mapping()}, raises {@code SIGBUS}.
     * Inside the native library that kills the JVM at once (exit 134 and an {@code hs_err}
     * file); in Java code the JVM may turn it into an {@link InternalError} or crash as well.
     * No check can prevent it: a size check before each access still races the truncation. A
     * file rewritten in place (same inode, new bytes) is not truncated but changes under the
     * tensors: they then show the new bytes, unchecked. Map only files that no one truncates or
     * rewrites while they are mapped: files you wrote with {@link #create} (it renames a new
     * file over the old one, which leaves existing maps intact), read-only model stores.
     * Deleting (unlinking) a mapped file is safe. For any file another process may change
     * (shared directories, user input, downloads in progress) use {@link #open}: the same
     * reads through positional reads into memory the tensors own, where a shortened file is
     * {@link Status#TRUNCATED} or {@link Status#INVALID_MAGIC}, and a changed one
     * {@link Status#CORRUPT} where payload checksums are stored. Payload checksums are not
     * checked for mapped files by default ({@link FileReaderOptions.PayloadChecks#VERIFY}
     * turns them on, at the cost of reading every page).
     *
     * @throws java.nio.file.NoSuchFileException and other {@link IOException}s of
     *     {@link FileChannel#open} and {@link FileChannel#map}
     * @throws HurrayException when the file is not a valid container (nothing stays mapped);
     *     {@link Status#INVALID_ARGUMENT} when {@code path} is a directory, FIFO or device
     */
    public static HurrayFile map(Path path, FileReaderOptions options) throws IOException {
        return FileOpener.map(path, options);
    }

    /** {@link #create(Path, FileWriterOptions)} with default options. */
    public static HurrayFileWriter create(Path path) throws IOException {
        return create(path, FileWriterOptions.defaults());
    }

    /**
     * A writer of a new container at {@code path}. The bytes go to a hidden temporary file in
     * the same directory; {@link HurrayFileWriter#finish()} completes the container, forces it
     * to storage (unless {@link FileWriterOptions#syncOnFinish()} is off) and atomically renames
     * it to {@code path}, replacing any existing file. Until then {@code path} is untouched, and
     * closing the writer without a successful finish (an exception, a failed write) deletes the
     * temporary file: a failed or interrupted write never leaves a file at {@code path} that
     * looks like a complete container, and never damages the file that was there. A temporary
     * file still pending when the JVM shuts down ({@code System.exit}, SIGTERM, SIGINT/Ctrl-C,
     * SIGHUP) is deleted by a shutdown hook, installed on the first call; only SIGKILL or a JVM
     * crash leaves {@code .NAME.RANDOM.tmp} behind.
     *
     * @throws IOException if the temporary file cannot be created (e.g. the directory does not
     *     exist), or {@code path} is a directory or another existing file that is not a regular
     *     file, e.g. a device or FIFO ({@link java.nio.file.FileAlreadyExistsException}; the rename
     *     would replace the special file itself)
     * @throws HurrayException {@link Status#INVALID_ALIGNMENT} for a bad minimum payload alignment
     */
    public static HurrayFileWriter create(Path path, FileWriterOptions options) throws IOException {
        return HurrayFileWriter.create(path, options, null);
    }

    // ---------------------------------------------------------------- accessors

    /**
     * The container's size in bytes.
     *
     * @throws IllegalStateException if closed or in use
     */
    public long size() throws HurrayException {
        return locked(reader::size);
    }

    /**
     * The number of tensors.
     *
     * @throws IllegalStateException if closed or in use
     */
    public long count() throws HurrayException {
        return locked(reader::count);
    }

    /** True for a file opened with {@link #map}. */
    public boolean isMapped() {
        return mapping != null;
    }

    /**
     * The read-only memory map of a {@link #map mapped} file (the whole file, from offset 0),
     * or empty for {@link #open}. The segment is valid while the file or any of its tensors is
     * open, and then throws {@link IllegalStateException}. A tensor buffer lies inside it
     * exactly when it was not copied. It is a plain native segment when the native library
     * made the map ({@link MemorySegment#isMapped()} is then false: use its bytes, not
     * {@code load()}/{@code force()}); the first call makes it, in a shared arena whose close
     * (a handshake with every thread) then comes with the unmapping.
     */
    public Optional<MemorySegment> mapping() {
        return mapping == null ? Optional.empty() : Optional.of(mapping.region());
    }

    /**
     * How many {@code read_at} calls the native reader has made so far, open included; for a
     * mapped file, how many index ranges it copied out of the map. For checking the costs in
     * the class comment.
     */
    public long readAtCalls() throws HurrayException {
        return locked(reader::readAtCalls);
    }

    /**
     * The name of entry {@code index} (name order), without decoding its descriptor: one small
     * read with a lazily read index.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for {@code index >= count()}, or
     *     a read failure
     */
    public String name(long index) throws HurrayException {
        return locked(() -> reader.name(index));
    }

    /**
     * Entry {@code index} in name order ({@code 0..count()-1}); reads no payload.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} for an index out of range;
     *     {@link Status#CORRUPT}, {@link Status#INVALID_ALIGNMENT}, … for a damaged entry
     */
    public FileEntry entry(long index) throws HurrayException {
        return entryIndex.entry(index);
    }

    /**
     * The entry named {@code name} (compared as UTF-8 bytes), found by binary search; reads no
     * payload.
     *
     * @return the entry, or empty when the container has no tensor of that name
     * @throws HurrayException for a damaged index or a read failure
     */
    public Optional<FileEntry> entry(String name) throws HurrayException {
        return entryIndex.entry(name);
    }

    /**
     * Reads the composite stored under {@code name} with all its members (stored under
     * {@code name/role}, docs/spec/hrryfile.md), their payloads read and indices checked.
     *
     * @return a new composite owned by the caller (close it)
     * @throws HurrayException {@link Status#NOT_FOUND}, {@link Status#INVALID_ARGUMENT} (not a
     *     top-level composite), {@link Status#CORRUPT} (a member missing or out of place), and
     *     the failures of reading a tensor
     */
    public Composite readComposite(String name) throws HurrayException {
        return locked(() -> {
            byte[] utf8 = dev.hurray.internal.Utf8.encodeOrNull(name);
            if (utf8 == null) {
                throw new HurrayException(Status.NOT_FOUND, "no composite named \"" + TensorNames.forMessage(name) + "\" in " + source, null);
            }
            return Composite.fromNative(reader.readComposite(utf8), scope);
        });
    }

    /** True if the container holds a tensor named {@code name}. */
    public boolean contains(String name) throws HurrayException {
        return entry(name).isPresent();
    }

    /**
     * Every entry in name order (the whole index, no payload): {@link #count()} entries, each
     * costing two small reads when the index was not loaded at open. The entries are
     * <em>listed</em> ones (see {@link #iterator()}): they hold no native memory.
     */
    public List<FileEntry> entries() throws HurrayException {
        return entryIndex.entries();
    }

    /**
     * The index as a list in name order, read on demand: {@code get(i)} reads entry {@code i}
     * when called (a listed entry, see {@link #iterator()}: no native memory kept; two small
     * reads when the index was not loaded at open) and {@code size()} is {@link #count()}.
     * Nothing is read or kept up front, so a container of a million entries can be sorted,
     * scanned or listed at the cost of the entries the caller keeps. The view is valid while
     * the file is open (then {@link IllegalStateException}) and follows the file's thread
     * rule; a failed read is an {@link UncheckedIOException} whose cause is the
     * {@link HurrayException}.
     *
     * @throws HurrayException {@link Status#LIMIT_EXCEEDED} for more than
     *     {@link Integer#MAX_VALUE} entries (use {@link #entry(long)})
     */
    public List<FileEntry> index() throws HurrayException {
        return entryIndex.index();
    }

    /**
     * Iterates the entries in name order, reading each when it is reached (no payload). Listed
     * entries hold no native memory: each entry's native copy is freed as soon as its fields
     * are read, so iterating a container of a million entries costs the Java objects of the
     * entries the caller keeps, nothing per entry it drops. Reading the tensor of a listed
     * entry ({@link #read(FileEntry)}) finds its index entry again: no read with a loaded
     * index, two small ones otherwise. A failure is thrown from {@code hasNext()}/{@code next()}
     * as an {@link UncheckedIOException} whose cause is the {@link HurrayException}.
     */
    @Override
    public Iterator<FileEntry> iterator() {
        return entryIndex.iterator();
    }

    /** The entries as a sequential, ordered stream (failures as in {@link #iterator()}). */
    public Stream<FileEntry> stream() {
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(iterator(),
                Spliterator.ORDERED | Spliterator.NONNULL | Spliterator.DISTINCT), false);
    }

    // ---------------------------------------------------------------- reading tensors

    /**
     * Reads the tensor named {@code name}.
     *
     * @return a new tensor owned by the caller (close it)
     * @throws HurrayException {@link Status#NOT_FOUND} when there is no such tensor, and the
     *     failures of {@link #read(FileEntry)}
     */
    public Tensor read(String name) throws HurrayException {
        Objects.requireNonNull(name, "name");
        guard.enter();
        try {
            FileEntry cached = entryIndex.cached(name);
            if (cached != null) {
                return readLocked(cached.handle(), cached.descriptor());
            }
            byte[] utf8 = dev.hurray.internal.Utf8.encodeOrNull(name);
            MemorySegment h = utf8 == null ? null : reader.find(utf8);
            if (h == null) {
                throw new HurrayException(Status.NOT_FOUND, "no tensor named \"" + TensorNames.forMessage(name) + "\" in " + source, null);
            }
            try {
                return readLocked(h, null);
            } finally {
                NativeFileEntry.destroy(h); // the tensor does not borrow its entry
            }
        } finally {
            guard.exit();
        }
    }

    /**
     * Reads the tensor of {@code entry}. Through {@link #open}: each buffer is a new native
     * allocation at its declared alignment, filled by positional channel reads, its checksum
     * checked. Through {@link #map}: buffers point into the mapping (read-only, zero copy; see
     * the class comment).
     *
     * @return a new tensor owned by the caller (close it); it outlives this file
     * @throws IllegalArgumentException if {@code entry} came from another file
     * @throws HurrayException {@link Status#CORRUPT} (payload checksum mismatch),
     *     {@link Status#TRUNCATED} (the file shrank), {@link Status#LIMIT_EXCEEDED}
     *     ({@link FileReaderOptions#maxTensorBytes()}), {@link Status#OUT_OF_MEMORY},
     *     {@link Status#TRANSPORT} (the channel threw: the cause; retry)
     */
    public Tensor read(FileEntry entry) throws HurrayException {
        requireMine(entry);
        guard.enter();
        try {
            MemorySegment h = entryIndex.nativeEntry(entry);
            try {
                return readLocked(h, entry.descriptor());
            } finally {
                FileIndex.doneWith(entry, h); // the tensor does not borrow its entry
            }
        } finally {
            guard.exit();
        }
    }

    private Tensor readLocked(MemorySegment entryHandle, TensorDescriptor descriptor) throws HurrayException {
        MemorySegment t = reader.readTensor(entryHandle);
        if (mapping == null) {
            return Tensor.fromNative(t, scope, descriptor);
        }
        mapping.acquire();
        return Tensor.fromNative(t, scope, descriptor, true, mapping::release);
    }

    /**
     * Reads payload {@code buffer} of {@code entry} into the caller's memory instead of a new
     * allocation (for callers that pool buffers); checked as {@link #read(FileEntry)} checks.
     * For a mapped file this is a copy out of the mapping.
     *
     * @param dst writable native memory of at least the payload's length
     * @return the payload's length in bytes (the bytes written at the start of {@code dst})
     * @throws IllegalArgumentException for a heap or read-only {@code dst}, or an entry of
     *     another file
     * @throws HurrayException {@link Status#BUFFER_TOO_SMALL} when {@code dst} is shorter than
     *     the payload, {@link Status#INVALID_ARGUMENT} for a bad buffer index, and the failures
     *     of {@link #read(FileEntry)}
     */
    public long readBuffer(FileEntry entry, int buffer, MemorySegment dst) throws HurrayException {
        requireMine(entry);
        Objects.requireNonNull(dst, "dst");
        if (!dst.isNative() || dst.isReadOnly()) {
            throw new IllegalArgumentException("dst must be writable native memory (allocate it from an Arena)");
        }
        guard.enter();
        try {
            MemorySegment h = entryIndex.nativeEntry(entry);
            try {
                return reader.readBufferInto(h, buffer, dst);
            } finally {
                FileIndex.doneWith(entry, h);
            }
        } finally {
            guard.exit();
        }
    }

    private void requireMine(FileEntry entry) {
        Objects.requireNonNull(entry, "entry");
        if (entry.file() != this) {
            throw new IllegalArgumentException("the entry \"" + TensorNames.forMessage(entry.name()) + "\" belongs to another HurrayFile");
        }
    }

    /** A call on the native reader, made holding the guard (one thread at a time). */
    @FunctionalInterface
    private interface Locked<T> {
        T call() throws HurrayException;
    }

    private <T> T locked(Locked<T> call) throws HurrayException {
        guard.enter();
        try {
            return call.call();
        } finally {
            guard.exit();
        }
    }

    /** Native entries this file holds, plus those handed out that own theirs: for tests of what listing costs. */
    int retainedNativeEntries() {
        return entryIndex.retainedNativeEntries();
    }

    // ---------------------------------------------------------------- metadata, verify

    /**
     * The file-level metadata (written by {@link HurrayFileWriter#metadata}), in key order
     * (UTF-8 byte order): an unmodifiable map of copies of the values. The metadata block is
     * read and checked on first use unless it was loaded with the index.
     *
     * @throws HurrayException {@link Status#CORRUPT} and the other failures of a damaged block
     */
    public Map<String, byte[]> metadata() throws HurrayException {
        Map<String, byte[]> m = new LinkedHashMap<>();
        for (Map.Entry<String, byte[]> e : locked(reader::metadata)) {
            m.put(e.getKey(), e.getValue());
        }
        return Collections.unmodifiableMap(m);
    }

    /** A copy of the value of file metadata {@code key}, if present. */
    public Optional<byte[]> metadata(String key) throws HurrayException {
        Objects.requireNonNull(key, "key");
        return locked(() -> {
            byte[] utf8 = dev.hurray.internal.Utf8.encodeOrNull(key);
            return utf8 == null ? Optional.empty() : Optional.ofNullable(reader.metadataValue(utf8));
        });
    }

    /** The value of file metadata {@code key} decoded as UTF-8, if present. */
    public Optional<String> metadataString(String key) throws HurrayException {
        return metadata(key).map(v -> new String(v, StandardCharsets.UTF_8));
    }

    /**
     * Checks the whole container now: first the index (docs/spec/hrryfile.md §3: index and
     * metadata checksums, every entry, record and descriptor, name order and uniqueness, payload
     * lengths, ranges and alignment, that no two payloads overlap, zero padding, and the
     * composite structure of {@link #checkComposites()}), then every payload against its stored
     * CRC32C, whatever {@link FileReaderOptions#payloadChecks()} says: each payload is read in
     * windows of at most 1 MiB (a {@link #map mapped} file is checked in place), so memory stays
     * one window whatever a tensor's size and {@link FileReaderOptions#maxTensorBytes()} does
     * not apply. Sparse tensors' indices and paged tensors' page tables are then checked by
     * reading those tensors (within {@code maxTensorBytes}). Costs one pass over every payload
     * byte.
     *
     * @throws HurrayException the first problem found ({@link Status#CORRUPT} for a damaged
     *     payload too, naming the tensor; {@link Status#DUPLICATE_NAME},
     *     {@link Status#INVALID_ALIGNMENT}, …), {@link Status#TRUNCATED} when the file shrank, or
     *     {@link Status#LIMIT_EXCEEDED} above {@link FileReaderOptions#maxIndexBytes()} or, for a
     *     sparse or paged tensor, {@link FileReaderOptions#maxTensorBytes()}
     */
    public void verify() throws HurrayException {
        locked(() -> {
            reader.verify();
            reader.verifyPayloads();
            return null;
        });
    }

    /**
     * Checks the structure of every composite in the container from its index, reading no
     * payload (docs/spec/hrryfile.md §2): each top-level head's members are stored under
     * {@code name/role} at the right depth and index, recursively; no composite holds more
     * than 65,536 descriptors; and every entry marked as a member belongs to a composite.
     * {@link #verify()} includes this check. Costs one entry read per entry (none with a
     * loaded index) and one lookup per member, and keeps nothing.
     *
     * @throws HurrayException {@link Status#CORRUPT} naming the first bad entry,
     *     {@link Status#LIMIT_EXCEEDED}, or a failure of reading the index
     */
    public void checkComposites() throws HurrayException {
        locked(() -> {
            reader.checkComposites();
            return null;
        });
    }

    // ---------------------------------------------------------------- close

    /**
     * Destroys the native reader and closes the channel; a mapped file's mapping is released
     * now if no tensor read from it is open, else when the last of them is closed. Tensors
     * already read stay valid. Idempotent.
     *
     * @throws HurrayException {@link Status#TRANSPORT} with the channel's exception as cause if
     *     closing it threw (the file is closed regardless)
     * @throws IllegalStateException if a call is in progress on another thread (the file stays
     *     open)
     */
    @Override
    public void close() throws HurrayException {
        if (!guard.close()) {
            return;
        }
        try {
            reader.close();
        } finally {
            entryIndex.ownedEntries().destroyAll();
            if (mapping != null) {
                mapping.release();
            }
            // The leak cleaner acts once this file is unreachable; it must not run (and release
            // the mapping a second time) while close() does the same.
            java.lang.ref.Reference.reachabilityFence(this);
        }
    }

    /** {@code HurrayFile[model.hrry, mapped]} (or {@code , closed}). */
    @Override
    public String toString() {
        return "HurrayFile[" + source + (mapping != null ? ", mapped" : "") + (guard.isClosed() ? ", closed" : "") + "]";
    }
}
