package dev.hurray.manual;

import dev.hurray.ElementType;
import dev.hurray.Reader;
import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.Semaphore;

/**
 * Manual measuring tool, not a test (surefire does not run it; nothing here asserts a time):
 * loopback TCP throughput of Hurray tensors through channel readers and writers, against a raw
 * {@link SocketChannel} moving the same bytes, in the same run.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -Xms2g -Xmx2g -XX:+AlwaysPreTouch \
 *      -Dhurray.library.path=native/target/dist/libhurray.so -cp CLASSPATH \
 *      dev.hurray.manual.LoopbackThroughputMain [MiB per tensor] [tensors per run] [runs]
 * </pre>
 *
 * Three long-lived connections: raw (one reused direct buffer on each side), Hurray with the
 * reader's buffer pool (the default), Hurray without it. Each run moves N tensors over one of
 * them, the three alternating run by run so they see the same machine load; the receiver closes
 * each tensor before reading the next. Prints GB/s (10^9 payload bytes per second) as the
 * median over runs, the median of the per-round ratios against raw, and the process's minor
 * page faults per run (from /proc/self/stat).
 */
public final class LoopbackThroughputMain {
    private LoopbackThroughputMain() {
    }

    /** One connection with a sender thread that sends N messages each time it is released. */
    private abstract static class Lane implements AutoCloseable {
        final SocketChannel out;
        final SocketChannel in;
        final Semaphore go = new Semaphore(0);
        final Thread sender;
        volatile Exception failure;

        Lane(ServerSocketChannel server, int tensors) throws IOException {
            out = SocketChannel.open(server.getLocalAddress());
            in = server.accept();
            sender = new Thread(() -> {
                try {
                    while (true) {
                        go.acquire();
                        for (int i = 0; i < tensors; i++) {
                            send();
                        }
                    }
                } catch (InterruptedException e) {
                    // closing
                } catch (Exception e) {
                    failure = e;
                }
            });
            sender.setDaemon(true);
            sender.start();
        }

        abstract void send() throws IOException;

        abstract long receive() throws IOException;

        @Override
        public void close() throws IOException {
            sender.interrupt();
            out.close();
            in.close();
        }
    }

    private static final class Raw extends Lane {
        private final ByteBuffer src;
        private final ByteBuffer dst;

        Raw(ServerSocketChannel server, int tensors, int bytes) throws IOException {
            super(server, tensors);
            src = ByteBuffer.allocateDirect(bytes);
            dst = ByteBuffer.allocateDirect(bytes);
        }

        @Override
        void send() throws IOException {
            src.clear();
            while (src.hasRemaining()) {
                out.write(src);
            }
        }

        @Override
        long receive() throws IOException {
            dst.clear();
            while (dst.hasRemaining()) {
                if (in.read(dst) < 0) {
                    throw new IOException("raw: end of input");
                }
            }
            return dst.capacity();
        }
    }

    private static final class Hurray extends Lane {
        private final Writer writer;
        private final Reader reader;
        private final Tensor tensor;

        Hurray(ServerSocketChannel server, int tensors, int bytes, ReaderOptions options) throws IOException {
            super(server, tensors);
            tensor = Tensor.allocate(dev.hurray.TensorDescriptor.of(ElementType.UINT8, bytes), dev.hurray.TensorScope.SHARED);
            tensor.buffer(0).fill((byte) 7);
            writer = Writer.of(out);
            reader = Reader.of(in, options);
        }

        @Override
        void send() throws IOException {
            writer.write(tensor);
        }

        @Override
        long receive() throws IOException {
            try (Tensor t = reader.read()) {
                return t.buffer(0).byteSize();
            }
        }
    }

    private static long minorFaults() {
        try {
            String stat = Files.readString(Path.of("/proc/self/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(f[7]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    public static void main(String[] args) throws Exception {
        int mib = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int tensors = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int runs = args.length > 2 ? Integer.parseInt(args[2]) : 9;
        int bytes = mib << 20;
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Lane[] lanes = {
                new Raw(server, tensors, bytes),
                new Hurray(server, tensors, bytes, ReaderOptions.defaults()),
                new Hurray(server, tensors, bytes, ReaderOptions.defaults().withBufferPoolBytes(0)),
            };
            String[] names = {"raw SocketChannel", "Hurray, pool (default 256 MiB)", "Hurray, no pool"};
            int warm = 2;
            double[][] gbps = new double[lanes.length][runs];
            long[][] faults = new long[lanes.length][runs];
            for (int r = -warm; r < runs; r++) {
                for (int l = 0; l < lanes.length; l++) {
                    Lane lane = lanes[l];
                    long f0 = minorFaults();
                    long t0 = System.nanoTime();
                    lane.go.release();
                    long moved = 0;
                    for (int i = 0; i < tensors; i++) {
                        moved += lane.receive();
                    }
                    long t1 = System.nanoTime();
                    long f1 = minorFaults();
                    if (lane.failure != null) {
                        throw lane.failure;
                    }
                    if (r >= 0) {
                        gbps[l][r] = moved / ((t1 - t0) / 1e9) / 1e9;
                        faults[l][r] = f1 - f0;
                    }
                }
            }
            System.out.printf("loopback TCP, %d tensors of %d MiB per run, %d runs (lanes alternate run by run)%n", tensors,
                    mib, runs);
            for (int l = 0; l < lanes.length; l++) {
                double[] ratio = new double[runs];
                for (int r = 0; r < runs; r++) {
                    ratio[r] = gbps[l][r] / gbps[0][r];
                }
                long[] fs = faults[l].clone();
                Arrays.sort(fs);
                System.out.printf("%-32s %6.2f GB/s  %5.2fx raw  faults/run %d%n", names[l], median(gbps[l]), median(ratio),
                        fs[runs / 2]);
            }
            for (Lane lane : lanes) {
                lane.close();
            }
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
