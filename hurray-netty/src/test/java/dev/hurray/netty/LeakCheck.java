package dev.hurray.netty;

import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Netty's leak detector at PARANOID, recording every leak it reports so that tests can assert
 * there was none (Netty only logs them); and Hurray's own count of resources its cleaner freed
 * because nobody closed them (an encoder, decoder or tensor), which must not grow either.
 */
public final class LeakCheck {
    static final List<String> LEAKS = new ArrayList<>();
    /** Hurray's leak count when the first test class loaded this. */
    private static final long HURRAY_LEAKS_BEFORE = dev.hurray.internal.Leaks.leaked();

    static {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                    long maxActive) {
                return new ResourceLeakDetector<T>(resource, samplingInterval) {
                    @Override
                    protected void reportTracedLeak(String resourceType, String records) {
                        synchronized (LEAKS) {
                            LEAKS.add(resourceType + records);
                        }
                    }

                    @Override
                    protected void reportUntracedLeak(String resourceType) {
                        synchronized (LEAKS) {
                            LEAKS.add(resourceType);
                        }
                    }
                };
            }
        });
    }

    private LeakCheck() {
    }

    public static void install() {
        // The static initializer does the work, once, before any buffer is allocated.
    }

    /** Collects garbage and lets the detectors look, then fails if any leak was reported. */
    public static void assertNoLeaks() throws InterruptedException {
        // Bounded: only a garbage collection makes a leaked buffer's reference reach the detector.
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
            // Leaks are reported when a later buffer is tracked.
            io.netty.buffer.ByteBuf b = io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(16);
            b.release();
            io.netty.buffer.ByteBuf u = io.netty.buffer.UnpooledByteBufAllocator.DEFAULT.directBuffer(16);
            u.release();
        }
        synchronized (LEAKS) {
            if (!LEAKS.isEmpty()) {
                throw new AssertionError("Netty reported leaked buffers:\n" + String.join("\n", LEAKS));
            }
        }
        long hurray = dev.hurray.internal.Leaks.leaked() - HURRAY_LEAKS_BEFORE;
        if (hurray != 0) {
            throw new AssertionError(hurray + " Hurray resources (encoders, decoders, tensors) were never closed and "
                    + "were freed by the cleaner (its warning names them; -Dhurray.leaks.track=true says where)");
        }
    }
}
