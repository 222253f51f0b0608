package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Locale;

/**
 * Per-tensor cost of the Java API, warm, in memory (no socket): named float32[768] tensors
 * with one metadata entry. Compare with the native core's floor printed by
 * {@code cargo run --release --offline -p hurray-core --example pertensor_bench} in the same
 * run ({@code pertensor.sh} runs both); the difference is the Java overhead.
 *
 * <pre>java ... dev.hurray.bench.PerTensor [N=100000] [ROUNDS=7]</pre>
 *
 * Rows: a descriptor made with the builder; renamed from a template ({@code withName}); a
 * write of a tensor whose descriptor is renamed per tensor (batched writer); a read plus close
 * of such a tensor, looking at its name; the natural code's write (a descriptor built per
 * tensor, {@code Tensor.copyOf} of a heap array, the default writer, close). Writers send into
 * one reused 1 MiB buffer, as into a socket's send buffer.
 */
public final class PerTensor {
    private static final java.lang.management.ThreadMXBean MX = java.lang.management.ManagementFactory.getThreadMXBean();

    private PerTensor() {
    }

    /** Median CPU µs of {@code HurrayFile.entry(name)} over a 1,000-tensor file, names already looked up once. */
    private static double entryLookup(int rounds) throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("hurray-bench");
        java.nio.file.Path path = dir.resolve("entries.hrry");
        try (dev.hurray.HurrayFileWriter w = dev.hurray.HurrayFile.create(path); Tensor t = Tensor.of(new float[16])) {
            for (int i = 0; i < 1000; i++) {
                w.add("layer" + i + "/weight", t);
            }
            w.finish();
        }
        String[] names = new String[1000];
        for (int i = 0; i < names.length; i++) {
            names[i] = "layer" + ((i * 7919) % 1000) + "/weight";
        }
        double[] us = new double[rounds];
        try (dev.hurray.HurrayFile f = dev.hurray.HurrayFile.open(path)) {
            for (String n : names) {
                f.entry(n).orElseThrow();
            }
            int reps = 200_000;
            for (int r = -2; r < rounds; r++) {
                long t0 = cpu();
                long sum = 0;
                for (int i = 0; i < reps; i++) {
                    sum += f.entry(names[i % names.length]).orElseThrow().index();
                }
                long t1 = cpu();
                if (sum < 0) {
                    throw new AssertionError();
                }
                if (r >= 0) {
                    us[r] = (t1 - t0) / 1e3 / reps;
                }
            }
        } finally {
            java.nio.file.Files.deleteIfExists(path);
            java.nio.file.Files.deleteIfExists(dir);
        }
        Arrays.sort(us);
        return us[rounds / 2];
    }

    /**
     * This thread's CPU time in ns: on a shared, loaded machine wall time mostly measures the
     * scheduler, CPU time the work (GC and JIT threads are not counted).
     */
    private static long cpu() {
        return MX.getCurrentThreadCpuTime();
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 7;
        TensorDescriptor template = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("emb")
                .metadata("source", "bench").build();
        double[][] us = new double[5][rounds];
        byte[] doc = "bench".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        float[] row = new float[768];
        // The writers send into one reused 1 MiB buffer, as a socket's send buffer would take
        // the bytes (a growing in-memory sink would measure the heap's growth instead); the
        // reader reads one stream made once.
        MemoryChannels.RingSink sink = new MemoryChannels.RingSink(1 << 20);
        byte[] bytes;
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < n; i++) {
                w.write(template.withName("emb-" + i), MemorySegment.ofArray(row));
            }
            w.finish();
            bytes = w.toByteArray();
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment payload = arena.allocate(768 * 4, 64);
            for (int r = -2; r < rounds; r++) {
                long t0 = cpu();
                for (int i = 0; i < n; i++) {
                    TensorDescriptor.builder(ElementType.FLOAT32, 768).name("emb-" + i).metadata("source", "bench").build();
                }
                long t1 = cpu();
                for (int i = 0; i < n; i++) {
                    template.withName("emb-" + i);
                }
                long t2 = cpu();
                Writer w = Writer.of(sink, WriterOptions.defaults().withBatchBytes(WriterOptions.DEFAULT_BATCH_BYTES));
                long t3 = cpu();
                for (int i = 0; i < n; i++) {
                    w.write(template.withName("emb-" + i), payload);
                }
                w.close();
                long t4 = cpu();
                try (Writer natural = Writer.of(sink)) {
                    for (int i = 0; i < n; i++) {
                        row[0] = i;
                        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 768)
                                .name("emb-" + i).metadata("doc", doc).build();
                        try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(row))) {
                            natural.write(t);
                        }
                    }
                }
                long t5 = cpu();
                long names = 0;
                try (Reader rd = Reader.of(bytes)) {
                    for (Tensor t : rd) {
                        names += t.descriptor().name().orElseThrow().length();
                        t.close();
                    }
                }
                long t6 = cpu();
                if (names == 0) {
                    throw new AssertionError();
                }
                if (r >= 0) {
                    us[0][r] = (t1 - t0) / 1e3 / n;
                    us[1][r] = (t2 - t1) / 1e3 / n;
                    us[2][r] = (t4 - t3) / 1e3 / n;
                    us[3][r] = (t6 - t5) / 1e3 / n;
                    us[4][r] = (t5 - t4) / 1e3 / n;
                }
            }
        }
        double entryUs = entryLookup(rounds);
        String[] rows = {"descriptor by builder", "descriptor by withName",
            "write (withName + write, batched, into a reused 1 MiB buffer)", "read + name + close (from memory)",
            "natural write (builder + copyOf + write + close, default writer, into a reused 1 MiB buffer)"};
        System.out.printf("| Java API, %d named float32[768] (median of %d) | µs of CPU per tensor |%n|---|---|%n", n, rounds);
        for (int k = 0; k < rows.length; k++) {
            Arrays.sort(us[k]);
            System.out.printf("| %s | %.3f |%n", rows[k], us[k][rounds / 2]);
        }
        System.out.printf("| HurrayFile.entry(name), warm (1,000-tensor file, index in memory) | %.3f |%n", entryUs);
    }
}
