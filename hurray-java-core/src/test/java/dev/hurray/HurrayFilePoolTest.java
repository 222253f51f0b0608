package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FileReaderOptions#bufferPoolBytes()}: tensors read through {@link HurrayFile#open}
 * reuse closed tensors' memory (docs/spec/stream.md §Buffer pool), never an open tensor's.
 */
class HurrayFilePoolTest {
    private static final int N = 12;
    private static final int SIZE = 300 * 1024;

    private static Path container(Path dir) throws IOException {
        Path p = dir.resolve("pool.hrry");
        try (HurrayFileWriter w = HurrayFile.create(p)) {
            for (int i = 0; i < N; i++) {
                try (Tensor t = Tensor.of(ElementType.UINT8, TestSupport.bytes(i, SIZE), SIZE)) {
                    w.add("t" + i, t);
                }
            }
            w.finish();
        }
        return p;
    }

    @Test
    void closedTensorsMemoryIsReusedAndDataIsRight(@TempDir Path dir) throws IOException {
        Path p = container(dir);
        assertEquals(ReaderOptions.DEFAULT_BUFFER_POOL_BYTES, FileReaderOptions.defaults().bufferPoolBytes());
        Set<Long> addresses = new HashSet<>();
        try (HurrayFile f = HurrayFile.open(p)) {
            for (int i = 0; i < N; i++) {
                try (Tensor t = f.read("t" + i)) {
                    assertArrayEquals(TestSupport.bytes(i, SIZE), t.toByteArray(), "t" + i);
                    addresses.add(t.buffer(0).address());
                }
            }
        }
        assertEquals(1, addresses.size(), "every read reused the first tensor's memory");
    }

    @Test
    void anOpenTensorsMemoryIsNeverHandedOut(@TempDir Path dir) throws IOException {
        Path p = container(dir);
        try (HurrayFile f = HurrayFile.open(p);
             Tensor a = f.read("t0");
             Tensor b = f.read("t1")) {
            assertNotEquals(a.buffer(0).address(), b.buffer(0).address());
            assertArrayEquals(TestSupport.bytes(0, SIZE), a.toByteArray());
            assertArrayEquals(TestSupport.bytes(1, SIZE), b.toByteArray());
        }
    }

    @Test
    void zeroDisablesThePoolAndNegativeIsRefused(@TempDir Path dir) throws IOException {
        Path p = container(dir);
        FileReaderOptions none = FileReaderOptions.defaults().withBufferPoolBytes(0);
        assertEquals(0, none.bufferPoolBytes());
        try (HurrayFile f = HurrayFile.open(p, none)) {
            for (int i = 0; i < N; i++) {
                try (Tensor t = f.read("t" + i)) {
                    assertArrayEquals(TestSupport.bytes(i, SIZE), t.toByteArray(), "t" + i);
                }
            }
        }
        assertThrows(IllegalArgumentException.class, () -> FileReaderOptions.defaults().withBufferPoolBytes(-1));
    }
}
