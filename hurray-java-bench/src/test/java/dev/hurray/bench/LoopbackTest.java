package dev.hurray.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Each loopback transport delivers the bytes it was sent, message after message; nothing is timed. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LoopbackTest {
    static java.util.List<String> transports() {
        return Loopback.transports();
    }

    @ParameterizedTest
    @MethodSource("transports")
    void receivesWhatWasSent(String transport) throws Exception {
        int size = 1 << 20;
        try (Loopback lb = Loopback.open(transport, size)) {
            for (int i = 0; i < 3; i++) {
                assertEquals(size, lb.receiveAndCheck());
            }
            assertEquals(size, lb.receiveOne());
        }
    }
}
