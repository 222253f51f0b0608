package dev.hurray.manual;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * Manual measuring tool, not a test (surefire does not run it; nothing here asserts a time):
 * µs per 1 KiB float32 tensor written to memory ({@link Writer#toMemory()}) and read back
 * ({@link Reader#of(byte[])}, each tensor closed), JIT-warm.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -Xms2g -Xmx2g -XX:+AlwaysPreTouch \
 *      -Dhurray.library.path=native/target/dist/libhurray.so -cp CLASSPATH \
 *      dev.hurray.manual.SmallTensorRoundTripMain [rounds] [tensorsPerRound] [batch]
 * </pre>
 *
 * Variants, alternated round by round so that all see the same machine load: the same
 * descriptor every time written with {@code write(Tensor)} (a uniform stream), a distinct name
 * per tensor written with {@code write(descriptor, segment)} (every descriptor differs, so each
 * is read back field by field), each with the reader's buffer pool on (default) and off. A
 * writer and a reader are made per batch (default 1000 tensors). Also: the cost of making and
 * closing an empty writer and reader. Prints the median and the minimum over rounds, of wall
 * time and, with {@code -Dcpu=true}, of the measuring thread's CPU time instead (steadier on a
 * loaded machine; it leaves out the garbage collector's and compiler's threads). {@code -Donly=TEXT}
 * keeps the variants whose label contains TEXT (for profiling one path).
 */
public final class SmallTensorRoundTripMain {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final boolean CPU = Boolean.getBoolean("cpu");

    private SmallTensorRoundTripMain() {
    }

    private static long now() {
        return CPU ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
    }

    interface Step {
        void write(Writer w, int i) throws Exception;
    }

    record Variant(String label, Step step, ReaderOptions options) {
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        int perRound = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
        int batch = args.length > 2 ? Integer.parseInt(args[2]) : 1000;
        Tensor t = Tensor.of(new float[256]);
        TensorDescriptor[] named = new TensorDescriptor[batch];
        for (int i = 0; i < batch; i++) {
            named[i] = TensorDescriptor.builder(ElementType.FLOAT32, 256).name("layer." + i + ".weight").build();
        }
        MemorySegment payload = Arena.global().allocate(1024, 64);
        ReaderOptions pooled = ReaderOptions.defaults();
        ReaderOptions unpooled = ReaderOptions.defaults().withBufferPoolBytes(0);
        Variant[] variants = {
            new Variant("same descriptor, write(Tensor), pool", (w, i) -> w.write(t), pooled),
            new Variant("same descriptor, write(Tensor), no pool", (w, i) -> w.write(t), unpooled),
            new Variant("distinct names, write(desc, seg), pool", (w, i) -> w.write(named[i], payload), pooled),
            new Variant("distinct names, write(desc, seg), no pool", (w, i) -> w.write(named[i], payload), unpooled),
        };
        String only = System.getProperty("only");
        if (only != null) {
            variants = Arrays.stream(variants).filter(v -> v.label().contains(only)).toArray(Variant[]::new);
        }
        int warm = 5;
        double[][] write = new double[variants.length][rounds];
        double[][] read = new double[variants.length][rounds];
        double[][] handles = new double[2][rounds];
        for (int r = -warm; r < rounds; r++) {
            for (int v = 0; v < variants.length; v++) {
                double[] wr = run(variants[v], perRound, batch);
                if (r >= 0) {
                    write[v][r] = wr[0];
                    read[v][r] = wr[1];
                }
            }
            double[] h = handles(2000);
            if (r >= 0) {
                handles[0][r] = h[0];
                handles[1][r] = h[1];
            }
        }
        System.out.printf("%d rounds of %d tensors per variant (batch %d); %s us per tensor, median (min)%n", rounds,
                perRound, batch, CPU ? "thread CPU" : "wall");
        for (int v = 0; v < variants.length; v++) {
            double[] total = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                total[r] = write[v][r] + read[v][r];
            }
            System.out.printf("%-44s write %s  read %s  total %s%n", variants[v].label(), fmt(write[v]), fmt(read[v]),
                    fmt(total));
        }
        System.out.printf("%-44s writer %s  reader %s%n", "open+close an empty handle", fmt(handles[0]), fmt(handles[1]));
    }

    private static String fmt(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return String.format("%6.3f (%6.3f)", s[s.length / 2], s[0]);
    }

    /** Returns {write, read} µs per tensor. */
    private static double[] run(Variant variant, int tensors, int batch) throws Exception {
        long writeNs = 0;
        long readNs = 0;
        long count = 0;
        for (int done = 0; done < tensors; done += batch) {
            long t0 = now();
            byte[] wire;
            try (Writer w = Writer.toMemory()) {
                for (int i = 0; i < batch; i++) {
                    variant.step().write(w, i);
                }
                w.finish();
                wire = w.toByteArray();
            }
            long t1 = now();
            try (Reader r = Reader.of(wire, variant.options())) {
                Tensor x;
                while ((x = r.read()) != null) {
                    count += x.buffer(0).byteSize();
                    x.close();
                }
            }
            long t2 = now();
            writeNs += t1 - t0;
            readNs += t2 - t1;
        }
        if (count != (long) tensors * 1024) {
            throw new AssertionError("read " + count + " bytes");
        }
        return new double[] {writeNs / 1e3 / tensors, readNs / 1e3 / tensors};
    }

    /** µs to make and close an empty in-memory writer, and a reader of its bytes. */
    private static double[] handles(int n) throws Exception {
        long w = 0;
        long r = 0;
        for (int i = 0; i < n; i++) {
            long t0 = now();
            byte[] wire;
            try (Writer writer = Writer.toMemory()) {
                writer.finish();
                wire = writer.toByteArray();
            }
            long t1 = now();
            try (Reader reader = Reader.of(wire)) {
                if (reader.read() != null) {
                    throw new AssertionError("expected an empty stream");
                }
            }
            long t2 = now();
            w += t1 - t0;
            r += t2 - t1;
        }
        return new double[] {w / 1e3 / n, r / 1e3 / n};
    }
}
