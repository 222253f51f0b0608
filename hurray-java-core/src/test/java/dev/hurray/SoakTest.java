package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.manual.UpcallSoakMain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The short, bounded version of {@link UpcallSoakMain} (docs/reliability.md §JVM soak): 6,000
 * upcall exceptions across every callback kind, each retried, then 4 threads with their own
 * readers, writers and containers for 3 s; the JVM survives and native memory (resident set
 * less the committed Java heap) grows by less than 48 MiB from the warm point to the end (the
 * growth measured by the main does not scale with the work: about 17–20 MiB for 6,000 as for
 * 60,000 exceptions, JIT code and metadata still settling).
 */
class SoakTest {
    @Test
    @Timeout(120)
    void upcallExceptionsAndParallelHandlesKeepMemoryFlat() throws Exception {
        UpcallSoakMain.Result r = UpcallSoakMain.run(6_000, 4, 3);
        assertEquals(6_000, r.exceptions());
        assertTrue(r.roundTrips() > 0);
        assertTrue(r.growthKiB() < 48 * 1024, "RSS grew by " + r.growthKiB() + " KiB");
    }
}
