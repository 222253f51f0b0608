package dev.hurray.kafka;

import dev.hurray.FileReaderOptions;
import dev.hurray.FileWriterOptions;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Tensor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * A {@link ClaimCheckStore} in a directory that every producer and consumer mounts at the same
 * path (a local directory for one machine, NFS or another shared file system for many).
 *
 * <p>Each tensor becomes one file {@code TOPIC-UUID.hrry} (the topic's characters other than
 * letters, digits, {@code . _ -} replaced by {@code _}), written by {@link HurrayFile#create}:
 * to a hidden temporary file first, with payload checksums, forced to storage and renamed into
 * place, so a file that is visible is complete. Consumers {@link HurrayFile#open open} it and
 * read the tensor with positional reads into its own memory, never a memory map: a file on
 * shared storage that another process truncates is then refused with the container's status
 * ({@code INVALID_MAGIC}, {@code TRUNCATED}) instead of crashing the consumer's JVM.
 *
 * <h2>Retention</h2>
 * Nothing here deletes files by itself. Keep each file at least as long as the topic keeps the
 * record that names it plus the longest consumer lag you tolerate; then delete it, e.g. with
 * {@link #purgeOlderThan(Duration)} from a scheduled job (or a {@code find -mmin +N -delete}).
 * A consumer that reads a reference after its file was deleted gets a
 * {@link org.apache.kafka.common.errors.SerializationException} at once (status
 * {@code NOT_FOUND}), never a hang. Deleting a file while a consumer reads it is safe on POSIX
 * systems (the reader keeps the open file); a file truncated or rewritten under a consumer is
 * refused with the container's status ({@code INVALID_MAGIC}, {@code TRUNCATED},
 * {@code CORRUPT}), never a crash.
 *
 * <p>Thread-safe.
 */
public final class SharedDirectoryStore implements ClaimCheckStore {
    private static final Pattern KEY = Pattern.compile("[A-Za-z0-9._-]{1,255}");
    private static final Pattern UNSAFE = Pattern.compile("[^A-Za-z0-9._-]");

    private final Path dir;
    private final URI uri;

    /**
     * A store in {@code dir}, which must exist (it is not created).
     *
     * @throws UncheckedIOException if {@code dir} is not an existing directory
     */
    public SharedDirectoryStore(Path dir) {
        Objects.requireNonNull(dir, "dir");
        Path abs = dir.toAbsolutePath().normalize();
        if (!Files.isDirectory(abs)) {
            throw new UncheckedIOException(new NoSuchFileException(abs.toString(), null,
                    "the claim-check directory does not exist (create it, shared by all producers and consumers)"));
        }
        this.dir = abs;
        this.uri = abs.toUri();
    }

    /** The directory (absolute). */
    public Path directory() {
        return dir;
    }

    /** {@code file:///…/} of the directory. */
    @Override
    public URI uri() {
        return uri;
    }

    @Override
    public String put(String topic, String tensorName, Tensor tensor) throws IOException {
        String safe = UNSAFE.matcher(topic == null ? "tensor" : topic).replaceAll("_");
        if (safe.length() > 200) {
            safe = safe.substring(0, 200);
        }
        String key = safe + "-" + UUID.randomUUID() + ".hrry";
        try (HurrayFileWriter w = HurrayFile.create(dir.resolve(key), FileWriterOptions.defaults().withPayloadChecksums(true))) {
            w.add(tensorName, tensor);
            w.finish();
        }
        return key;
    }

    @Override
    public HurrayFile open(ClaimCheckReference reference, FileReaderOptions options) throws IOException {
        return HurrayFile.open(regularFile(path(reference.file())), options);
    }

    /**
     * {@code p} if it is a regular file of this directory itself: a symbolic link (which could
     * lead a consumer to any file the process can read), a directory or a device is refused.
     */
    private Path regularFile(Path p) throws IOException {
        java.nio.file.attribute.BasicFileAttributes a = Files.readAttributes(p,
                java.nio.file.attribute.BasicFileAttributes.class, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        if (a.isSymbolicLink() || !a.isRegularFile()) {
            throw new java.nio.file.FileSystemException(p.toString(), null, (a.isSymbolicLink() ? "a symbolic link"
                    : "not a regular file") + " in the claim-check directory; only files the store wrote are opened");
        }
        return p;
    }

    /**
     * The path of a file key.
     *
     * @throws IllegalArgumentException for a key with characters other than letters, digits,
     *     {@code . _ -}, longer than 255, or a dot-only name: it could name a file outside the
     *     directory
     */
    public Path path(String key) {
        if (!KEY.matcher(key).matches() || key.equals(".") || key.equals("..")) {
            throw new IllegalArgumentException("\"" + key + "\" is not a file key of this store");
        }
        return dir.resolve(key);
    }

    /**
     * Deletes the store's files ({@code *.hrry}, not hidden temporaries of writes in progress)
     * last modified more than {@code age} ago; see the class comment for how long to keep them.
     *
     * @return how many files were deleted
     * @throws IOException if the directory cannot be listed (files that vanish meanwhile are skipped)
     */
    public int purgeOlderThan(Duration age) throws IOException {
        FileTime cutoff = FileTime.from(Instant.now().minus(age));
        int n = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "[!.]*.hrry")) {
            for (Path p : files) {
                try {
                    if (Files.getLastModifiedTime(p).compareTo(cutoff) < 0 && Files.deleteIfExists(p)) {
                        n++;
                    }
                } catch (NoSuchFileException gone) {
                    // deleted by another purger meanwhile
                }
            }
        }
        return n;
    }

    @Override
    public String toString() {
        return "SharedDirectoryStore[" + dir + "]";
    }
}
