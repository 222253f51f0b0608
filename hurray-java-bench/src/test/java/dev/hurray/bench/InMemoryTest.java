package dev.hurray.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Each in-memory implementation writes, reads and round-trips the pattern correctly; nothing is timed. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class InMemoryTest {
    @ParameterizedTest
    @ValueSource(strings = {InMemory.RAW, InMemory.HURRAY, InMemory.ARROW})
    void everyOperationMovesTheTensor(String impl) throws Exception {
        int size = 1024;
        try (InMemory m = InMemory.open(impl, size)) {
            long[] delta = new long[3];
            for (int i = 0; i < 3; i++) {
                long before = m.bytesWritten();
                assertEquals(size, m.write());
                delta[i] = m.bytesWritten() - before;
            }
            // each write puts at least the payload into the sink, and (once any stream header is
            // out) the same number of bytes every time
            assertTrue(delta[1] >= size, impl + " wrote " + delta[1] + " bytes for a " + size + "-byte payload");
            assertEquals(delta[1], delta[2]);
            for (int i = 0; i < 200; i++) {
                assertEquals(size, m.readAndCheck());
                assertEquals(size, m.writeReadAndCheck());
            }
        }
    }
}
