package dev.hurray.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * A reader per message (Kafka records, request bodies) borrows its tensor ledger's destroy
 * queue from a pool and gives it back on close, so thousands of readers in turn make no more
 * queue areas than the pool keeps; tensors closed after their reader still go.
 */
class LedgerQueuePoolTest {
    @Test
    void readersInTurnShareTheLedgerQueues() throws Exception {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 16).name("r").build();
        Writer w = Writer.toMemory();
        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(new float[16]))) {
            w.write(t);
        }
        w.close();
        byte[] message = w.toByteArray();
        long before = ScratchPool.LEDGER_QUEUES.count();
        for (int i = 0; i < 5_000; i++) {
            try (Reader r = Reader.of(message); Tensor t = r.read()) {
                assertEquals(0f, t.buffer(0).get(ValueLayout.JAVA_FLOAT, 0));
            }
        }
        // A tensor kept past its reader's close is destroyed on its own close.
        Tensor kept;
        try (Reader r = Reader.of(message)) {
            kept = r.read();
        }
        assertEquals("r", kept.descriptor().name().orElseThrow());
        kept.close();
        long made = ScratchPool.LEDGER_QUEUES.count() - before;
        assertTrue(made <= ScratchPool.KEEP, made + " queue areas made for 5,001 readers in turn");
    }
}
