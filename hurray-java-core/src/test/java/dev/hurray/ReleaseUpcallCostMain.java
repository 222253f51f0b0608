package dev.hurray;

import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Manual measuring tool, not a test (surefire does not run it; nothing here asserts a time):
 * what the release upcall of an {@link ExternalBuffer} costs when the last reference is dropped
 * on a Java thread, and on a thread the JVM did not start (which the JVM attaches for the upcall
 * and detaches after). Each figure is ns per drop, minus the same drop with no release action
 * (no upcall) on the same kind of thread, median over rounds. The last two lines drop one
 * reference per fresh native thread, so that every upcall is its thread's first.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp CLASSPATH dev.hurray.ReleaseUpcallCostMain [rounds] [drops]
 * </pre>
 */
public final class ReleaseUpcallCostMain {
    private ReleaseUpcallCostMain() {
    }

    public static void main(String[] args) throws Throwable {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
        MemorySegment destroy = InteropNative.hurrayFunction("hurray_buffer_destroy");
        AtomicLong count = new AtomicLong();
        long[][] results = new long[4][rounds];
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mem = arena.allocate(64, 64);
            MemorySegment handles = arena.allocate(ValueLayout.ADDRESS, n);
            for (int r = 0; r < rounds; r++) {
                for (int v = 0; v < 4; v++) {
                    boolean withRelease = v % 2 == 1;
                    boolean nativeThread = v >= 2;
                    Runnable release = withRelease ? count::incrementAndGet : null;
                    ExternalBuffer[] bufs = new ExternalBuffer[n];
                    for (int i = 0; i < n; i++) {
                        bufs[i] = ExternalBuffer.wrap(mem, release);
                        if (nativeThread) {
                            MemorySegment out = handles.asSlice(i * 8L, 8);
                            hurray_h.hurray_buffer_clone(bufs[i].nativeHandle(), out);
                        }
                    }
                    if (nativeThread) {
                        for (ExternalBuffer b : bufs) {
                            b.close(); // the native clone is now the last reference
                        }
                    }
                    long t0 = System.nanoTime();
                    if (nativeThread) {
                        int rc = (int) InteropNative.DESTROY_ALL_ON_NEW_THREAD.invokeExact(destroy, handles, (long) n);
                        if (rc != 0) {
                            throw new IllegalStateException("thread start failed");
                        }
                    } else {
                        for (ExternalBuffer b : bufs) {
                            b.close();
                        }
                    }
                    results[v][r] = System.nanoTime() - t0;
                }
            }
        }
        String[] names = {"java thread, no release", "java thread, release upcall", "native thread, no release",
                "native thread, release upcall"};
        for (int v = 0; v < 4; v++) {
            long[] s = results[v].clone();
            Arrays.sort(s);
            System.out.printf("%-32s median %8.1f ns/drop  min %8.1f%n", names[v], s[rounds / 2] / (double) n,
                    s[0] / (double) n);
        }
        // One drop per fresh native thread: the first upcall on a thread pays the attach.
        int m = Math.max(1, n / 20);
        long[][] fresh = new long[2][rounds];
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mem = arena.allocate(64, 64);
            MemorySegment slot = arena.allocate(ValueLayout.ADDRESS);
            for (int r = 0; r < rounds; r++) {
                for (int v = 0; v < 2; v++) {
                    long total = 0;
                    for (int i = 0; i < m; i++) {
                        ExternalBuffer b = ExternalBuffer.wrap(mem, v == 1 ? count::incrementAndGet : null);
                        hurray_h.hurray_buffer_clone(b.nativeHandle(), slot);
                        b.close();
                        long t0 = System.nanoTime();
                        int rc = (int) InteropNative.DESTROY_ALL_ON_NEW_THREAD.invokeExact(destroy, slot, 1L);
                        total += System.nanoTime() - t0;
                        if (rc != 0) {
                            throw new IllegalStateException("thread start failed");
                        }
                    }
                    fresh[v][r] = total;
                }
            }
        }
        String[] freshNames = {"fresh native thread, no release", "fresh native thread, release"};
        for (int v = 0; v < 2; v++) {
            long[] s = fresh[v].clone();
            Arrays.sort(s);
            System.out.printf("%-32s median %8.1f ns/drop  min %8.1f (thread start+join included)%n", freshNames[v],
                    s[rounds / 2] / (double) m, s[0] / (double) m);
        }
        System.out.println("release actions run: " + count.get());
    }
}
