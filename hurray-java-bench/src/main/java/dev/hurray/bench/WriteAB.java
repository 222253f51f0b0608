package dev.hurray.bench;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * The write side of {@link ReadAB}: the natural code's send ({@link Embeddings#sendNatural}: a
 * descriptor built per tensor, {@code Tensor.copyOf} of a {@code float[]} it refills, the
 * default writer, close) into a channel that discards the bytes, for two or more builds'
 * {@code benchmarks.jar} in one JVM, each in a class loader of its own, taking turns round by
 * round (who goes first alternates). Prints each build's median CPU µs per tensor (this
 * thread's CPU time, the refill of the 768 floats included).
 *
 * <pre>java -Xms2g -Xmx2g --enable-native-access=ALL-UNNAMED -cp benchmarks.jar dev.hurray.bench.WriteAB
 *     N ROUNDS JAR...</pre>
 */
public final class WriteAB {
    private static final java.lang.management.ThreadMXBean MX = java.lang.management.ManagementFactory.getThreadMXBean();

    private WriteAB() {
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        int n = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]);
        String[] jars = Arrays.copyOfRange(args, 2, args.length);
        Method[] send = new Method[jars.length];
        for (int j = 0; j < jars.length; j++) {
            URLClassLoader l = new URLClassLoader(new URL[] {Path.of(jars[j]).toUri().toURL()},
                    ClassLoader.getPlatformClassLoader());
            Class<?> c = Class.forName(Embeddings.class.getName(), true, l);
            send[j] = c.getDeclaredMethod("sendNatural", WritableByteChannel.class, int.class);
            send[j].setAccessible(true);
        }
        double[][] us = new double[jars.length][rounds];
        for (int r = -3; r < rounds; r++) {
            for (int k = 0; k < jars.length; k++) {
                int j = (r & 1) == 0 ? k : jars.length - 1 - k;
                long t0 = MX.getCurrentThreadCpuTime();
                send[j].invoke(null, new ColdSide.Discard(), n);
                long t1 = MX.getCurrentThreadCpuTime();
                if (r >= 0) {
                    us[j][r] = (t1 - t0) / 1e3 / n;
                }
            }
        }
        System.out.printf("| natural write (builder + copyOf + default writer + close, into a discarding channel), %d named "
                + "float32[768], one JVM (median of %d) | µs of CPU per tensor |%n|---|---|%n", n, rounds);
        for (int j = 0; j < jars.length; j++) {
            double[] s = us[j].clone();
            Arrays.sort(s);
            System.out.printf("| %s | %.3f |%n", jars[j], s[rounds / 2]);
        }
    }
}
