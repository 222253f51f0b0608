package dev.hurray.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The file harnesses read back exactly what {@link Containers} wrote; nothing is timed. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FileHarnessTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {FileReads.RAW, FileReads.OPEN, FileReads.OPEN_NOCRC, FileReads.MAP})
    void randomReadsReturnEachTensorsBytes(String impl) throws Exception {
        Path file = Containers.write(dir.resolve("c.hrry"), 32, 4096);
        try (FileReads reads = FileReads.open(impl, file, 7)) {
            for (int i = 0; i < 100; i++) {
                assertEquals(4096, reads.readAndCheck());
            }
        }
    }

    @Test
    void opensSeeEveryTensor() throws Exception {
        Path file = Containers.write(dir.resolve("c.hrry"), 1000, 64);
        assertEquals(1000, new FileOpens(FileOpens.OPEN, file).openOnce());
        assertEquals(1000, new FileOpens(FileOpens.MAP, file).openOnce());
        assertEquals(0, new FileOpens(FileOpens.RAW, file).openOnce());
        assertEquals(0, new FileOpens(FileOpens.OPEN, file, true).openOnce(), "index of the first tensor");
        assertEquals(0, new FileOpens(FileOpens.MAP, file, true).openOnce());
    }
}
