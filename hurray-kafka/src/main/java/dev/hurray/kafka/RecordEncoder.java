package dev.hurray.kafka;

import dev.hurray.HurrayException;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.Arrays;

/**
 * Encodes one tensor per record with one long-lived {@link Writer} per thread, instead of a
 * new writer per record (whose set-up costs several times the encoding of a 3 KiB tensor).
 *
 * <p>A record must be a whole stream: stream header, one item, end-of-stream marker. The
 * long-lived writer emits the header once, with its first item, and then one item per write; so
 * each record is the header, the bytes the writer emitted for that tensor, and the end marker.
 * Header and end marker are not spelled out here: they are learnt from the core library when
 * the encoder is made (an empty stream is header plus end marker; the first of two identical
 * writes is header plus item, the second the item alone), and the encoder checks that header,
 * item and end marker put together equal what a fresh writer produces for the same tensor. If
 * that check fails, {@link #create} returns null and the caller encodes with a fresh writer per
 * record. The bytes of every item are the core library's; nothing of the format is written here.
 *
 * <p>Not thread-safe: one encoder per thread. A failed write discards the encoder.
 */
final class RecordEncoder implements AutoCloseable {
    /** The bytes the writer hands over; reset before each tensor. */
    private static final class Capture implements WritableByteChannel {
        byte[] buf = new byte[8192];
        int size;

        @Override
        public int write(ByteBuffer src) {
            int n = src.remaining();
            if (size + n > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + n));
            }
            src.get(buf, size, n);
            size += n;
            return n;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }

    private static final int KEEP_BYTES = 4 << 20;

    private final Capture capture;
    private final Writer writer;
    private final byte[] header;
    private final byte[] end;

    private RecordEncoder(Capture capture, Writer writer, byte[] header, byte[] end) {
        this.capture = capture;
        this.writer = writer;
        this.header = header;
        this.end = end;
    }

    /** An encoder, or null when the long-lived writer's output cannot be split into records. */
    static RecordEncoder create(WriterOptions options) throws HurrayException {
        // One record per write: the writer must hand each tensor to the capture at once.
        options = options.withBatchBytes(0);
        byte[] empty;
        try (Writer w = Writer.toMemory(options)) {
            w.finish();
            empty = w.toByteArray();
        }
        Capture capture = new Capture();
        Writer writer = Writer.of(capture, options);
        boolean ok = false;
        try (Tensor probe = Tensor.of(new byte[] {42}, 1)) {
            writer.write(probe);
            byte[] first = Arrays.copyOf(capture.buf, capture.size);
            capture.size = 0;
            writer.write(probe);
            byte[] item = Arrays.copyOf(capture.buf, capture.size);
            capture.size = 0;
            int headerLength = first.length - item.length;
            if (headerLength <= 0 || headerLength >= empty.length
                    || !Arrays.equals(first, headerLength, first.length, item, 0, item.length)) {
                return null;
            }
            byte[] header = Arrays.copyOf(first, headerLength);
            byte[] end = Arrays.copyOfRange(empty, headerLength, empty.length);
            byte[] reference = Records.encode(probe, options);
            RecordEncoder enc = new RecordEncoder(capture, writer, header, end);
            if (!Arrays.equals(enc.assemble(item, item.length), reference)
                    || !Arrays.equals(empty, 0, headerLength, header, 0, headerLength)) {
                return null;
            }
            ok = true;
            return enc;
        } finally {
            if (!ok) {
                writer.close();
            }
        }
    }

    /** The record of {@code tensor}: header, its item, end marker. */
    byte[] encode(Tensor tensor) throws HurrayException {
        capture.size = 0;
        writer.write(tensor);
        byte[] r = assemble(capture.buf, capture.size);
        if (capture.buf.length > KEEP_BYTES) {
            capture.buf = new byte[8192];
        }
        return r;
    }

    private byte[] assemble(byte[] item, int length) {
        byte[] r = new byte[header.length + length + end.length];
        System.arraycopy(header, 0, r, 0, header.length);
        System.arraycopy(item, 0, r, header.length, length);
        System.arraycopy(end, 0, r, header.length + length, end.length);
        return r;
    }

    @Override
    public void close() {
        try {
            writer.close();
        } catch (HurrayException | RuntimeException e) {
            // Nothing is waiting for the writer's end marker; its memory is freed regardless.
        }
    }
}
