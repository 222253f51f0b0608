package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * First use split into phases, in CPU time of the main thread (Linux: {@code
 * /proc/thread-self/schedstat}), so that load from other processes inflates it less than wall
 * time: the JDK's own first segment and first downcall (a libc {@code strlen}), then the
 * library's load, first descriptor, first write and first read. Run it in fresh JVMs:
 * {@code java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar dev.hurray.bench.FirstUsePhases}.
 */
public final class FirstUsePhases {
    private FirstUsePhases() {
    }

    /** Nanoseconds this thread has run on a CPU. */
    static long cpu() throws IOException {
        try (FileInputStream in = new FileInputStream("/proc/thread-self/schedstat")) {
            byte[] b = new byte[64];
            int n = in.read(b);
            long v = 0;
            for (int i = 0; i < n && b[i] != ' '; i++) {
                v = v * 10 + (b[i] - '0');
            }
            return v;
        }
    }

    public static void main(String[] args) throws Throwable {
        cpu();
        long t0 = cpu();
        try (Arena a = Arena.ofConfined()) {
            a.allocate(64).set(ValueLayout.JAVA_LONG, 0, 1);
        }
        long t1 = cpu();
        Linker l = Linker.nativeLinker();
        MethodHandle strlen = l.downcallHandle(l.defaultLookup().find("strlen").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        try (Arena a = Arena.ofConfined()) {
            long n = (long) strlen.invokeExact(a.allocateFrom("hello"));
            if (n != 5) {
                throw new AssertionError(n);
            }
        }
        long t2 = cpu();
        dev.hurray.ffm.NativeLibrary.load();
        long t3 = cpu();
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("x").metadata("k", "v").build();
        long t4 = cpu();
        Writer w = Writer.toMemory();
        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(new float[768]))) {
            w.write(t);
        }
        w.close();
        long t5 = cpu();
        try (Reader r = Reader.of(w.toByteArray()); Tensor t = r.read()) {
            if (t.descriptor().name().isEmpty()) {
                throw new AssertionError();
            }
        }
        long t6 = cpu();
        System.out.printf("jdk first segment %.1f ms, jdk first downcall %.1f ms | library load %.1f, first build %.1f,"
                + " first write %.1f, first read %.1f ms (main-thread CPU)%n", (t1 - t0) / 1e6, (t2 - t1) / 1e6,
                (t3 - t2) / 1e6, (t4 - t3) / 1e6, (t5 - t4) / 1e6, (t6 - t5) / 1e6);
    }
}
