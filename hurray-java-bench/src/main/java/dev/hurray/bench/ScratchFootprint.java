package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.Shape;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.ObjectName;

/**
 * The native memory that scratch areas cost with one virtual thread per request (areas are
 * lent by pools, so it stays flat; an area per thread would show as about 4 KiB per thread):
 * {@code N} short-lived virtual threads (default 100,000) each read one small tensor from
 * memory (with {@code build}, each also encodes a named descriptor of its own shape, the path
 * that lays a descriptor spec out; with {@code file}, each instead opens a small HRRYFILE by
 * path and reads a tensor by name: the container reader's and the descriptor accessors'
 * out-parameters), then the JVM's native memory tracking reports the memory allocated outside
 * the heap ("Other": where {@code Arena} allocations are counted) before and
 * after a garbage collection. Run with {@code -XX:NativeMemoryTracking=summary}:
 *
 * <pre>
 * java -XX:NativeMemoryTracking=summary --enable-native-access=ALL-UNNAMED -cp CLASSPATH \
 *     dev.hurray.bench.ScratchFootprint [threads] [build|file]
 * </pre>
 *
 * Prints one line per phase: committed "Other" memory in KiB, and the difference to the
 * baseline taken after a warm-up read on the main thread.
 */
public final class ScratchFootprint {
    private static final Pattern OTHER = Pattern.compile("-\\s+Other \\(reserved=(\\d+)KB, committed=(\\d+)KB\\)");

    private ScratchFootprint() {
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        boolean build = args.length > 1 && args[1].equals("build");
        boolean file = args.length > 1 && args[1].equals("file");
        byte[] stream;
        try (Writer w = Writer.toMemory(); Tensor t = Tensor.of(new float[] {1, 2, 3, 4}, 4)) {
            w.write(t);
            w.finish();
            stream = w.toByteArray();
        }
        Path container = Files.createTempFile("scratch-footprint", ".hrry");
        try (HurrayFileWriter w = HurrayFile.create(container); Tensor t = Tensor.of("t", new float[] {1, 2, 3, 4}, 4)) {
            w.add(t);
            w.finish();
        }
        readOne(stream);
        readFromFile(container);
        System.gc();
        long base = otherKiB();
        System.out.printf("baseline: %d KiB%n", base);
        try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<?>[] fs = new Future<?>[n];
            for (int i = 0; i < n; i++) {
                int shape = 1 + i % 97;
                String name = "t" + i;
                fs[i] = vt.submit(() -> {
                    if (file) {
                        readFromFile(container);
                    } else {
                        readOne(stream);
                    }
                    if (build && TensorDescriptor.builder(ElementType.FLOAT32, Shape.of(shape)).name(name).build()
                            .encode().length == 0) {
                        throw new AssertionError();
                    }
                    return null;
                });
            }
            for (Future<?> f : fs) {
                f.get();
            }
        }
        long after = otherKiB();
        System.out.printf("after %d virtual threads: %d KiB (+%d KiB, %.0f bytes per thread)%n", n, after, after - base,
                (after - base) * 1024.0 / n);
        System.gc();
        Thread.sleep(500); // the arenas' cleaners run on their own thread after the collection
        long collected = otherKiB();
        System.out.printf("after a GC: %d KiB (+%d KiB)%n", collected, collected - base);
        Files.delete(container);
    }

    private static void readFromFile(Path container) throws Exception {
        try (HurrayFile f = HurrayFile.open(container); Tensor t = f.read("t")) {
            if (t.descriptor().elementCount() != 4) {
                throw new AssertionError();
            }
        }
    }

    private static void readOne(byte[] stream) throws Exception {
        try (Reader r = Reader.of(stream); Tensor t = r.read()) {
            if (t.descriptor().elementCount() != 4) {
                throw new AssertionError();
            }
        }
    }

    /** Committed native memory in the NMT category "Other", in KiB (-1 without NMT). */
    private static long otherKiB() throws Exception {
        String out = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                new Object[] {new String[] {"summary"}}, new String[] {String[].class.getName()});
        Matcher m = OTHER.matcher(out);
        return m.find() ? Long.parseLong(m.group(2)) : -1;
    }
}
