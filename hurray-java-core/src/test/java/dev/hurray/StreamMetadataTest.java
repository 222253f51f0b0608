package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Stream metadata (docs/spec/stream.md §Stream metadata) through the Java API. */
class StreamMetadataTest {
    @Test
    void metadataTravelsWithTheHeaderAndIsReadBeforeOrAfterTensors() throws Exception {
        Map<String, byte[]> md = new LinkedHashMap<>();
        md.put("format", "pt".getBytes());
        md.put("binary", new byte[] {0, 1, 2, (byte) 255});
        Writer w = Writer.toMemory(WriterOptions.defaults().withBatchBytes(WriterOptions.DEFAULT_BATCH_BYTES));
        w.metadata(md);
        try (Tensor t = Tensor.of(new float[] {1, 2, 3})) {
            w.write(t);
        }
        // Too late after the first write.
        assertEquals(Status.INVALID_STATE, assertThrows(HurrayException.class, () -> w.metadata(md)).status());
        w.close();
        byte[] wire = w.toByteArray();
        // Before any tensor.
        try (Reader r = Reader.of(wire)) {
            Map<String, byte[]> got = r.metadata();
            assertEquals(List.of("format", "binary"), List.copyOf(got.keySet()));
            assertArrayEquals(md.get("binary"), got.get("binary"));
            try (Tensor t = r.read()) {
                assertArrayEquals(new float[] {1, 2, 3}, t.toFloatArray());
            }
            assertNull(r.read());
            assertEquals(2, r.metadata().size());
        }
        // After the tensors, through a stream source read in one-byte pieces.
        try (Reader r = Reader.of(new java.io.InputStream() {
            private int pos;

            @Override
            public int read() {
                return pos < wire.length ? wire[pos++] & 0xFF : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (pos >= wire.length) {
                    return -1;
                }
                b[off] = wire[pos++];
                return 1;
            }
        })) {
            try (Tensor t = r.read()) {
                assertEquals(3, t.toFloatArray().length);
            }
            assertArrayEquals("pt".getBytes(), r.metadata().get("format"));
        }
    }

    @Test
    void streamsWithoutMetadataHaveNoneAndBadMetadataIsRefused() throws Exception {
        Writer w = Writer.toMemory();
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> w.metadata(Map.of())).status());
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> w.metadata(Map.of("a\0b", new byte[0]))).status());
        assertEquals(Status.LIMIT_EXCEEDED, assertThrows(HurrayException.class,
                () -> w.metadata(Map.of("k", new byte[64 * 1024 + 1]))).status());
        try (Tensor t = Tensor.of(new float[] {1})) {
            w.write(t);
        }
        w.close();
        try (Reader r = Reader.of(w.toByteArray())) {
            assertTrue(r.metadata().isEmpty());
        }
    }
}
