package dev.hurray.python;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.BufferSpec;
import dev.hurray.Composite;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Item;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Java and Python over real loopback sockets and real files, each side checking every value:
 * the Python side is tests/interop_peer.py, started as a subprocess with the package that the
 * build installed under target/site (see run-tests.sh). Both sides bind the same libhurray, so
 * this proves the two bindings agree, not just the core.
 */
class PythonInteropTest {
    static final int N = 10_000;
    static final int D = 768;
    static final byte[] FP8 = {0, 48, 56, 60, 64, 68, 72, -72, -64, 126, 40, 80, 88, 96, 104, -80};
    static final float[] FP8_VALUES = {0, 0.5f, 1, 1.5f, 2, 3, 4, -1, -2, 448, 0.25f, 8, 16, 32, 64, -0.5f};

    static float[] values(int i) {
        float[] v = new float[D];
        for (int j = 0; j < D; j++) {
            v[j] = (float) ((j + (long) i * D) % 65521);
        }
        return v;
    }

    static float[] nf4Input() {
        float[] x = new float[256];
        for (int i = 0; i < 256; i++) {
            x[i] = (float) ((i * 7919) % 1000) / 100f - 5f;
        }
        return x;
    }

    static Tensor named(ElementType type, String name, MemorySegment data, long... dims) throws HurrayException {
        return Tensor.copyOf(TensorDescriptor.builder(type, dims).name(name).build(), data);
    }

