package dev.hurray.bench;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;

/**
 * Arrow Java IPC over the same loopback: {@code ArrowStreamWriter} on the sender's channel
 * writes the same batch again and again; {@code ArrowStreamReader} loads each batch into its
 * (reused) root. The allocator is Arrow's default (netty-pooled, arrow-memory-netty).
 */
final class ArrowLoopback extends Loopback {
    private final BufferAllocator allocator = new RootAllocator();
    private final ArrowStreamReader reader;

    ArrowLoopback(int size) throws IOException {
        super(size);
        reader = new ArrowStreamReader(receiverChannel, allocator);
        start();
    }

    @Override
    protected void send() throws IOException {
        try (BufferAllocator a = new RootAllocator();
                VectorSchemaRoot root = ArrowSupport.patternRoot(a, size);
                ArrowStreamWriter writer = new ArrowStreamWriter(root, null, senderChannel)) {
            writer.start();
            while (!stopping()) {
                writer.writeBatch();
            }
        }
    }

    @Override
    protected long receive(boolean check) throws IOException {
        if (!reader.loadNextBatch()) {
            throw new EOFException("the stream ended");
        }
        MemorySegment data = ArrowSupport.data(reader.getVectorSchemaRoot());
        if (check) {
            check(data);
        }
        return data.byteSize();
    }

    @Override
    protected void closeReceiver() throws IOException {
        try {
            reader.close(false);
        } finally {
            allocator.close();
        }
    }
}
