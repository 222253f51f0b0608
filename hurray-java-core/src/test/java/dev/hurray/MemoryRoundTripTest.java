package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The round trip of docs/spec/c-abi.md §From Rust, re-expressed in Java: a 64-element uint8 tensor
 * written to memory, read back by iteration, and compared.
 */
class MemoryRoundTripTest {
    @Test
    void a64ByteTensorWrittenToMemoryReadsBackByIteration() throws Exception {
        byte[] arange = new byte[64];
        for (int i = 0; i < 64; i++) {
            arange[i] = (byte) i;
        }
        byte[] wire;
        // Nowhere to put it: the writer keeps the bytes.
        try (Writer writer = Writer.toMemory(); Tensor tensor = Tensor.of(ElementType.UINT8, arange)) {
            writer.write(tensor);
            writer.finish();
            wire = writer.toByteArray();
        }
        int seen = 0;
        try (Reader reader = Reader.of(wire)) {
            // The reader is an iterator; each tensor is available as its bytes arrive.
            for (Tensor received : reader) {
                try (received) {
                    assertEquals(Shape.of(64), received.descriptor().shape());
                    assertEquals(ElementType.UINT8, received.descriptor().elementType());
                    assertArrayEquals(arange, received.toByteArray());
                    // The declared alignment survives the trip (docs/spec/c-abi.md §Reading and
                    // writing a stream).
                    assertEquals(0, received.buffer(0).address() % 64);
                    seen++;
                }
            }
            assertTrue(reader.isEndOfStream());
            assertNull(reader.read());
        }
        assertEquals(1, seen);
    }
}
