package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.util.Locale;

/**
 * The cost of a first use in a fresh JVM: from the first call into the library (which loads
 * it) to the first tensor written and read back in memory. Run it in fresh JVMs
 * ({@code firstuse.sh} does, five times, and prints the median).
 */
public final class FirstUse {
    private FirstUse() {
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        long t0 = System.nanoTime();
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("x").metadata("k", "v").build();
        long t1 = System.nanoTime();
        Writer w = Writer.toMemory();
        try (Tensor t = Tensor.allocate(d)) {
            w.write(t);
        }
        w.close();
        try (Reader r = Reader.of(w.toByteArray()); Tensor t = r.read()) {
            if (t.descriptor().name().isEmpty()) {
                throw new AssertionError();
            }
        }
        long t2 = System.nanoTime();
        System.out.printf("%.1f %.1f%n", (t1 - t0) / 1e6, (t2 - t0) / 1e6);
    }
}
