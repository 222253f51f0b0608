package dev.hurray.manual;

import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * N concurrent loopback connections, each with a virtual-thread receiver blocked in
 * {@code Reader.read()} and a virtual-thread sender that waits 200 ms and writes one tensor
 * (issue: virtual threads never pinned by I/O). Not a test: run it by hand, e.g. with 10,000
 * (needs about 2N file descriptors: {@code ulimit -n}). The bounded version is
 * {@code VirtualThreadTest} (8, 64 and 1,000 connections).
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp ... dev.hurray.manual.VirtualThreadScaleMain 10000</pre>
 */
public final class VirtualThreadScaleMain {
    private VirtualThreadScaleMain() {
    }

    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]);
        long t0 = System.nanoTime();
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), n);
            InetSocketAddress at = (InetSocketAddress) server.getLocalAddress();
            try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<Float>> got = new ArrayList<>();
                for (int i = 0; i < n; i++) got.add(vt.submit(() -> {
                    try (SocketChannel ch = server.accept(); Reader r = Reader.of(ch); Tensor t = r.read()) { return t.toFloatArray()[0]; }
                }));
                List<Future<?>> sent = new ArrayList<>();
                for (int i = 0; i < n; i++) { float x = i; sent.add(vt.submit(() -> {
                    try (SocketChannel ch = SocketChannel.open(at)) { Thread.sleep(200);
                        try (Writer w = Writer.of(ch); Tensor t = Tensor.of(new float[] {x, 1, 2})) { w.write(t); } }
                    return null; })); }
                for (Future<?> f : sent) f.get();
                double sum = 0; for (Future<Float> f : got) sum += f.get();
                System.out.printf("%d virtual-thread connections, sum %.0f (expected %.0f), %.1f s%n", n, sum, (double) n * (n - 1) / 2, (System.nanoTime() - t0) / 1e9);
            }
        }
    }
}
