package dev.hurray.cli.io;

import dev.hurray.FileReaderOptions;
import dev.hurray.ReaderOptions;

/**
 * The limits with which the command reads the user's streams and containers: the library's
 * defaults, except that descriptors may be as large as the format allows
 * ({@link ReaderOptions#MAX_DESCRIPTOR_BYTES}, 16 MiB), so that every file or stream a writer
 * made can be inspected, converted and verified. A descriptor's bytes must arrive before they
 * are held, so the larger limit costs memory only for input that carries it.
 */
public final class ReadLimits {
    private ReadLimits() {
    }

    /** Reader options for streams (files, stdin, sockets). */
    public static ReaderOptions streams() {
        return ReaderOptions.defaults().withMaxDescriptorBytes(ReaderOptions.MAX_DESCRIPTOR_BYTES);
    }

    /** Reader options for containers. */
    public static FileReaderOptions files() {
        return FileReaderOptions.defaults().withMaxDescriptorBytes(ReaderOptions.MAX_DESCRIPTOR_BYTES);
    }
}
