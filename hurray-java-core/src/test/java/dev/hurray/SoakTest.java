package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.manual.UpcallSoakMain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The short, bounded version of {@link UpcallSoakMain} (docs/reliability.md §JVM soak): 6,000
 * upcall exceptions across every callback kind, each retried, then 4 threads with their own
 * readers, writers and containers for 3 s; the JVM survives and the C heap in use (glibc
 * {@code mallinfo2}, where the native library allocates) grows by less than 32 MiB from the warm
 * point to the end: the JVM's own mallocs (the JIT compiling other tests' classes) move it by
 * several MiB in a shared test JVM, while a leaked buffer per round trip would add tens of MiB.
 * The main measures it alone: flat or shrinking. (The resident set is printed by the main only:
 * in a shared test JVM it moves with the Java heap pages other tests touch.)
 */
class SoakTest {
    @Test
    @Timeout(120)
    void upcallExceptionsAndParallelHandlesKeepMemoryFlat() throws Exception {
        UpcallSoakMain.Result r = UpcallSoakMain.run(6_000, 4, 3);
        assertEquals(6_000, r.exceptions());
        assertTrue(r.roundTrips() > 0);
        assertTrue(r.mallocGrowthKiB() < 32 * 1024, "the C heap in use grew by " + r.mallocGrowthKiB() + " KiB");
    }
}
