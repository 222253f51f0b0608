package dev.hurray;

import dev.hurray.internal.NativeFileReader;
import dev.hurray.internal.NativePaths;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.FileChannel.MapMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;

/**
 * Opening a container for {@link HurrayFile}'s {@code open} and {@code map}: which reader a
 * path gets (the native library's own positional reads or its own map, for a file of the
 * default file system), and the {@link FileChannel} that takes over when the library cannot
 * (another file system, a refusal to repeat as Java's own exception, a platform without a
 * native map). What each way costs and checks is in {@link HurrayFile}'s class comment.
 */
final class FileOpener {
    private FileOpener() {
    }

    /** {@link HurrayFile#open(Path, FileReaderOptions)}. */
    static HurrayFile open(Path path, FileReaderOptions options) throws IOException {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(options, "options");
        byte[] name = NativePaths.bytes(path);
        if (name != null) {
            NativeFileReader r;
            try {
                r = NativeFileReader.openPath(name, options.toNative());
            } catch (HurrayException e) {
                if (e.status() != Status.NOT_FOUND && e.status() != Status.TRANSPORT) {
                    throw e;
                }
                // The operating system refused the file. Opening it through a channel repeats
                // that as Java's own exception (NoSuchFileException, AccessDeniedException, ...),
                // or, should the file have become readable meanwhile, simply opens it.
                return openChannel(path, options);
            }
            return opened(r, options, path.toString());
        }
        return openChannel(path, options);
    }

    /**
     * Refuses a directory, FIFO or device before a channel opens it: a container is a regular
     * file, and opening a FIFO through a channel would block until a writer comes. A missing
     * file is left to the channel (NoSuchFileException).
     */
    private static void requireRegularIfPresent(Path path) throws HurrayException {
        if (Files.exists(path) && !Files.isRegularFile(path)) {
            throw new HurrayException(Status.INVALID_ARGUMENT, "'" + path + "' is not a regular file (a container is a file)",
                    null);
        }
    }

    private static HurrayFile openChannel(Path path, FileReaderOptions options) throws IOException {
        requireRegularIfPresent(path);
        FileChannel ch = FileChannel.open(path, StandardOpenOption.READ);
        try {
            return open(ch, options, path.toString());
        } catch (IOException | RuntimeException | Error e) {
            try {
                ch.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** {@link HurrayFile#open(FileChannel, FileReaderOptions)}, naming the file {@code source}. */
    static HurrayFile open(FileChannel ch, FileReaderOptions options, String source) throws HurrayException {
        return opened(NativeFileReader.open(ch, ch, options.toNative()), options, source);
    }

    /** A file over a newly opened reader {@code r}, which it destroys if this fails. */
    private static HurrayFile opened(NativeFileReader r, FileReaderOptions options, String source) throws HurrayException {
        try {
            r.setBufferPoolBytes(options.bufferPoolBytes());
        } catch (HurrayException | RuntimeException e) {
            r.close();
            throw e;
        }
        return new HurrayFile(r, null, options.tensorScope(), source);
    }

    /** {@link HurrayFile#map(Path, FileReaderOptions)}. */
    static HurrayFile map(Path path, FileReaderOptions options) throws IOException {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(options, "options");
        byte[] name = NativePaths.bytes(path);
        NativeFileReader r = null;
        if (name != null) {
            try {
                r = NativeFileReader.openMapped(name, options.toNative());
            } catch (HurrayException e) {
                // The operating system refused the file or the map, or this platform has no
                // native map: the channel below maps it, or repeats the refusal as Java's own
                // exception (NoSuchFileException, AccessDeniedException, ...).
                if (e.status() != Status.NOT_FOUND && e.status() != Status.TRANSPORT && e.status() != Status.UNSUPPORTED) {
                    throw e;
                }
            }
        }
        if (r != null) {
            FileMapping m;
            try {
                m = new FileMapping(r.mapping());
            } catch (HurrayException | RuntimeException | Error e) {
                try {
                    r.close();
                } catch (HurrayException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
            return new HurrayFile(r, m, options.tensorScope(), path.toString());
        }
        requireRegularIfPresent(path);
        // Anything the native library could not map maps here, or fails with Java's
        // own exception. Shared: the last tensor, which unmaps, may be closed on another thread.
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            MemorySegment region = size == 0 ? MemorySegment.NULL : ch.map(MapMode.READ_ONLY, 0, size, arena);
            NativeFileReader spanReader = NativeFileReader.openSpan(region, size, options.toNative());
            return new HurrayFile(spanReader, new FileMapping(arena, region), options.tensorScope(), path.toString());
        } catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }
}
