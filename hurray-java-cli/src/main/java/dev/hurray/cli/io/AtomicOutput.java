package dev.hurray.cli.io;

import dev.hurray.internal.PendingTempFiles;
import dev.hurray.cli.foreign.AtomicFile;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * An output file that is never seen half-written, for writers that produce it piece by piece
 * (the HRRYFILE and stream sinks): bytes go to {@code .NAME.RANDOM.tmp} in the target's
 * directory; {@link #commit()} forces them to disk and renames the file over the target
 * atomically; {@link #close()} without a commit deletes the temporary file and leaves the
 * target as it was. Same rules as {@link dev.hurray.cli.foreign.AtomicFile}, which takes the
 * whole body as one callback; the temporary file is likewise registered with
 * {@link PendingTempFiles} until it is renamed or deleted, so a process ended by
 * a signal leaves none behind.
 *
 * <p>Not thread-safe; the channel may be handed to one writer that uses it from one thread.
 */
public final class AtomicOutput implements AutoCloseable {
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
     * Creates the temporary file next to {@code target}.
     *
     * @throws IOException if {@code target} is a directory or another non-regular file (a device,
     *     FIFO or socket), or its directory cannot be written
     */
    public static AtomicOutput create(Path target) throws IOException {
        Path abs = target.toAbsolutePath();
        AtomicFile.checkReplaceable(target, abs);
        Path tmp = AtomicFile.createTemp(abs);
        try {
            return new AtomicOutput(abs, tmp, FileChannel.open(tmp, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING));
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            PendingTempFiles.unregister(tmp);
            throw e;
        }
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
        if (channel.isOpen()) {
            channel.force(true);
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

    /** Without a successful {@link #commit()}: closes the channel and deletes the temporary file. Idempotent. */
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
