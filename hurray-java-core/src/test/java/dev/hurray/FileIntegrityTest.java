package dev.hurray;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The quiet traps of the container API: {@link HurrayFile#verify()} checks payloads whichever
 * way the file was opened, {@link HurrayFile#map}'s documented policy (no payload check unless
 * asked), and a writer closed without {@code finish()} says that it lost data.
 */
class FileIntegrityTest {
    @TempDir
    Path dir;

    /** A container of one float32[256] tensor with one payload byte flipped. */
    private Path flipped() throws IOException {
        Path p = dir.resolve("f.hrry");
        float[] v = new float[256];
        java.util.Arrays.fill(v, 1.5f);
        try (HurrayFileWriter w = HurrayFile.create(p); Tensor t = Tensor.of(v, 256)) {
            w.add("x", t);
            w.finish();
        }
        long off;
        try (HurrayFile f = HurrayFile.open(p)) {
            off = f.entry("x").orElseThrow().buffers().get(0).offset();
        }
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(1);
            ch.read(b, off + 10);
            b.put(0, (byte) (b.get(0) ^ 0x40)).rewind();
            ch.write(b, off + 10);
        }
        return p;
    }

    @Test
    void verifyChecksPayloadsOfMappedAndOpenedFiles() throws IOException {
        Path p = flipped();
        try (HurrayFile f = HurrayFile.map(p)) {
            assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, f::verify).status());
            // The documented map() policy: without VERIFY the damaged bytes come back unchecked.
            try (Tensor t = f.read("x")) {
                assertTrue(t.toFloatArray()[2] != 1.5f);
            }
        }
        try (HurrayFile f = HurrayFile.map(p, FileReaderOptions.defaults().withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY))) {
            assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, () -> f.read("x")).status());
        }
        try (HurrayFile f = HurrayFile.open(p)) {
            assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, f::verify).status());
        }
    }

    @Test
    void verifyChecksPayloadsInWindowsWhateverTheTensorLimitAndPayloadChecks() throws IOException {
        // A 3 MiB tensor, far above a 64 KiB maxTensorBytes: verify checks it in 1 MiB windows
        // (a whole read is refused by the limit), and the SKIP option does not stop it.
        Path p = dir.resolve("big.hrry");
        float[] v = new float[3 << 18];
        for (int i = 0; i < v.length; i++) {
            v[i] = i;
        }
        try (HurrayFileWriter w = HurrayFile.create(p); Tensor t = Tensor.of(v, v.length)) {
            w.add("big", t);
            w.finish();
        }
        FileReaderOptions small = FileReaderOptions.defaults().withMaxTensorBytes(1 << 16);
        try (HurrayFile f = HurrayFile.open(p, small)) {
            assertEquals(Status.LIMIT_EXCEEDED, assertThrows(HurrayException.class, () -> f.read("big")).status());
            f.verify();
        }
        long off;
        try (HurrayFile f = HurrayFile.open(p)) {
            off = f.entry("big").orElseThrow().buffers().get(0).offset();
        }
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap(new byte[] {0x7f}), off + (5L << 19) + 3);
        }
        for (FileReaderOptions o : new FileReaderOptions[] {small,
                small.withPayloadChecks(FileReaderOptions.PayloadChecks.SKIP)}) {
            try (HurrayFile f = HurrayFile.open(p, o)) {
                HurrayException e = assertThrows(HurrayException.class, f::verify);
                assertEquals(Status.CORRUPT, e.status());
                assertTrue(e.getMessage().contains("\"big\" checksum mismatch"), e.getMessage());
            }
            try (HurrayFile f = HurrayFile.map(p, o)) {
                assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, f::verify).status());
            }
        }
    }

    @Test
    void verifyPassesAnIntactFile() throws IOException {
        Path p = dir.resolve("ok.hrry");
        try (HurrayFileWriter w = HurrayFile.create(p); Tensor t = Tensor.of(new float[] {1, 2, 3}, 3)) {
            w.add("x", t);
            w.finish();
        }
        try (HurrayFile f = HurrayFile.map(p)) {
            f.verify();
            try (Tensor t = f.read("x")) {
                assertArrayEquals(new float[] {1, 2, 3}, t.toFloatArray());
            }
        }
        try (HurrayFile f = HurrayFile.open(p)) {
            f.verify();
        }
    }

    @Test
    void closingWithoutFinishAfterAddingThrowsAndWritesNothing() throws IOException {
        Path p = dir.resolve("lost.hrry");
        HurrayFileWriter w = HurrayFile.create(p);
        try (Tensor t = Tensor.of(new float[] {1}, 1)) {
            w.add("x", t);
        }
        HurrayException e = assertThrows(HurrayException.class, w::close);
        assertEquals(Status.INVALID_STATE, e.status());
        assertTrue(e.getMessage().contains("1 tensor was discarded") && e.getMessage().contains("finish()"), e.getMessage());
        assertFalse(Files.exists(p));
        w.close(); // idempotent, quiet the second time
        try (var files = Files.list(dir)) {
            assertEquals(0, files.count(), "no temporary file left");
        }
    }

    @Test
    void anExceptionInFlightStaysTheOneThrownWithTheLossSuppressed() throws IOException {
        Path p = dir.resolve("inflight.hrry");
        IllegalStateException body = assertThrows(IllegalStateException.class, () -> {
            try (HurrayFileWriter w = HurrayFile.create(p); Tensor t = Tensor.of(new float[] {1}, 1)) {
                w.add("x", t);
                throw new IllegalStateException("the caller's own failure");
            }
        });
        assertEquals("the caller's own failure", body.getMessage());
        assertEquals(1, body.getSuppressed().length);
        assertEquals(Status.INVALID_STATE, ((HurrayException) body.getSuppressed()[0]).status());
        assertFalse(Files.exists(p));
    }

    @Test
    void abandonAndEmptyWritersCloseQuietly() throws IOException {
        Path p = dir.resolve("a.hrry");
        try (HurrayFileWriter w = HurrayFile.create(p); Tensor t = Tensor.of(new float[] {1}, 1)) {
            w.add("x", t);
            w.abandon();
        }
        try (HurrayFileWriter w = HurrayFile.create(p)) {
            assertEquals(0, w.count());
        }
        assertFalse(Files.exists(p));
    }
}
