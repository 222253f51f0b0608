package dev.hurray.cli.foreign;

import dev.hurray.internal.PendingTempFiles;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Writes an output file so that it is never seen half-written: the bytes go to a temporary file
 * in the target's directory ({@code .NAME.RANDOM.tmp}), are forced to disk, and the temporary
 * file is then renamed over the target atomically. On any failure the temporary file is
 * deleted and the target is left as it was (absent, or its previous content). While it exists,
 * the temporary file is registered with {@link PendingTempFiles}, whose shutdown hook deletes it if the
 * process is ended by a signal (SIGTERM, Ctrl-C) before the rename.
 */
public final class AtomicFile {
    /** The body that writes the file's bytes. */
    @FunctionalInterface
    public interface Body {
        void write(FileChannel out) throws IOException;
    }

    private AtomicFile() {
    }

    /**
     * Writes {@code target} atomically.
     *
     * @throws IOException whatever creating, writing or renaming threw (e.g.
     *                     {@link java.nio.file.NoSuchFileException} for a missing directory);
     *                     the target is then unchanged
     */
    public static void write(Path target, Body body) throws IOException {
        Path abs = target.toAbsolutePath();
        checkReplaceable(target, abs);
        Path tmp = createTemp(abs);
        boolean done = false;
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                body.write(ch);
                ch.force(true);
            }
            try {
                Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException(target + ": the file system cannot rename atomically", e);
            }
            done = true;
            PendingTempFiles.unregister(tmp);
        } finally {
            if (!done) {
                Files.deleteIfExists(tmp);
                PendingTempFiles.unregister(tmp);
            }
        }
    }

    /**
     * Refuses a target the final rename must not replace: a directory, or an existing file that
     * is not a regular file (a device such as {@code /dev/null}, a FIFO, a socket; followed
     * through symbolic links), which the rename would replace by a regular file.
     *
     * @param target the path as given, for the message
     * @param abs    its absolute form
     * @throws IOException naming the target and why
     */
    public static void checkReplaceable(Path target, Path abs) throws IOException {
        if (Files.isDirectory(abs)) {
            throw new IOException(target + ": is a directory");
        }
        if (Files.exists(abs) && !Files.isRegularFile(abs)) {
            throw new IOException(target + ": exists and is not a regular file (a device, FIFO or socket is never replaced)");
        }
    }

    /**
     * Creates {@code .NAME.RANDOM.tmp} next to {@code target} (an absolute path). Unlike
     * {@link Files#createTempFile}, which makes the file readable by its owner only, the file
     * gets the permissions any new file gets (the process's umask), so the renamed output looks
     * like one written in place. The file is registered with {@link PendingTempFiles} (deleted at JVM
     * shutdown); the caller unregisters it once it is renamed into place or deleted.
     */
    public static Path createTemp(Path target) throws IOException {
        Path dir = target.getParent();
        for (int attempt = 0; ; attempt++) {
            Path tmp = dir.resolve("." + target.getFileName() + "." + Long.toUnsignedString(RANDOM.nextLong(), 36) + ".tmp");
            try {
                Path created = Files.createFile(tmp);
                PendingTempFiles.register(created);
                return created;
            } catch (java.nio.file.FileAlreadyExistsException e) {
                if (attempt == 100) {
                    throw e;
                }
            }
        }
    }

    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();
}
