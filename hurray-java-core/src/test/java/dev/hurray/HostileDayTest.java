package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An input an outside attack on the writer found mishandled: a heap payload with a descriptor
 * too large for the batch area is written (it reached the native encoder as address 0). A copy
 * from a closed source is in {@code PayloadPoolTest}.
 */
class HostileDayTest {
    @Test
    void aHeapPayloadWithMetadataLargerThanTheBatchAreaIsWritten() throws Exception {
        byte[] big = new byte[64 * 1024];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) i;
        }
        TensorDescriptor d = TensorDescriptor.builder(ElementType.UINT8, 16).name("big-metadata")
                .metadata("a", big).metadata("b", big).metadata("c", big).build();
        byte[] payload = new byte[16];
        for (int i = 0; i < 16; i++) {
            payload[i] = (byte) (100 + i);
        }
        for (WriterOptions o : List.of(WriterOptions.defaults(), WriterOptions.defaults().withBatchBytes(0))) {
            Writer w = Writer.toMemory(o);
            w.write(d, MemorySegment.ofArray(payload));
            w.close();
            try (Reader r = Reader.of(w.toByteArray()); Tensor t = r.read()) {
                assertArrayEquals(payload, t.toByteArray());
                assertArrayEquals(big, t.descriptor().metadata().get("c"));
            }
        }
    }
}
