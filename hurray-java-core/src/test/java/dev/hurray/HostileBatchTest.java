package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Misuse and failures around the batched paths: the reader's batch snapshot (results and
 * buffer records copied once per batch) under mixed read/nextItem calls, composites and
 * transport failures; the writer's batch of specs (copied once per encoder call, a quantized
 * one at once) under refusals, push encoding and sink failures.
 */
class HostileBatchTest {
    private static float[] row(int i, int n) {
        float[] r = new float[n];
        for (int k = 0; k < n; k++) {
            r[k] = i * 1000 + k;
        }
        return r;
    }

    /** Writes tensor {@code i} of a kind: 1 a 2x3 CSR matrix (a column index out of range when {@code bad}), 2 a quantized vector, else a dense one. */
    private static void writeKind(Writer w, int kind, int i, boolean bad) throws HurrayException {
        switch (kind) {
            case 1 -> {
                TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).name("csr" + i)
                        .layout(Layout.csr(ElementType.INT32, 2, true))
                        .buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(8)).build();
                w.write(d, MemorySegment.ofArray(new float[] {i, -i}), MemorySegment.ofArray(new int[] {0, 1, 2}),
                        MemorySegment.ofArray(new int[] {bad ? 9 : i % 3, 2}));
            }
            case 2 -> {
                TensorDescriptor d = TensorDescriptor.builder(ElementType.UINT8, Shape.of(4)).name("q" + i)
                        .quantization(new Quantization.PerTensorAffine(i + 0.5, -i, ElementType.FLOAT32)).build();
                w.write(d, MemorySegment.ofArray(new byte[] {(byte) i, 1, 2, 3}));
            }
            default -> {
                TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 1 + i % 4).name("p" + i).build();
                w.write(d, MemorySegment.ofArray(row(i, 1 + i % 4)));
            }
        }
    }

    private static void checkKind(Tensor t, int kind, int i) {
        switch (kind) {
            case 1 -> {
                assertEquals("csr" + i, t.descriptor().name().orElseThrow());
                assertEquals(3, t.buffers().size());
                assertArrayEquals(new float[] {i, -i}, t.buffer(0).toArray(ValueLayout.JAVA_FLOAT));
                assertArrayEquals(new int[] {i % 3, 2}, t.buffer(2).toArray(ValueLayout.JAVA_INT));
            }
            case 2 -> {
                assertEquals("q" + i, t.descriptor().name().orElseThrow());
                assertEquals(new Quantization.PerTensorAffine(i + 0.5, -i, ElementType.FLOAT32),
                        t.descriptor().quantization().orElseThrow());
                assertArrayEquals(new byte[] {(byte) i, 1, 2, 3}, t.buffer(0).toArray(ValueLayout.JAVA_BYTE));
            }
            default -> {
                assertEquals("p" + i, t.descriptor().name().orElseThrow(), "tensor " + i);
                assertTrue(t.descriptor().quantization().isEmpty(), "tensor " + i);
                assertArrayEquals(row(i, 1 + i % 4), t.toFloatArray(), "tensor " + i);
            }
        }
    }

    /**
     * Batches mixing dense, quantized and CSR tensors, some CSR ones with an index the encoder
     * refuses: each refusal names its tensor (or is thrown by that tensor's own write), and the
     * others are read back in order with their own fields.
     */
    @Test
    void refusedTensorInTheMiddleOfABatchIsNamedAndTheOthersWritten() throws IOException {
        Random rnd = new Random(3);
        for (int round = 0; round < 20; round++) {
            int n = 5 + rnd.nextInt(30);
            int[] kinds = new int[n];
            boolean[] bad = new boolean[n];
            for (int i = 0; i < n; i++) {
                kinds[i] = rnd.nextInt(3);
                bad[i] = kinds[i] == 1 && rnd.nextInt(4) == 0;
            }
            byte[] wire;
            List<String> refused = new ArrayList<>();
            try (Writer w = Writer.toMemory()) {
                for (int i = 0; i < n; i++) {
                    try {
                        writeKind(w, kinds[i], i, bad[i]);
                    } catch (HurrayException e) {
                        // Thrown by this tensor's own write: it is the refused one, or it names one.
                        addRefused(refused, e, "csr" + i);
                    }
                }
                try {
                    w.finish();
                } catch (HurrayException e) {
                    addRefused(refused, e, null);
                    w.finish();
                }
                wire = w.toByteArray();
            }
            List<String> want = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (bad[i]) {
                    want.add("csr" + i);
                }
            }
            assertEquals(want, refused, "round " + round);
            try (Reader r = Reader.of(wire)) {
                for (int i = 0; i < n; i++) {
                    if (bad[i]) {
                        continue;
                    }
                    try (Tensor t = r.read()) {
                        checkKind(t, kinds[i], i);
                    }
                }
                assertNull(r.read());
            }
        }
    }

    private static void addRefused(List<String> out, HurrayException e, String own) {
        List<Throwable> all = new ArrayList<>();
        all.add(e);
        all.addAll(List.of(e.getSuppressed()));
        for (Throwable t : all) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("tensor \"([^\"]+)\" was refused").matcher(t.getMessage());
            if (m.find()) {
                out.add(m.group(1));
            } else {
                assertTrue(own != null, "an error naming no tensor, not from a write: " + t);
                out.add(own);
            }
        }
    }

    private static byte[] mixedStream(int n) throws IOException {
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < n; i++) {
                writeKind(w, i % 3, i, false);
            }
            w.finish();
            return w.toByteArray();
        }
    }

    /** read() and nextItem() in random order over batches of dense, quantized and CSR tensors: each tensor once, in order, with its own fields. */
    @Test
    void readAndNextItemMixedOverBatchesGiveEveryTensorOnce() throws IOException {
        byte[] wire = mixedStream(200);
        Random rnd = new Random(5);
        for (int round = 0; round < 10; round++) {
            try (Reader r = Reader.of(wire)) {
                for (int i = 0; i < 200; i++) {
                    if (rnd.nextBoolean()) {
                        try (Tensor t = r.read()) {
                            checkKind(t, i % 3, i);
                        }
                    } else {
                        try (Item it = r.nextItem()) {
                            checkKind(it.tensor().orElseThrow(), i % 3, i);
                        }
                    }
                }
                assertNull(r.read());
            }
        }
    }

    /** An input stream that throws once at byte {@code failAt}, and returns short reads. */
    private static final class Flaky extends InputStream {
        private final ByteArrayInputStream in;
        private long pos;
        private long failAt;
        private final int piece;

        Flaky(byte[] b, long failAt, int piece) {
            in = new ByteArrayInputStream(b);
            this.failAt = failAt;
            this.piece = piece;
        }

        @Override
        public int read() {
            throw new UnsupportedOperationException();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (pos >= failAt) {
                failAt = Long.MAX_VALUE;
                throw new IOException("flaky");
            }
            int n = (int) Math.min(Math.min(len, piece), failAt - pos);
            n = in.read(b, off, n);
            if (n > 0) {
                pos += n;
            }
            return n;
        }
    }

    /** A source failing once anywhere (short reads of 1 to 5000 bytes): TRANSPORT at most once, then every tensor in order. */
    @Test
    void aTransportFailureAnywhereResumesMidBatch() throws IOException {
        byte[] wire = mixedStream(60);
        Random rnd = new Random(9);
        for (int round = 0; round < 60; round++) {
            long failAt = rnd.nextInt(wire.length);
            int piece = 1 + rnd.nextInt(rnd.nextBoolean() ? 50 : 5000);
            try (Reader r = Reader.of(new Flaky(wire, failAt, piece))) {
                int failures = 0;
                for (int i = 0; i < 60; ) {
                    try {
                        if (rnd.nextBoolean()) {
                            try (Tensor t = r.read()) {
                                checkKind(t, i % 3, i);
                            }
                        } else {
                            try (Item it = r.nextItem()) {
                                checkKind(it.tensor().orElseThrow(), i % 3, i);
                            }
                        }
                        i++;
                    } catch (HurrayException e) {
                        assertEquals(Status.TRANSPORT, e.status(), e.toString());
                        failures++;
                    }
                }
                assertNull(r.read());
                assertTrue(failures <= 1);
            }
        }
    }

    private static Tensor kindTensor(int kind, int i, boolean bad) {
        switch (kind) {
            case 1 -> {
                TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).name("csr" + i)
                        .layout(Layout.csr(ElementType.INT32, 2, true))
                        .buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(8)).build();
                return Tensor.copyOf(d, MemorySegment.ofArray(new float[] {i, -i}), MemorySegment.ofArray(new int[] {0, 1, 2}),
                        MemorySegment.ofArray(new int[] {bad ? 9 : i % 3, 2}));
            }
            case 2 -> {
                TensorDescriptor d = TensorDescriptor.builder(ElementType.UINT8, Shape.of(4)).name("q" + i)
                        .quantization(new Quantization.PerTensorAffine(i + 0.5, -i, ElementType.FLOAT32)).build();
                return Tensor.copyOf(d, MemorySegment.ofArray(new byte[] {(byte) i, 1, 2, 3}));
            }
            default -> {
                TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 1 + i % 4).name("p" + i).build();
                return Tensor.copyOf(d, MemorySegment.ofArray(row(i, 1 + i % 4)));
            }
        }
    }

    private static void drain(TensorEncoder e, java.io.ByteArrayOutputStream out, List<String> refused) {
        try {
            while (e.pendingBytes() > 0) {
                long n = 0;
                for (TensorEncoder.Piece p : e.output()) {
                    java.nio.ByteBuffer b = p.bytes();
                    byte[] a = new byte[b.remaining()];
                    b.get(a);
                    out.write(a, 0, a.length);
                    n += a.length;
                }
                e.consumed(n);
            }
        } catch (HurrayException ex) {
            addRefused(refused, ex, null);
        }
    }

    /** As the writer's refusals, through a TensorEncoder drained at random points. */
    @Test
    void pushEncoderRefusalMidBatchNamesTheTensorAndKeepsTheOthers() throws IOException {
        Random rnd = new Random(13);
        for (int round = 0; round < 20; round++) {
            int n = 5 + rnd.nextInt(30);
            int[] kinds = new int[n];
            boolean[] bad = new boolean[n];
            for (int i = 0; i < n; i++) {
                kinds[i] = rnd.nextInt(3);
                bad[i] = kinds[i] == 1 && rnd.nextInt(4) == 0;
            }
            List<String> refused = new ArrayList<>();
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            try (TensorEncoder e = TensorEncoder.create()) {
                for (int i = 0; i < n; i++) {
                    try (Tensor t = kindTensor(kinds[i], i, bad[i])) {
                        try {
                            e.encode(t);
                        } catch (HurrayException ex) {
                            addRefused(refused, ex, "csr" + i);
                        }
                        if (rnd.nextInt(4) == 0) {
                            drain(e, out, refused);
                        }
                    }
                }
                try {
                    e.finish();
                } catch (HurrayException ex) {
                    addRefused(refused, ex, null);
                    e.finish();
                }
                drain(e, out, refused);
            }
            List<String> want = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (bad[i]) {
                    want.add("csr" + i);
                }
            }
            assertEquals(want, refused, "round " + round);
            try (Reader r = Reader.of(out.toByteArray())) {
                for (int i = 0; i < n; i++) {
                    if (bad[i]) {
                        continue;
                    }
                    try (Tensor t = r.read()) {
                        checkKind(t, kinds[i], i);
                    }
                }
                assertNull(r.read());
            }
        }
    }

    /** An output stream that fails once when it would pass byte {@code failAt}, keeping what came before. */
    private static final class FailingOut extends java.io.OutputStream {
        final java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
        long failAt;

        FailingOut(long failAt) {
            this.failAt = failAt;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            long room = failAt - got.size();
            if (room < len) {
                got.write(b, off, (int) Math.max(0, room));
                failAt = Long.MAX_VALUE;
                throw new IOException("sink fails");
            }
            got.write(b, off, len);
        }
    }

    /** A sink failing once at any byte: what it received reads as whole tensors in order, each with its own fields, then at most a TRUNCATED or CORRUPT end. */
    @Test
    void aSinkFailureMidBatchLeavesAPrefixOfWholeTensors() throws IOException {
        Random rnd = new Random(21);
        for (int round = 0; round < 40; round++) {
            int n = 5 + rnd.nextInt(40);
            int[] kinds = new int[n];
            for (int i = 0; i < n; i++) {
                kinds[i] = rnd.nextInt(3);
            }
            FailingOut out = new FailingOut(rnd.nextInt(3000));
            Writer w = Writer.of(out);
            try {
                for (int i = 0; i < n; i++) {
                    try {
                        writeKind(w, kinds[i], i, false);
                    } catch (HurrayException e) {
                        // The sink's failure, or POISONED after it.
                    }
                }
                try {
                    w.finish();
                } catch (HurrayException e) {
                    // reported
                }
            } finally {
                try {
                    w.close();
                } catch (HurrayException e) {
                    // a poisoned writer's close reports it
                }
            }
            try (Reader r = Reader.of(out.got.toByteArray())) {
                int k = 0;
                while (true) {
                    Tensor t;
                    try {
                        t = r.read();
                    } catch (HurrayException e) {
                        assertTrue(e.status() == Status.TRUNCATED || e.status() == Status.CORRUPT, e.toString());
                        break;
                    }
                    if (t == null) {
                        break;
                    }
                    try (t) {
                        String name = t.descriptor().name().orElseThrow();
                        int idx = Integer.parseInt(name.replaceAll("[^0-9]", ""));
                        assertTrue(idx >= k, "round " + round + ": order " + name + " after " + k);
                        checkKind(t, kinds[idx], idx);
                        k = idx + 1;
                    }
                }
            }
        }
    }

    /** Composites between batches of plain tensors, each read flat (head, members) or as an item, at random. */
    @Test
    void compositesBetweenBatchesReadEitherWay() throws IOException {
        int n = 120;
        byte[] wire;
        try (Writer w = Writer.toMemory()) {
            for (int i = 0; i < n; i++) {
                if (i % 7 == 3) {
                    try (Tensor a = kindTensor(0, i, false); Tensor b = kindTensor(2, i, false)) {
                        w.write(Composite.builder("c" + i).add("a", a).add("b", b));
                    }
                } else {
                    writeKind(w, i % 3, i, false);
                }
            }
            w.finish();
            wire = w.toByteArray();
        }
        Random rnd = new Random(17);
        for (int round = 0; round < 20; round++) {
            try (Reader r = Reader.of(wire)) {
                for (int i = 0; i < n; i++) {
                    boolean flat = rnd.nextBoolean();
                    if (i % 7 == 3) {
                        if (flat) {
                            try (Tensor h = r.read(); Tensor a = r.read(); Tensor b = r.read()) {
                                assertEquals("c" + i, h.descriptor().name().orElseThrow());
                                checkKind(a, 0, i);
                                checkKind(b, 2, i);
                            }
                        } else {
                            try (Item it = r.nextItem()) {
                                Composite c = it.composite().orElseThrow();
                                assertEquals("c" + i, c.name().orElseThrow());
                                checkKind(c.tensor("a"), 0, i);
                                checkKind(c.tensor("b"), 2, i);
                            }
                        }
                    } else if (flat) {
                        try (Tensor t = r.read()) {
                            checkKind(t, i % 3, i);
                        }
                    } else {
                        try (Item it = r.nextItem()) {
                            checkKind(it.tensor().orElseThrow(), i % 3, i);
                        }
                    }
                }
                assertNull(r.read());
            }
        }
    }

    /** The tensors and final status a Reader gives for {@code wire}. */
    private static List<String> readAll(byte[] wire) throws HurrayException {
        List<String> out = new ArrayList<>();
        try (Reader r = Reader.of(wire)) {
            while (true) {
                try (Tensor t = r.read()) {
                    if (t == null) {
                        out.add("end");
                        return out;
                    }
                    out.add(t.descriptor().name().orElseThrow() + ":" + java.util.Arrays.hashCode(t.buffer(0).toArray(ValueLayout.JAVA_BYTE)));
                } catch (HurrayException e) {
                    out.add(e.status().toString());
                    return out;
                }
            }
        }
    }

    /**
     * A damaged byte anywhere: a push decoder fed in random pieces (next() between feeds, a
     * failure from feed or next) gives the same tensors and then the same status as a Reader
     * given the whole input.
     */
    @Test
    void aDamagedStreamFedInPiecesFailsAsTheReaderDoes() throws IOException {
        byte[] wire = mixedStream(40);
        Random rnd = new Random(29);
        for (int round = 0; round < 60; round++) {
            byte[] bad = wire.clone();
            bad[rnd.nextInt(bad.length)] ^= (byte) (1 << rnd.nextInt(8));
            List<String> want = readAll(bad);
            List<String> got = new ArrayList<>();
            try (TensorDecoder d = TensorDecoder.create()) {
                int at = 0;
                String end = null;
                outer:
                while (end == null) {
                    try {
                        while (true) {
                            Tensor t = d.next();
                            if (t == null) {
                                break;
                            }
                            try (t) {
                                got.add(t.descriptor().name().orElseThrow() + ":" + java.util.Arrays.hashCode(t.buffer(0).toArray(ValueLayout.JAVA_BYTE)));
                            }
                        }
                        if (d.isEndOfStream()) {
                            end = "end";
                            break;
                        }
                        if (at == bad.length) {
                            d.endOfInput();
                            Tensor extra = d.next();
                            if (extra != null) {
                                extra.close();
                                throw new AssertionError("a tensor after the end of input");
                            }
                            end = d.isEndOfStream() ? "end" : "?";
                            break;
                        }
                        int n = Math.min(bad.length - at, 1 + rnd.nextInt(300));
                        d.feed(java.nio.ByteBuffer.wrap(bad, at, n));
                        at += n;
                    } catch (HurrayException e) {
                        // Tensors completed before the failure still come first.
                        while (true) {
                            try {
                                Tensor t = d.next();
                                if (t == null) {
                                    break;
                                }
                                try (t) {
                                    got.add(t.descriptor().name().orElseThrow() + ":" + java.util.Arrays.hashCode(t.buffer(0).toArray(ValueLayout.JAVA_BYTE)));
                                }
                            } catch (HurrayException again) {
                                assertEquals(e.status(), again.status(), "sticky");
                                break;
                            }
                        }
                        end = e.status().toString();
                        break outer;
                    }
                }
                got.add(end);
            }
            assertEquals(want, got, "round " + round);
        }
    }
}
