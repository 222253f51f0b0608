package dev.hurray.formats;

import dev.hurray.AtomicOutput;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import static dev.hurray.formats.TestSupport.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PayloadsTest {
    @TempDir
    Path tmp;

    /** Positional reads: the bytes of the range, 64-byte aligned, across chunks; a short file is a clear error. */
    @Test
    void readAtReadsTheRangeAlignedAndReportsAFileThatEndsEarly() throws IOException {
        byte[] all = new byte[(3 << 20) + 17];
        new Random(5).nextBytes(all);
        Path f = Files.write(tmp.resolve("r.bin"), all);
        try (Arena arena = Arena.ofConfined(); java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f)) {
            MemorySegment s = Payloads.readAt(ch, 5, all.length - 9, arena, "r.bin");
            assertEquals(0, s.address() % Payloads.ALIGNMENT);
            assertArrayEquals(java.util.Arrays.copyOfRange(all, 5, all.length - 4), bytes(s));
            assertEquals(0, Payloads.readAt(ch, all.length, 0, arena, "r.bin").byteSize());
            ForeignFormatException e = assertThrows(ForeignFormatException.class,
                    () -> Payloads.readAt(ch, 1 << 20, all.length, arena, "r.bin"));
            assertTrue(e.getMessage().startsWith("r.bin: truncated: the file is now " + all.length
                    + " bytes, but its data needs " + ((1 << 20) + all.length) + " (it had " + all.length
                    + " bytes when opened"), e.getMessage());
        }
    }

    @Test
    void columnToRowMajorMatchesTheNaiveReorder() throws IOException {
        Random rnd = new Random(11);
        List<long[]> shapes = List.of(new long[] {2, 3}, new long[] {3, 1, 4}, new long[] {2, 3, 4, 5},
                new long[] {1, 7}, new long[] {5, 0, 2}, new long[] {4});
        try (Arena arena = Arena.ofConfined()) {
            for (ElementType t : List.of(ElementType.UINT8, ElementType.FLOAT16, ElementType.FLOAT32, ElementType.FLOAT64, ElementType.COMPLEX128)) {
                for (long[] shape : shapes) {
                    ForeignTensor col = Models.random(arena, rnd, "x", t, Layout.Kind.COLUMN_MAJOR, shape);
                    ForeignTensor row = Payloads.toRowMajor(col, arena);
                    assertEquals(Layout.Kind.ROW_MAJOR, row.layout());
                    assertArrayEquals(Models.rowMajorOf(bytes(col.data()), shape, Payloads.byteWidth(t)), bytes(row.data()),
                            t + java.util.Arrays.toString(shape));
                }
            }
            ForeignTensor already = Models.random(arena, rnd, "r", ElementType.INT32, Layout.Kind.ROW_MAJOR, 3, 3);
            assertSame(already, Payloads.toRowMajor(already, arena));
            ForeignTensor packed = Models.random(arena, rnd, "p", ElementType.INT4, Layout.Kind.COLUMN_MAJOR, 2, 2);
            assertThrows(ForeignFormatException.class, () -> Payloads.toRowMajor(packed, arena));
            // GGUF blocks run along the row-major last axis: moving bytes would tear them apart.
            ForeignTensor blocks = new ForeignTensor("q", ElementType.INT8, new long[] {2, 64}, Layout.Kind.COLUMN_MAJOR,
                    arena.allocate(136), Quantization.Block.of(Quantization.GgufFormat.Q8_0, 2), -1);
            assertTrue(assertThrows(ForeignFormatException.class, () -> Payloads.toRowMajor(blocks, arena))
                    .getMessage().contains("column-major q8_0"));
        }
    }

    /** Reordering keeps the quantization's further buffers (per-channel scales and biases). */
    @Test
    void reorderKeepsScaleBuffers() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            List<MemorySegment> params = List.of(arena.allocate(8), arena.allocate(8));
            Quantization.PerChannelAffine q = new Quantization.PerChannelAffine(0, ElementType.FLOAT32);
            for (long[] shape : List.of(new long[] {2, 3}, new long[] {2, 1})) {
                ForeignTensor col = new ForeignTensor("w", ElementType.INT8, shape, Layout.Kind.COLUMN_MAJOR,
                        arena.allocate(shape[0] * shape[1]), q, params, -1);
                ForeignTensor row = Payloads.toRowMajor(col, arena);
                assertEquals(Layout.Kind.ROW_MAJOR, row.layout());
                assertEquals(params, row.scaleBuffers());
                assertEquals(q, row.quantization().orElseThrow());
            }
        }
    }

    @Test
    void swapReversesEachUnit() {
        byte[] b = {1, 2, 3, 4, 5, 6, 7, 8};
        MemorySegment s = MemorySegment.ofArray(b.clone());
        Payloads.swapInPlace(s, 2);
        assertArrayEquals(new byte[] {2, 1, 4, 3, 6, 5, 8, 7}, bytes(s));
        s = MemorySegment.ofArray(b.clone());
        Payloads.swapInPlace(s, 8);
        assertArrayEquals(new byte[] {8, 7, 6, 5, 4, 3, 2, 1}, bytes(s));
        assertThrows(IllegalArgumentException.class, () -> Payloads.swapInPlace(MemorySegment.ofArray(new byte[3]), 2));
    }

    @Test
    void tensorRejectsAPayloadOfTheWrongSize() {
        MemorySegment s = MemorySegment.ofArray(new byte[7]);
        assertThrows(IllegalArgumentException.class,
                () -> new ForeignTensor("x", ElementType.FLOAT32, new long[] {2}, Layout.Kind.ROW_MAJOR, s, null, -1));
        assertThrows(IllegalArgumentException.class,
                () -> new ForeignTensor("x", ElementType.UINT8, new long[] {-1}, Layout.Kind.ROW_MAJOR, s, null, -1));
        assertEquals(2, ElementType.INT4.byteSizeOf(3));
    }

    @Test
    void atomicWriteFailureLeavesTheOldFileAndNoTemporary() throws IOException {
        Path target = tmp.resolve("out.bin");
        Files.writeString(target, "old");
        IOException e = assertThrows(IOException.class, () -> AtomicOutput.write(target, ch -> {
            ch.write(java.nio.ByteBuffer.wrap(new byte[1000]));
            throw new IOException("disk full");
        }));
        assertEquals("disk full", e.getMessage());
        assertEquals("old", Files.readString(target));
        assertEquals(List.of(target), Files.list(tmp).toList());
        AtomicOutput.write(target, ch -> ch.write(java.nio.ByteBuffer.wrap("new".getBytes())));
        assertEquals("new", Files.readString(target));
        assertEquals(List.of(target), Files.list(tmp).toList());
    }

    /**
     * Payloads over 2 GiB: sparse safetensors and npy files (no disk is used for the holes),
     * read through the mapping, with a marker past the 2^31 boundary.
     */
    @Test
    void payloadsOverTwoGiB() throws IOException {
        long n = (1L << 31) + 4096;
        String header = "{\"big\":{\"dtype\":\"U8\",\"shape\":[" + n + "],\"data_offsets\":[0," + n + "]}}";
        byte[] file = SafetensorsTest.file(header, new byte[0]);
        Path st = tmp.resolve("big.safetensors");
        writeSparse(st, file, file.length + n, file.length + n - 3);
        try (ForeignModel m = Safetensors.read(st)) {
            ForeignTensor t = m.tensors().get(0);
            assertEquals(n, t.byteSize());
            assertEquals((byte) 0x5A, t.data().get(ValueLayout.JAVA_BYTE, n - 3));
            assertEquals(0, t.data().get(ValueLayout.JAVA_BYTE, (1L << 31) + 1));
        }
        byte[] npyHeader = NpyTest.npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, " + (n / 8) + "), }", new byte[0]);
        Path npy = tmp.resolve("big.npy");
        writeSparse(npy, npyHeader, npyHeader.length + n, npyHeader.length + n - 3);
        try (ForeignModel m = Npy.read(npy, "big")) {
            ForeignTensor t = m.tensors().get(0);
            assertEquals(n, t.byteSize());
            assertEquals(Layout.Kind.COLUMN_MAJOR, t.layout());
            assertEquals((byte) 0x5A, t.data().get(ValueLayout.JAVA_BYTE, n - 3));
            assertTrue(Npy.header(t).length % 64 == 0);
        }
    }

    private static void writeSparse(Path p, byte[] head, long size, long markerAt) throws IOException {
        try (var raf = new java.io.RandomAccessFile(p.toFile(), "rw")) {
            raf.write(head);
            raf.setLength(size);
            raf.seek(markerAt);
            raf.write(0x5A);
        }
    }
}
