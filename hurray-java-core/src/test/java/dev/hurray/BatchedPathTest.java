package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plain code's path: writers batch small tensors by default, readers decode buffered
 * tensors in batches and free closed ones in batches, and every ownership rule still holds.
 */
class BatchedPathTest {
    private static float[] row(int i, int n) {
        float[] r = new float[n];
        for (int k = 0; k < n; k++) {
            r[k] = i * 1000 + k;
        }
        return r;
    }

    @Test
    void smallTensorsWaitForTheBatchOrAFlushAndLargeOnesLeaveAtOnce() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Writer w = Writer.of(out)) {
            TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 8).name("small").build();
            try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row(1, 8)))) {
                w.write(t);
            }
            assertEquals(0, out.size(), "a small tensor is queued, not sent");
            w.flush();
            int afterFlush = out.size();
            assertTrue(afterFlush > 32, "flush sends it");
            try (Tensor big = Tensor.of(row(2, 64 * 1024), 64 * 1024)) {
                w.write(big);
            }
            assertTrue(out.size() > afterFlush + 256 * 1024, "a 256 KiB tensor leaves before write returns");
        }
        try (Reader r = Reader.of(out.toByteArray())) {
            try (Tensor a = r.read(); Tensor b = r.read()) {
                assertEquals("small", a.descriptor().name().orElseThrow());
                assertArrayEquals(row(1, 8), a.toFloatArray());
                assertArrayEquals(row(2, 64 * 1024), b.toFloatArray());
            }
            assertNull(r.read());
        }
    }

    /**
     * Names, keys and values of every length around the word size and the packing limit reach
     * the reader byte for byte (the batched writer packs short strings into words, and copies
     * long ones on their own), and consecutive tensors of one shape that differ only in their
     * strings, as the native encoder reuses the last descriptor for them, keep each its own.
     */
    @Test
    void stringsOfEveryLengthKeepTheirBytes() throws IOException {
        Random rnd = new Random(7);
        List<String> names = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        int[] lengths = new int[60];
        for (int i = 0; i < 40; i++) {
            lengths[i] = i;
        }
        for (int i = 40; i < 60; i++) {
            lengths[i] = 250 + i - 40; // across the 256-byte packing limit
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Writer w = Writer.of(out)) {
            for (int len : lengths) {
                StringBuilder name = new StringBuilder();
                for (int k = 0; k < len; k++) {
                    name.append((char) ('a' + rnd.nextInt(26)));
                }
                String key = "k" + name.substring(0, Math.min(len, 255));
                byte[] value = new byte[len];
                rnd.nextBytes(value);
                names.add(name.toString());
                keys.add(key);
                values.add(value);
                TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 4).name(name.toString())
                        .metadata(key, value).build();
                try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row(len, 4)))) {
                    w.write(t);
                }
            }
        }
        try (Reader r = Reader.of(out.toByteArray())) {
            for (int i = 0; i < lengths.length; i++) {
                try (Tensor t = r.read()) {
                    assertEquals(names.get(i), t.descriptor().name().orElseThrow(), "tensor " + i);
                    assertEquals(List.of(keys.get(i)), List.copyOf(t.descriptor().metadata().keySet()), "tensor " + i);
                    assertArrayEquals(values.get(i), t.descriptor().metadata().get(keys.get(i)), "tensor " + i);
                    assertArrayEquals(row(lengths[i], 4), t.toFloatArray(), "tensor " + i);
                }
            }
            assertNull(r.read());
        }
    }

    @Test
    void aBatchFillsAndIsSentWithoutAFlush() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Writer w = Writer.of(out)) {
            for (int i = 0; i < 64; i++) {
                TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("emb-" + i)
                        .metadata("doc", "d" + i).build();
                try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row(i, 768)))) {
                    w.write(t);
                }
            }
            assertTrue(out.size() >= 64 * 1024, "64 KiB queued are sent: " + out.size());
        }
    }

    /**
     * One decoded batch whose tensors have different buffer counts (dense: one; CSR: three):
     * the reader copies the batch's results and buffer records once, and each tensor still gets
     * its own buffers, in order, byte for byte.
     */
    @Test
    void aBatchOfTensorsWithDifferentBufferCountsGivesEachItsOwnBuffers() throws IOException {
        byte[] wire;
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < 50; i++) {
                if (i % 3 == 1) {
                    // A 2x3 CSR matrix with two stored entries: values, row pointers, column indices.
                    TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).name("csr" + i)
                            .layout(Layout.csr(ElementType.INT32, 2, true))
                            .buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(8)).build();
                    w.write(d, MemorySegment.ofArray(new float[] {i, -i}), MemorySegment.ofArray(new int[] {0, 1, 2}),
                            MemorySegment.ofArray(new int[] {i % 3, 2}));
                } else {
                    TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 4 + i % 5).name("d" + i).build();
                    w.write(d, MemorySegment.ofArray(row(i, 4 + i % 5)));
                }
            }
            w.finish();
            wire = w.toByteArray();
        }
        try (Reader r = Reader.of(wire)) {
            for (int i = 0; i < 50; i++) {
                try (Tensor t = r.read()) {
                    if (i % 3 == 1) {
                        assertEquals("csr" + i, t.descriptor().name().orElseThrow());
                        assertEquals(3, t.buffers().size());
                        assertArrayEquals(new float[] {i, -i}, t.buffer(0).toArray(ValueLayout.JAVA_FLOAT));
                        assertArrayEquals(new int[] {0, 1, 2}, t.buffer(1).toArray(ValueLayout.JAVA_INT));
                        assertArrayEquals(new int[] {i % 3, 2}, t.buffer(2).toArray(ValueLayout.JAVA_INT));
                    } else {
                        assertEquals("d" + i, t.descriptor().name().orElseThrow());
                        assertEquals(1, t.buffers().size());
                        assertArrayEquals(row(i, 4 + i % 5), t.toFloatArray(), "tensor " + i);
                    }
                }
            }
            assertNull(r.read());
        }
    }

    /**
     * One batch mixing plain and quantized tensors: the writer hands a quantized tensor's spec
     * to native memory at once (with its quantization block) and the others with the batch,
     * so each must keep its own fields.
     */
    @Test
    void aBatchMixingQuantizedAndPlainTensorsKeepsEachOnesFields() throws IOException {
        byte[] wire;
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < 40; i++) {
                if (i % 3 == 0) {
                    TensorDescriptor d = TensorDescriptor.builder(ElementType.UINT8, Shape.of(4)).name("q" + i)
                            .quantization(new Quantization.PerTensorAffine(i + 0.5, -i, ElementType.FLOAT32)).build();
                    w.write(d, MemorySegment.ofArray(new byte[] {(byte) i, 1, 2, 3}));
                } else {
                    TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 1 + i % 4).name("p" + i).build();
                    w.write(d, MemorySegment.ofArray(row(i, 1 + i % 4)));
                }
            }
            w.finish();
            wire = w.toByteArray();
        }
        try (Reader r = Reader.of(wire)) {
            for (int i = 0; i < 40; i++) {
                try (Tensor t = r.read()) {
                    if (i % 3 == 0) {
                        assertEquals("q" + i, t.descriptor().name().orElseThrow());
                        assertEquals(new Quantization.PerTensorAffine(i + 0.5, -i, ElementType.FLOAT32),
                                t.descriptor().quantization().orElseThrow());
                        assertArrayEquals(new byte[] {(byte) i, 1, 2, 3}, t.buffer(0).toArray(ValueLayout.JAVA_BYTE));
                    } else {
                        assertEquals("p" + i, t.descriptor().name().orElseThrow());
                        assertTrue(t.descriptor().quantization().isEmpty(), "tensor " + i);
                        assertArrayEquals(row(i, 1 + i % 4), t.toFloatArray(), "tensor " + i);
                    }
                }
            }
            assertNull(r.read());
        }
    }

    @Test
    void tensorsOfOneBatchAreClosedInAnyOrderAndOutliveTheReader() throws IOException {
        byte[] wire;
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < 300; i++) {
                TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 16).name("t" + i).build();
                w.write(d, MemorySegment.ofArray(row(i, 16)));
            }
            w.finish();
            wire = w.toByteArray();
        }
        List<Tensor> kept = new ArrayList<>();
        List<MemorySegment> segments = new ArrayList<>();
        try (Reader r = Reader.of(wire)) {
            for (Tensor t; (t = r.read()) != null;) {
                kept.add(t);
                segments.add(t.buffer(0));
            }
        }
        assertEquals(300, kept.size());
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < kept.size(); i++) {
            order.add(i);
        }
        Collections.shuffle(order, new Random(7));
        for (int i : order) {
            Tensor t = kept.get(i);
            assertEquals("t" + i, t.descriptor().name().orElseThrow());
            assertArrayEquals(row(i, 16), t.toFloatArray(), "tensor " + i + " after the reader closed");
            t.close();
            MemorySegment s = segments.get(i);
            assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_FLOAT, 0), "use after close");
            t.close(); // a second close is a no-op
        }
    }

    @Test
    void namesOfEveryLengthComeBackAndReadTensorsAreRewrittenWithTheirNativeDescriptors(@TempDir Path dir)
            throws IOException {
        // One shape for all, so that after the first the decoder flags each descriptor as the
        // previous one but for its name; the names cross the reader's name buffer (64 bytes).
        String[] names = {"a", "x".repeat(63), "y".repeat(64), "z".repeat(65), "\u00e9".repeat(150),
            "k".repeat(4096), "\u540d\u524d-" + "\u00fc".repeat(40), "b", "w".repeat(4095)};
        byte[] wire;
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < names.length; i++) {
                w.write(TensorDescriptor.builder(ElementType.FLOAT32, 4).name(names[i]).build(),
                        MemorySegment.ofArray(row(i, 4)));
            }
            w.finish();
            wire = w.toByteArray();
        }
        Path file = dir.resolve("rewritten.hrry");
        List<Tensor> kept = new ArrayList<>();
        try (Reader r = Reader.of(wire); HurrayFileWriter fw = HurrayFile.create(file)) {
            for (Tensor t; (t = r.read()) != null;) {
                int i = kept.size();
                assertEquals(names[i], t.descriptor().name().orElseThrow(), "name " + i);
                // The file writer takes a read tensor's own native descriptor.
                fw.add(t);
                kept.add(t);
            }
            fw.finish();
        }
        assertEquals(names.length, kept.size());
        for (Tensor t : kept) {
            t.close();
        }
        try (HurrayFile f = HurrayFile.open(file)) {
            for (int i = 0; i < names.length; i++) {
                try (Tensor t = f.read(names[i])) {
                    assertArrayEquals(row(i, 4), t.toFloatArray(), names[i]);
                }
            }
        }
    }

    @Test
    void sharedTensorsMayBeClosedOnAnotherThread() throws Exception {
        byte[] wire;
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < 200; i++) {
                w.write(TensorDescriptor.builder(ElementType.FLOAT32, 4).name("s" + i).build(),
                        MemorySegment.ofArray(row(i, 4)));
            }
            w.finish();
            wire = w.toByteArray();
        }
        List<Tensor> read = new ArrayList<>();
        try (Reader r = Reader.of(wire, ReaderOptions.defaults().withTensorScope(TensorScope.SHARED))) {
            for (Tensor t; (t = r.read()) != null;) {
                read.add(t);
            }
            Thread closer = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < read.size(); i += 2) {
                    read.get(i).close();
                }
            });
            for (int i = 1; i < read.size(); i += 2) {
                read.get(i).close();
            }
            closer.join();
        }
        for (Tensor t : read) {
            assertTrue(!t.isOpen());
        }
    }

    @Test
    void aWriteAfterFinishOrWithWrongPayloadsIsRefusedAtOnce() throws IOException {
        try (Writer w = Writer.toMemory()) {
            TensorDescriptor d = TensorDescriptor.builder(ElementType.INT32, 4).name("x").build();
            assertEquals(Status.BUFFER_TOO_SMALL,
                    assertThrows(HurrayException.class, () -> w.write(d, MemorySegment.ofArray(new int[3]))).status());
            w.write(d, MemorySegment.ofArray(new int[4]));
            w.finish();
            assertEquals(Status.INVALID_STATE,
                    assertThrows(HurrayException.class, () -> w.write(d, MemorySegment.ofArray(new int[4]))).status());
            try (Reader r = Reader.of(w.toByteArray()); Tensor t = r.read()) {
                assertEquals("x", t.descriptor().name().orElseThrow());
                assertNull(r.read());
            }
        }
    }

    /**
     * The writer lays short names, keys and values into one image and copies long ones on their
     * own: every length around that boundary (and the format's maxima) arrives intact, in
     * order, with default and batching writers alike.
     */
    @Test
    void namesKeysAndValuesOfEveryLengthArriveIntact() throws IOException {
        int[] lengths = {0, 1, 7, 8, 9, 255, 256, 257, 300, 4096, 65536};
        Random r = new Random(42);
        List<TensorDescriptor> sent = new ArrayList<>();
        for (int n : lengths) {
            byte[] v = new byte[n];
            r.nextBytes(v);
            String key = "k".repeat(Math.max(1, Math.min(256, n)));
            String name = n == 0 ? null : "n".repeat(Math.min(4096, n));
            TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.INT8, 3).name(name)
                    .metadata(key, v).metadata("short", "s").metadata("empty", new byte[0]);
            sent.add(b.build());
        }
        for (WriterOptions o : List.of(WriterOptions.defaults(), WriterOptions.defaults().withBatchBytes(64 * 1024))) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (Writer w = Writer.of(out, o)) {
                for (TensorDescriptor d : sent) {
                    w.write(d, MemorySegment.ofArray(new byte[] {1, 2, 3}));
                }
            }
            try (Reader rd = Reader.of(out.toByteArray())) {
                for (TensorDescriptor d : sent) {
                    try (Tensor t = rd.read()) {
                        assertEquals(d.name(), t.descriptor().name());
                        assertEquals(List.copyOf(d.metadata().keySet()), List.copyOf(t.descriptor().metadata().keySet()));
                        for (String k : d.metadata().keySet()) {
                            assertArrayEquals(d.metadata().get(k), t.descriptor().metadata().get(k), k);
                        }
                        assertArrayEquals(new byte[] {1, 2, 3}, t.toByteArray());
                    }
                }
                assertNull(rd.read());
            }
        }
    }
}
