package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Hurray's channel transport: {@code Writer.of(SocketChannel)} sends one float32 tensor of
 * {@code size} bytes again and again (its payload wrapped, not copied);
 * {@code Reader.of(SocketChannel)} receives each into the native buffer the reader allocates,
 * and the tensor is closed at once. With the reader's default options (which, once the buffer
 * pool exists, reuse closed tensors' memory), or with the pool turned off.
 */
final class HurrayLoopback extends Loopback {
    private final Reader reader;

    /**
     * @param poolOff read with the reader's buffer pool turned off
     *     ({@code withBufferPoolBytes(0)})
     */
    HurrayLoopback(int size, boolean poolOff) throws IOException {
        super(size);
        ReaderOptions options = ReaderOptions.defaults();
        if (poolOff) {
            options = options.withBufferPoolBytes(0);
        }
        reader = Reader.of(receiverChannel, options);
        start();
    }

    @Override
    protected void send() throws IOException {
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, size / 4);
        try (Arena arena = Arena.ofConfined(); Writer writer = Writer.of(senderChannel)) {
            MemorySegment payload = arena.allocate(size, 64);
            Payloads.fill(payload);
            try (Tensor t = Tensor.wrap(payload, d)) {
                while (!stopping()) {
                    writer.write(t);
                }
            }
        }
    }

    @Override
    protected long receive(boolean check) throws IOException {
        try (Tensor t = reader.read()) {
            if (t == null) {
                throw new EOFException("the stream ended");
            }
            MemorySegment b = t.buffer(0);
            if (check) {
                check(b);
            }
            return b.byteSize();
        }
    }

    @Override
    protected void closeReceiver() throws IOException {
        reader.close();
    }
}
