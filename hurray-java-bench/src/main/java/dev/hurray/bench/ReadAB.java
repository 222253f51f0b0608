package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * The read side of {@link PerTensor} for two or more builds in one JVM: each {@code benchmarks.jar}
 * is loaded by a class loader of its own (with its own copy of the native library), and the
 * builds take turns, round by round, over the same stream. On a shared, loaded machine the
 * builds then meet the same conditions within milliseconds, which separate JVMs minutes apart
 * do not. Per tensor: {@code read()}, {@code descriptor().name()}, optionally
 * {@code buffer(0).get(JAVA_FLOAT, 0)}, {@code close()}; named float32[768] tensors with one
 * metadata entry. Prints each build's median CPU µs per tensor (this thread's CPU time).
 *
 * <pre>java -Xms3g -Xmx3g --enable-native-access=ALL-UNNAMED -cp benchmarks.jar dev.hurray.bench.ReadAB
 *     N ROUNDS name|buffer JAR...</pre>
 */
public final class ReadAB {
    private static final java.lang.management.ThreadMXBean MX = java.lang.management.ManagementFactory.getThreadMXBean();

    private ReadAB() {
    }

    /** The stream: {@code n} named float32[768] tensors, one metadata entry each (as {@link PerTensor} reads). */
    public static byte[] stream(int n) throws Exception {
        TensorDescriptor template = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("emb")
                .metadata("source", "bench").build();
        float[] row = new float[768];
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < n; i++) {
                w.write(template.withName("emb-" + i), MemorySegment.ofArray(row));
            }
            w.finish();
            return w.toByteArray();
        }
    }

    /** CPU ns of reading all of {@code bytes}, looking at each name (and at buffer 0 when {@code buffer}). */
    public static long readAll(byte[] bytes, boolean buffer) throws Exception {
        long t0 = MX.getCurrentThreadCpuTime();
        long names = 0;
        float sum = 0;
        try (Reader r = Reader.of(bytes)) {
            for (Tensor t; (t = r.read()) != null;) {
                names += t.descriptor().name().orElseThrow().length();
                if (buffer) {
                    sum += t.buffer(0).get(ValueLayout.JAVA_FLOAT, 0);
                }
                t.close();
            }
        }
        long t1 = MX.getCurrentThreadCpuTime();
        if (names == 0 || sum != 0) {
            throw new AssertionError();
        }
        return t1 - t0;
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        int n = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]);
        boolean buffer = args[2].equals("buffer");
        String[] jars = Arrays.copyOfRange(args, 3, args.length);
        Method[] read = new Method[jars.length];
        byte[][] wire = new byte[jars.length][];
        for (int j = 0; j < jars.length; j++) {
            URLClassLoader l = new URLClassLoader(new URL[] {Path.of(jars[j]).toUri().toURL()},
                    ClassLoader.getPlatformClassLoader());
            Class<?> c = Class.forName(ReadAB.class.getName(), true, l);
            wire[j] = (byte[]) c.getMethod("stream", int.class).invoke(null, n);
            read[j] = c.getMethod("readAll", byte[].class, boolean.class);
        }
        double[][] us = new double[jars.length][rounds];
        for (int r = -3; r < rounds; r++) {
            for (int k = 0; k < jars.length; k++) {
                int j = (r & 1) == 0 ? k : jars.length - 1 - k; // who goes first alternates
                long ns = (long) read[j].invoke(null, wire[j], buffer);
                if (r >= 0) {
                    us[j][r] = ns / 1e3 / n;
                }
            }
        }
        System.out.printf("| read + name%s + close, %d named float32[768], one JVM (median of %d) | µs of CPU per tensor |%n|---|---|%n",
                buffer ? " + buffer(0).get" : "", n, rounds);
        for (int j = 0; j < jars.length; j++) {
            double[] s = us[j].clone();
            Arrays.sort(s);
            System.out.printf("| %s | %.3f |%n", jars[j], s[rounds / 2]);
        }
    }
}
