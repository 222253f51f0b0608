package dev.hurray.kafka;

import dev.hurray.HurrayException;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;

/**
 * Encodes one tensor per record with one long-lived {@link Writer} per thread, instead of a
 * new writer per record (whose set-up costs several times the encoding of a 3 KiB tensor).
 *
 * <p>A record is a whole stream: stream header, one item, end-of-stream marker. Before each
 * record the writer is {@link Writer#reset() reset}, so the core library writes all three for
 * every record exactly as a new writer would; nothing of the format is known here.
 *
 * <p>Not thread-safe: one encoder per thread. A failed write discards the encoder.
 */
final class RecordEncoder implements AutoCloseable {
    private final Writer writer;

    RecordEncoder(WriterOptions options) throws HurrayException {
        this.writer = Writer.toMemory(options);
    }

    /** The record of {@code tensor}: header, its item, end marker. */
    byte[] encode(Tensor tensor) throws HurrayException {
        writer.reset();
        writer.write(tensor);
        writer.finish();
        return writer.toByteArray();
    }

    @Override
    public void close() {
        try {
            writer.close();
        } catch (HurrayException | RuntimeException e) {
            // Nothing is waiting for the writer's output; its memory is freed regardless.
        }
    }
}
