package dev.hurray.internal;

import java.io.File;
import java.nio.charset.Charset;
import java.nio.file.FileSystems;
import java.nio.file.Path;

/**
 * A {@link Path} as the bytes the operating system takes for it, for native calls that open a
 * file themselves ({@code hurray_file_reader_open_path}).
 *
 * <p>On Unix the JDK's own paths are bytes encoded with the platform's file-name charset
 * ({@code sun.jnu.encoding}), so encoding a path's string with that charset gives back the
 * bytes the JDK would pass to {@code open(2)}, with one exception: a name read from a directory
 * that is not valid in that charset shows U+FFFD in its string, which no longer encodes to the
 * same bytes. Such a path gets {@code null}. Elsewhere (Windows: UTF-16 names the native side would need as
 * UTF-8, with unpaired surrogates allowed) and for other file systems there are no such bytes,
 * and {@link #bytes} answers {@code null}: the caller then uses a Java channel.
 */
public final class NativePaths {
    /** The file-name charset, or null when native paths are not used on this platform. */
    private static final Charset NAMES = namesCharset();

    private NativePaths() {
    }

    private static Charset namesCharset() {
        if (File.separatorChar != '/') {
            return null;
        }
        try {
            return Charset.forName(System.getProperty("sun.jnu.encoding", "UTF-8"));
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * The bytes of {@code path} as the operating system takes them, or {@code null} when the
     * path is not a file of the default file system on Unix, is empty, or holds U+FFFD.
     */
    public static byte[] bytes(Path path) {
        if (NAMES == null || path.getFileSystem() != FileSystems.getDefault()) {
            return null;
        }
        // Absolute: the library resolves a relative path against the process's working
        // directory, Java against user.dir, and the two can differ.
        String s = path.toAbsolutePath().toString();
        return s.isEmpty() || s.indexOf('\uFFFD') >= 0 ? null : s.getBytes(NAMES);
    }
}
