package dev.hurray.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.ExternalBuffer;
import dev.hurray.ffm.NativeLibrary;
import dev.hurray.ffm.hurray_h;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the release upcall of an {@link ExternalBuffer} costs when the last reference is dropped
 * on a Java thread, and on a thread the JVM did not start (which the JVM attaches for the upcall
 * and detaches after). Each figure is ns per drop, minus the same drop with no release action
 * (no upcall) on the same kind of thread, median over rounds. The last two lines drop one
 * reference per fresh native thread, so that every upcall is its thread's first. The native
 * threads come from a small C helper ({@code native_threads.c}, a resource of this jar) that
 * gcc (or {@code $CC}) compiles into a temporary folder at start.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp hurray-java-bench/target/benchmarks.jar \
 *     dev.hurray.bench.ReleaseUpcallCost [rounds] [drops]
 * </pre>
 */
public final class ReleaseUpcallCost {
    private ReleaseUpcallCost() {
    }

    public static void main(String[] args) throws Throwable {
        Locale.setDefault(Locale.ROOT);
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
        MethodHandle destroyAllOnNewThread = nativeThreads();
        MemorySegment destroy = NativeLibrary.lookup().find("hurray_buffer_destroy").orElseThrow();
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
                        int rc = (int) destroyAllOnNewThread.invokeExact(destroy, handles, (long) n);
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
                        int rc = (int) destroyAllOnNewThread.invokeExact(destroy, slot, 1L);
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

    /**
     * {@code int32_t bench_destroy_all_on_new_thread(slot_fn, void **handles, int64_t n)} from
     * {@code native_threads.c}, compiled into a temporary folder.
     */
    static MethodHandle nativeThreads() throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("hurray-bench-native");
        Path src = dir.resolve("native_threads.c");
        try (InputStream in = ReleaseUpcallCost.class.getResourceAsStream("native_threads.c")) {
            if (in == null) {
                throw new IllegalStateException("native_threads.c is missing from the class path");
            }
            Files.copy(in, src);
        }
        Path lib = dir.resolve("libnative_threads.so");
        String cc = System.getenv().getOrDefault("CC", "gcc");
        List<String> cmd = List.of(cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC", "-pthread",
                src.toString(), "-o", lib.toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed (install gcc or set CC):\n" + out);
        }
        SymbolLookup l = SymbolLookup.libraryLookup(lib, Arena.global());
        // Loaded: the files can go (the mapping stays).
        Files.delete(lib);
        Files.delete(src);
        Files.delete(dir);
        return Linker.nativeLinker().downcallHandle(l.find("bench_destroy_all_on_new_thread").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
    }
}
