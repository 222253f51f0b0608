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
 * With {@code lookup}, {@code open} and {@code map} look the first tensor up by name
 * ({@link HurrayFile#entry(String)}) instead of counting: open + lookup + close ({@code raw}
 * is the same either way). Each returns the tensor count or entry index it saw ({@code raw}: 0).
 */
public final class FileOpens {
    /** Implementations, as named in benchmark parameters. */
    public static final String RAW = "raw", OPEN = "open", MAP = "map";
    private static final int TRAILER_BYTES = 72;

    private final String impl;
    private final Path file;
    private final boolean lookup;
    private final String first = Containers.name(0);
    private final ByteBuffer trailer = ByteBuffer.allocateDirect(TRAILER_BYTES);

    /** Open + count + close. */
    public FileOpens(String impl, Path file) {
        this(impl, file, false);
    }

    /** Open + count + close, or with {@code lookup} open + {@code entry(name)} + close. */
    public FileOpens(String impl, Path file, boolean lookup) {
        if (!impl.equals(RAW) && !impl.equals(OPEN) && !impl.equals(MAP)) {
            throw new IllegalArgumentException("unknown implementation " + impl);
        }
        this.impl = impl;
        this.file = file;
        this.lookup = lookup;
    }

    /** Opens, counts (or looks the first tensor up) and closes once. */
    public long openOnce() throws IOException {
        switch (impl) {
            case OPEN -> {
                try (HurrayFile f = HurrayFile.open(file)) {
                    return use(f);
                }
            }
            case MAP -> {
                try (HurrayFile f = HurrayFile.map(file)) {
                    return use(f);
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

    private long use(HurrayFile f) throws IOException {
        return lookup ? f.entry(first).orElseThrow().index() : f.count();
    }
}
