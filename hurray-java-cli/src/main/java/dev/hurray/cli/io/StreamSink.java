package dev.hurray.cli.io;

import dev.hurray.AtomicOutput;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import dev.hurray.formats.ForeignFormatException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.Map;

/**
 * Writes a Hurray stream, with payload checksums, to a file ({@code .hrrys}, atomically) or to
 * a channel (a socket for {@code send}). File-level metadata goes first, as a
 * {@link StreamMetadata} item; a tensor named {@value StreamMetadata#NAME} is refused.
 */
public final class StreamSink implements Sink {
    private final AtomicOutput file;
    private final WritableByteChannel channel;
    private final Writer writer;
    private boolean begun;
    private boolean committed;

    private StreamSink(AtomicOutput file, WritableByteChannel channel, Writer writer) {
        this.file = file;
        this.channel = channel;
        this.writer = writer;
    }

    /** A stream file at {@code target}, written to a temporary file until {@link #commit()}. */
    public static StreamSink toFile(Path target) throws IOException {
        AtomicOutput out = AtomicOutput.create(target);
        try {
            return new StreamSink(out, out.channel(), Writer.of(out.channel(), WriterOptions.defaults().withPayloadChecksums(true)));
        } catch (IOException | RuntimeException e) {
            out.close();
            throw e;
        }
    }

    /** A stream on {@code channel} (blocking); {@link #close()} closes the channel. */
    public static StreamSink toChannel(WritableByteChannel channel) throws IOException {
        return new StreamSink(null, channel, Writer.of(channel, WriterOptions.defaults().withPayloadChecksums(true)));
    }

    @Override
    public void begin(Map<String, byte[]> metadata) throws IOException {
        if (begun) {
            throw new IllegalStateException("begin called twice");
        }
        begun = true;
        if (!metadata.isEmpty()) {
            try {
                writer.metadata(metadata); // the stream-metadata frame (docs/spec/stream.md §Stream metadata)
            } catch (dev.hurray.HurrayException e) {
                throw new ForeignFormatException("the file metadata (" + metadata.size() + " entries) does not fit a "
                        + "stream's metadata frame (at most 256 entries, keys up to 256 bytes, values up to 64 KiB): "
                        + e.getMessage(), e);
            }
        }
    }

    @Override
    public void accept(Item item) throws IOException {
        if (item.name().equals(StreamMetadata.NAME)) {
            throw new ForeignFormatException("a tensor named '" + StreamMetadata.NAME + "' cannot be sent in a stream: "
                    + "the name marks the stream's file-metadata item");
        }
        writer.write(item.descriptor(), item.payloads().toArray(MemorySegment[]::new));
    }

    @Override
    public void commit() throws IOException {
        writer.finish();
        if (file != null) {
            file.commit();
        }
        writer.close();
        committed = true;
    }

    /**
     * Without a commit: closes the channel <em>before</em> the writer, so that the writer cannot
     * write the end-of-stream marker and a receiver sees a truncated stream, never a clean end
     * of a partial one; a stream file's temporary file is deleted.
     */
    @Override
    public void close() throws IOException {
        if (committed) {
            return;
        }
        committed = true;
        try {
            if (file != null) {
                file.close();
            } else {
                channel.close();
            }
        } finally {
            try {
                writer.close();
            } catch (IOException expected) {
                // The channel is closed: finishing fails, as intended.
            }
        }
    }
}
