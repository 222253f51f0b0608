package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A container over 2 GiB, kept sparse on disk: a 2 GiB + 64 MiB tensor of zeros followed by a
 * small tensor placed beyond 2^31, read back through {@link HurrayFile#open} (positional channel
 * reads at long offsets) and {@link HurrayFile#map} (one mapping larger than any
 * {@code ByteBuffer}), zero copy included.
 *
 * <p>The zeros come from a sparse file mapped read-only, so no memory is touched; the writer
 * runs without payload checksums (which would read them), and its sink turns writes of bytes
 * from that mapping into seeks, leaving a hole. Disk use and time stay small.
 */
class HurrayFileLargeTest {
    private static final long BIG = (2L << 30) + (64L << 20);

    @TempDir
    Path dir;

    /** Writes to a file; a write whose bytes lie inside {@code zeros} becomes a seek (a hole). */
    private static final class SparseSink implements WritableByteChannel {
        private final FileChannel out;
        private final long lo;
        private final long hi;
        long skipped;

        SparseSink(FileChannel out, MemorySegment zeros) {
            this.out = out;
            this.lo = zeros.address();
            this.hi = zeros.address() + zeros.byteSize();
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            int n = src.remaining();
            if (src.isDirect()) {
                long a = MemorySegment.ofBuffer(src).address();
                if (a >= lo && a + n <= hi) {
                    out.position(out.position() + n);
                    src.position(src.limit());
                    skipped += n;
                    return n;
                }
            }
            return out.write(src);
        }

        @Override
        public boolean isOpen() {
            return out.isOpen();
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }

    @Test
    void aTensorBeyond2GiBReadsThroughOpenAndMap() throws IOException {
        Path zerosFile = dir.resolve("zeros.bin");
        try (RandomAccessFile raf = new RandomAccessFile(zerosFile.toFile(), "rw")) {
            raf.setLength(BIG);
        }
        Path path = dir.resolve("large.hrry");
        float[] values = {1.5f, -2f, 3.25f, 1e9f, -0f};
        long size;
        SparseSink sink;
        try (Arena arena = Arena.ofConfined(); FileChannel z = FileChannel.open(zerosFile, StandardOpenOption.READ)) {
            MemorySegment zeros = z.map(FileChannel.MapMode.READ_ONLY, 0, BIG, arena);
            TensorDescriptor zd = TensorDescriptor.builder(ElementType.UINT8, BIG)
                    .buffer(new BufferSpec(BIG, 4096, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED)).name("a.zeros").build();
            sink = new SparseSink(FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), zeros);
            try (HurrayFileWriter w = HurrayFileWriter.of(sink, FileWriterOptions.defaults().withPayloadChecksums(false));
                    Tensor small = Tensor.of(values, 5)) {
                w.add(zd, zeros);
                w.add("b.beyond", small);
                size = w.finish();
            }
        }
        assertEquals(BIG, sink.skipped, "the zeros became a hole");
        assertEquals(size, Files.size(path));
        assertTrue(size > (2L << 30));

        long offset;
        try (HurrayFile f = HurrayFile.open(path)) {
            FileEntry e = f.entry("b.beyond").orElseThrow();
            offset = e.buffers().get(0).offset();
            assertTrue(offset > Integer.MAX_VALUE, "placed beyond 2 GiB: " + offset);
            assertEquals(BIG, f.entry("a.zeros").orElseThrow().totalBytes());
            try (Tensor t = f.read(e)) {
                assertArrayEquals(values, t.toFloatArray());
            }
        }
        try (HurrayFile f = HurrayFile.map(path)) {
            MemorySegment map = f.mapping().orElseThrow();
            assertEquals(size, map.byteSize());
            try (Tensor t = f.read("b.beyond")) {
                assertEquals(map.address() + offset, t.buffer(0).address(), "zero copy, beyond 2 GiB into the map");
                assertArrayEquals(values, t.toFloatArray());
            }
            try (Tensor zeros = f.read("a.zeros")) {
                MemorySegment b = zeros.buffer(0);
                assertEquals(BIG, b.byteSize(), "one segment over 2 GiB");
                assertTrue(b.address() >= map.address() && b.address() + BIG <= map.address() + map.byteSize());
                assertEquals(0, b.get(ValueLayout.JAVA_BYTE, BIG - 1));
            }
        }
    }
}
