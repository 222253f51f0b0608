package dev.hurray.bench;

import dev.hurray.Reader;
import dev.hurray.Tensor;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;

/**
 * One side of the two-JVM embeddings run ({@link Embeddings}, {@code embeddings.sh}) alone in a
 * fresh JVM, without a socket or a peer, so that its cold cost can be split from the other
 * side's and from the network: {@code send N} writes N named float32[768] embeddings with the
 * natural code (builder, {@code Tensor.copyOf}, default writer) to a channel that discards
 * them; {@code make FILE N} writes the same stream to a file and {@code recv FILE} reads it back
 * as the receiver does (name and first element of each tensor, then close). Prints the loop's
 * wall time and the main thread's CPU time (Linux schedstat); run it under {@code /usr/bin/time}
 * for the whole process's CPU, JIT threads included. A last argument {@code curve} also prints
 * the CPU of the first tensor and of each later block of 2,000.
 */
public final class ColdSide {
    private ColdSide() {
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        long cpu0 = FirstUsePhases.cpu();
        long t0 = System.nanoTime();
        Curve curve = args[args.length - 1].equals("curve") ? new Curve() : null;
        long check = switch (args[0]) {
            case "send" -> send(new Discard(), Integer.parseInt(args[1]), curve);
            case "make" -> {
                try (FileChannel ch = FileChannel.open(Path.of(args[1]), StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                    yield send(ch, Integer.parseInt(args[2]), null);
                }
            }
            case "recv" -> recv(Path.of(args[1]), curve);
            default -> throw new IllegalArgumentException(args[0]);
        };
        long t1 = System.nanoTime();
        long cpu1 = FirstUsePhases.cpu();
        System.out.printf("%s wall %.1f ms, main-thread cpu %.1f ms (check %d)%n", args[0], (t1 - t0) / 1e6,
                (cpu1 - cpu0) / 1e6, check);
        if (curve != null) {
            System.out.println("main-thread cpu ms per block of tensors:" + curve.out);
        }
    }

    private static long send(WritableByteChannel ch, int n, Curve curve) throws IOException {
        Embeddings.sendNatural(ch, n, curve);
        return n;
    }

    private static long recv(Path file, Curve curve) throws IOException {
        long check = 0;
        int i = 0;
        try (FileChannel ch = FileChannel.open(file); Reader r = Reader.of(ch)) {
            for (Tensor next = r.read(); next != null; next = r.read()) {
                try (Tensor t = next) {
                    String s = t.descriptor().name().orElseThrow();
                    check += s.length() + (long) t.buffer(0).get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0);
                }
                if (curve != null) {
                    curve.accept(i);
                }
                i++;
            }
        }
        return check;
    }

    /**
     * With a last argument {@code curve}: the main thread's CPU for the first tensor (library
     * load and first use included) and for each later block of 2,000, to show how the cost
     * falls as the JIT compiles the path.
     */
    private static final class Curve implements java.util.function.IntConsumer {
        private final StringBuilder out = new StringBuilder();
        private long last = uncheckedCpu();

        @Override
        public void accept(int i) {
            if (i == 0 || i % 2000 == 1999) {
                long now = uncheckedCpu();
                out.append(String.format(" %d: %.1f", i + 1, (now - last) / 1e6));
                last = now;
            }
        }

        private static long uncheckedCpu() {
            try {
                return FirstUsePhases.cpu();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    /** A channel that takes every byte and keeps none (also {@link WriteAB}'s sink). */
    static final class Discard implements WritableByteChannel {
        @Override
        public int write(ByteBuffer src) {
            int n = src.remaining();
            src.position(src.limit());
            return n;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }
}
