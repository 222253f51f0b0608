package dev.hurray.cli.io;

import dev.hurray.FileWriterOptions;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;

/**
 * Writes an HRRYFILE container with {@link HurrayFile#create}: default writer options (payload
 * checksums on, 64-byte minimum payload alignment, forced to storage at finish), tensors added
 * in the order they arrive, file metadata from {@link #begin}. The container goes to a
 * temporary file that {@link #commit()} ({@link HurrayFileWriter#finish()}) renames into place;
 * closed without a commit, nothing is left at the target.
 */
public final class HrryFileSink implements Sink {
    private final HurrayFileWriter writer;

    private HrryFileSink(HurrayFileWriter writer) {
        this.writer = writer;
    }

    /**
     * A container at {@code target}.
     *
     * @throws IOException if the temporary file cannot be created (missing directory, a directory
     *     at the target, no permission)
     */
    public static HrryFileSink toFile(Path target) throws IOException {
        return toFile(target, true);
    }

    /**
     * A container at {@code target}; {@code sync} false skips forcing it to storage at finish
     * (for scratch files, such as the demo's).
     */
    public static HrryFileSink toFile(Path target, boolean sync) throws IOException {
        return new HrryFileSink(HurrayFile.create(target, FileWriterOptions.defaults().withSyncOnFinish(sync)));
    }

    @Override
    public void begin(Map<String, byte[]> metadata) throws IOException {
        for (Map.Entry<String, byte[]> e : metadata.entrySet()) {
            writer.metadata(e.getKey(), e.getValue());
        }
    }

    @Override
    public void accept(Item item) throws IOException {
        writer.add(item.descriptor(), item.payloads().toArray(MemorySegment[]::new));
    }

    @Override
    public void commit() throws IOException {
        writer.finish();
    }

    @Override
    public void close() throws IOException {
        writer.close();
    }
}