    static Tensor embedding(int i) throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, D).name("emb/" + i)
                .metadata("i", String.valueOf(i)).build();
        return Tensor.copyOf(d, MemorySegment.ofArray(values(i)));
    }

    /** bf16, fp8, int4, CSR, NF4 (the last one of the list) and the composite's parts. */
    static List<Tensor> mixed() throws HurrayException {
        List<Tensor> out = new ArrayList<>();
        short[] bf16 = new short[32];
        for (int k = 0; k < 32; k++) {
            bf16[k] = (short) (Float.floatToIntBits(k * 0.5f) >>> 16);
        }
        out.add(named(ElementType.BFLOAT16, "mixed/bf16", MemorySegment.ofArray(bf16), 4, 8));
        out.add(named(ElementType.FLOAT8_E4M3FN, "mixed/fp8", MemorySegment.ofArray(FP8), 16));
        out.add(named(ElementType.INT4, "mixed/int4", MemorySegment.ofArray(new byte[] {0x21, 0x43, 0x05}), 5));
        TensorDescriptor csr = TensorDescriptor.builder(ElementType.FLOAT32, 2, 4).name("mixed/csr")
                .layout(Layout.csr(ElementType.INT32, 3, true))
                .buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(12)).build();
        out.add(Tensor.copyOf(csr, MemorySegment.ofArray(new float[] {1.5f, -2, 3}),
                MemorySegment.ofArray(new int[] {0, 1, 3}), MemorySegment.ofArray(new int[] {1, 2, 3})));
        try (Tensor x = Tensor.of(nf4Input(), 4, 64); Tensor q = x.quantize(ElementType.UINT4, Quantization.Nf4.of())) {
            TensorDescriptor d = q.descriptor().toBuilder().name("mixed/nf4").build();
            MemorySegment[] bufs = new MemorySegment[d.buffers().size()];
            for (int i = 0; i < bufs.length; i++) {
                bufs[i] = q.buffer(i);
            }
            out.add(Tensor.copyOf(d, bufs));
        }
        out.add(Tensor.of(new float[] {0, 1, 2, 3, 4, 5}, 2, 3));
        out.add(Tensor.of(new float[] {0.5f, 0.25f, 2}, 3));
        return out;
    }

    static Composite.Builder layer(List<Tensor> m) {
        return Composite.builder("mixed/layer").add("weight", m.get(5)).add("bias", m.get(6));
    }

    static void checkMixed(List<Tensor> t, Composite layer) throws HurrayException {
        assertEquals(ElementType.BFLOAT16, t.get(0).descriptor().elementType());
        float[] half = new float[32];
        for (int k = 0; k < 32; k++) {
            half[k] = k * 0.5f;
        }
        assertArrayEquals(half, t.get(0).toFloatArray());
        assertEquals(ElementType.FLOAT8_E4M3FN, t.get(1).descriptor().elementType());
        assertArrayEquals(FP8_VALUES, t.get(1).toFloatArray());
        assertArrayEquals(new float[] {1, 2, 3, 4, 5}, t.get(2).toFloatArray());
        try (Tensor d = t.get(3).densify()) {
            assertArrayEquals(new float[] {0, 1.5f, 0, 0, 0, 0, -2, 3}, d.toFloatArray());
        }
        try (Tensor x = Tensor.of(nf4Input(), 4, 64); Tensor q = x.quantize(ElementType.UINT4, Quantization.Nf4.of())) {
            assertArrayEquals(q.toFloatArray(), t.get(4).toFloatArray());
        }
        assertEquals("mixed/layer", layer.name().orElseThrow());
        assertArrayEquals(new float[] {0, 1, 2, 3, 4, 5}, layer.tensor("weight").toFloatArray());
        assertArrayEquals(new float[] {0.5f, 0.25f, 2}, layer.tensor("bias").toFloatArray());
    }

    static void checkEmbedding(Tensor t, int i) {
        assertEquals("emb/" + i, t.descriptor().name().orElseThrow());
        assertArrayEquals(String.valueOf(i).getBytes(StandardCharsets.UTF_8), t.descriptor().metadata().get("i"));
        assertArrayEquals(values(i), t.toFloatArray());
    }

    static Process python(Path log, String... args) throws IOException {
        String site = System.getProperty("hurray.python.site");
        String exe = System.getProperty("hurray.python", "python3");
        Path peer = Path.of(System.getProperty("hurray.python.tests", "tests")).resolve("interop_peer.py");
        List<String> cmd = new ArrayList<>(List.of(exe, peer.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        if (site != null) {
            pb.environment().put("PYTHONPATH", site);
        }
        return pb.start();
    }

    static void finish(Process p, Path log) throws Exception {
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "python did not finish");
        String out = Files.readString(log);
        assertEquals(0, p.exitValue(), "python failed:\n" + out);
        assertTrue(out.contains("ok"), out);
    }

    @Test
    void javaSendsAndPythonChecksEveryValue(@TempDir Path dir) throws Exception {
        Path log = dir.resolve("python.log");
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Process p = python(log, "recv", String.valueOf(server.getLocalPort()));
            try (Socket s = server.accept(); Writer w = Writer.of(s)) {
                for (int i = 0; i < N; i++) {
                    try (Tensor t = embedding(i)) {
                        w.write(t);
                    }
                }
                List<Tensor> m = mixed();
                for (int i = 0; i < 5; i++) {
                    w.write(m.get(i));
                }
                w.write(layer(m));
                w.finish();
                m.forEach(Tensor::close);
            }
            finish(p, log);
        }
    }

    @Test
    void pythonSendsAndJavaChecksEveryValue(@TempDir Path dir) throws Exception {
        Path log = dir.resolve("python.log");
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Process p = python(log, "send", String.valueOf(server.getLocalPort()));
            try (Socket s = server.accept(); Reader r = Reader.of(s)) {
                for (int i = 0; i < N; i++) {
                    try (Tensor t = r.read()) {
                        assertNotNull(t, "ended after " + i);
                        checkEmbedding(t, i);
                    }
                }
                List<Tensor> got = new ArrayList<>();
                Composite layer = null;
                for (Item item; (item = r.nextItem()) != null; ) {
                    if (item.isComposite()) {
                        layer = item.composite().orElseThrow();
                    } else {
                        got.add(item.tensor().orElseThrow());
                    }
                }
                assertEquals(5, got.size());
                assertEquals(List.of("mixed/bf16", "mixed/fp8", "mixed/int4", "mixed/csr", "mixed/nf4"),
                        got.stream().map(t -> t.descriptor().name().orElseThrow()).toList());
                assertNotNull(layer);
                checkMixed(got, layer);
                got.forEach(Tensor::close);
                layer.close();
            }
            finish(p, log);
        }
    }

    @Test
    void aFileWrittenByJavaReadsInPython(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("java.hrry");
        try (HurrayFileWriter w = HurrayFile.create(file)) {
            w.metadata("writer", "java");
            for (int i = 0; i < 100; i++) {
                try (Tensor t = embedding(i)) {
                    w.add(t);
                }
            }
            List<Tensor> m = mixed();
            for (int i = 0; i < 5; i++) {
                w.add(m.get(i));
            }
            w.add(layer(m));
            w.finish();
            m.forEach(Tensor::close);
        }
        Path log = dir.resolve("python.log");
        finish(python(log, "read-file", file.toString()), log);
    }

    @Test
    void aFileWrittenByPythonReadsInJava(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("python.hrry");
        Path log = dir.resolve("python.log");
        finish(python(log, "write-file", file.toString()), log);
        try (HurrayFile f = HurrayFile.open(file)) {
            assertArrayEquals("python".getBytes(StandardCharsets.UTF_8), f.metadata().get("writer"));
            for (int i = 0; i < 100; i++) {
                try (Tensor t = f.read("emb/" + i)) {
                    checkEmbedding(t, i);
                }
            }
            List<Tensor> got = new ArrayList<>();
            for (String n : List.of("mixed/bf16", "mixed/fp8", "mixed/int4", "mixed/csr", "mixed/nf4")) {
                got.add(f.read(n));
            }
            try (Composite c = f.readComposite("mixed/layer")) {
                checkMixed(got, c);
            }
            got.forEach(Tensor::close);
        }
    }
}
