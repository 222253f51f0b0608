package dev.hurray.bench;

import dev.hurray.HurrayFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Opening a container and closing it again, one operation each (warm page cache):
 * <ul>
 *   <li>{@code raw}: {@code FileChannel.open}, {@code size()}, a positional read of the
 *       72-byte trailer (docs/spec/hrryfile.md §1.6), close: the floor for any format that
 *       finds its index from a trailer;
 *   <li>{@code open}: {@link HurrayFile#open(Path)}, {@code count()}, close;
 *   <li>{@code map}: {@link HurrayFile#map(Path)}, {@code count()}, close (maps and unmaps the
 *       whole file).
 * </ul>
 * Each returns the tensor count it saw ({@code raw}: 0).
 */
public final class FileOpens {
    /** Implementations, as named in benchmark parameters. */
    public static final String RAW = "raw", OPEN = "open", MAP = "map";
    private static final int TRAILER_BYTES = 72;

    private final String impl;
    private final Path file;
    private final ByteBuffer trailer = ByteBuffer.allocateDirect(TRAILER_BYTES);

    public FileOpens(String impl, Path file) {
        if (!impl.equals(RAW) && !impl.equals(OPEN) && !impl.equals(MAP)) {
            throw new IllegalArgumentException("unknown implementation " + impl);
        }
        this.impl = impl;
        this.file = file;
    }

    /** Opens, counts and closes once. */
    public long openOnce() throws IOException {
        switch (impl) {
            case OPEN -> {
                try (HurrayFile f = HurrayFile.open(file)) {
                    return f.count();
                }
            }
            case MAP -> {
                try (HurrayFile f = HurrayFile.map(file)) {
                    return f.count();
                }
            }
            default -> {
                try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                    long at = ch.size() - TRAILER_BYTES;
                    trailer.clear();
                    while (trailer.hasRemaining()) {
                        if (ch.read(trailer, at + trailer.position()) < 0) {
                            throw new IOException("short file");
                        }
                    }
                    return 0;
                }
            }
        }
    }
}
