package dev.hurray;

import dev.hurray.internal.PendingTempFiles;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;

/**
 * An output file that is never seen half-written. Bytes go to a temporary file
 * {@code .NAME.RANDOM.tmp} in the target's directory; {@link #commit()} forces them to disk and
 * renames the file over the target atomically; {@link #close()} without a commit deletes the
 * temporary file and leaves the target as it was (absent, or its previous content).
 *
 * <p>While it exists, the temporary file is registered with a process-wide shutdown hook that
 * deletes it if the JVM is ended by a signal (SIGTERM, Ctrl-C) before the rename. The temporary
 * file gets the permissions any new file gets (the process's umask), unlike
 * {@link Files#createTempFile}, so the renamed output looks like one written in place.
 *
 * <p>Two ways to use it: {@link #write(Path, Body)} when one callback writes the whole file, or
 * {@link #create(Path)} when a writer produces it piece by piece:
 * <pre>{@code
 * try (AtomicOutput out = AtomicOutput.create(target)) {
 *     out.channel().write(bytes);
 *     out.commit();            // without it, close() deletes the temporary file
 * }
 * }</pre>
 *
 * <p><b>Errors.</b> {@link #create(Path)} refuses a target the final rename must not replace: a
 * directory, or an existing file that is not a regular file (a device such as {@code /dev/null},
 * a FIFO, a socket; followed through symbolic links). A file system that cannot rename
 * atomically is an {@link IOException}.
 *
 * <p><b>Threads.</b> Not thread-safe; the channel may be handed to one writer that uses it from
 * one thread.
 */
public final class AtomicOutput implements AutoCloseable {
    private static final SecureRandom RANDOM = new SecureRandom();

    /** The body that writes a whole file's bytes, for {@link #write(Path, Body)}. */
    @FunctionalInterface
    public interface Body {
        /**
         * Writes the file's bytes.
         *
         * @param out the temporary file's channel, positioned at 0; do not close it
         * @throws IOException to abandon the file (the target is then unchanged)
         */
        void write(FileChannel out) throws IOException;
    }

    private final Path target;
    private final Path tmp;
    private final FileChannel channel;
    private boolean done;

    private AtomicOutput(Path target, Path tmp, FileChannel channel) {
        this.target = target;
        this.tmp = tmp;
        this.channel = channel;
    }

    /**
     * Writes {@code target} atomically with one callback: creates the temporary file, runs
     * {@code body}, commits. On any failure the temporary file is deleted and the target is
     * unchanged.
     *
     * @throws IOException whatever creating, writing or renaming threw (e.g.
     *     {@link java.nio.file.NoSuchFileException} for a missing directory), or a refused target
     *     as for {@link #create(Path)}
     */
    public static void write(Path target, Body body) throws IOException {
        try (AtomicOutput out = create(target)) {
            body.write(out.channel());
            out.commit();
        }
    }

    /**
     * Creates the temporary file next to {@code target}.
     *
     * @throws IOException if {@code target} is a directory or another non-regular file (a
     *     device, FIFO or socket), or its directory cannot be written
     */
    public static AtomicOutput create(Path target) throws IOException {
        Path abs = target.toAbsolutePath();
        if (abs.getParent() == null || abs.getFileName() == null) {
            throw new IOException("not a file path: " + target);
        }
        if (Files.isDirectory(abs)) {
            throw new FileAlreadyExistsException(target.toString(), null, "is a directory");
        }
        if (Files.exists(abs) && !Files.isRegularFile(abs)) {
            // The rename would replace the device, FIFO or socket itself (as root, /dev/null
            // would become a regular file), so refuse before writing anything.
            throw new FileAlreadyExistsException(target.toString(), null,
                    "exists and is not a regular file (a device, FIFO or socket is never replaced)");
        }
        Path tmp = createTemp(abs);
        try {
            return new AtomicOutput(abs, tmp, FileChannel.open(tmp, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING));
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            PendingTempFiles.unregister(tmp);
            throw e;
        }
    }

    private static Path createTemp(Path target) throws IOException {
        Path dir = target.getParent();
        String base = target.getFileName().toString();
        if (base.length() > 200) {
            base = base.substring(0, 200); // room for the suffix within a 255-byte name
        }
        for (int attempt = 0; ; attempt++) {
            Path tmp = dir.resolve("." + base + "." + Long.toUnsignedString(RANDOM.nextLong(), 36) + ".tmp");
            try {
                Path created = Files.createFile(tmp);
                PendingTempFiles.register(created);
                return created;
            } catch (FileAlreadyExistsException e) {
                if (attempt == 100) {
                    throw e;
                }
            }
        }
    }

    /** The target path (absolute). */
    public Path target() {
        return target;
    }

    /** The temporary file the bytes go to until {@link #commit()}. */
    public Path temporaryFile() {
        return tmp;
    }

    /** The temporary file's channel (open for writing until commit or close). */
    public FileChannel channel() {
        return channel;
    }

    /**
     * Forces the bytes to disk, closes the channel and renames the temporary file over the
     * target. Call once, after the last byte was written.
     *
     * @throws IOException if forcing or renaming fails (the temporary file is then deleted by
     *     {@link #close()})
     */
    public void commit() throws IOException {
        commit(true);
    }

    /** {@link #commit()}, forcing the bytes to disk first only when {@code force}. */
    void commit(boolean force) throws IOException {
        if (channel.isOpen()) {
            if (force) {
                channel.force(true);
            }
            channel.close();
        }
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            throw new IOException(target + ": the file system cannot rename atomically", e);
        }
        done = true;
        PendingTempFiles.unregister(tmp);
    }

    /**
     * Without a successful {@link #commit()}: closes the channel and deletes the temporary file.
     * Idempotent; does nothing after a commit.
     */
    @Override
    public void close() throws IOException {
        if (done) {
            return;
        }
        done = true;
        try {
            channel.close();
        } finally {
            Files.deleteIfExists(tmp);
            PendingTempFiles.unregister(tmp);
        }
    }
}
