package dev.hurray.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Every operation {@link ArrowTensorsBench} times, once, on 300 rows, with its result checked; nothing is timed. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ArrowTensorsBenchTest {
    @TempDir
    Path dir;

    @Test
    void everyOperationGivesTheExpectedResult() throws Exception {
        ArrowTensorsBench b = new ArrowTensorsBench(300, dir);
        double sum = 0;
        for (int r = 0; r < 300; r++) {
            sum += (r * 768L) % 977;
        }
        assertEquals(sum, b.columnRoundTrip(true));
        assertEquals(sum, b.columnRoundTrip(false));
        assertEquals(b.payloadBytes(), (long) b.rawSend());
        assertEquals(b.payloadBytes(), (long) b.ipcToStream(false));
        assertEquals(b.payloadBytes(), (long) b.ipcToStream(true));
        assertEquals((217L * 768) % 977, (long) b.hurrayLookup(217));
        assertEquals((217L * 768) % 977, (long) b.arrowLookup(217));
        assertEquals(b.payloadBytes(), (long) b.rawSendKept());
        assertEquals(b.payloadBytes(), (long) b.rawSendKeptHuge());
        assertEquals(b.payloadBytes(), (long) b.ipcReaderToStream());
        assertEquals(b.payloadBytes(), (long) b.hurrayToStream(false));
        // The stream's framing comes on top of the payload.
        org.junit.jupiter.api.Assertions.assertTrue(b.ipcToStreamDrained(false) > b.payloadBytes());
        assertEquals(b.ipcToStreamDrained(false), b.ipcToStreamDrained(true));
        assertEquals(b.memcpy(), b.memcpyFresh());
        double lookups = 0;
        for (int k = 0; k < ArrowTensorsBench.LOOKUPS; k++) {
            lookups += ((217 + 7919L * k) % 300 * 768) % 977;
        }
        assertEquals(lookups, b.hurrayLookups(217));
        b.close();
    }
}
