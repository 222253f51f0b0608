package dev.hurray.formats;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.Deflater;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The foreign readers read no payload when a file is opened: each tensor reads its own on first
 * use, can release it, and writing a model holds one payload at a time.
 */
class LazyPayloadsTest {
    private static final int TENSORS = 6;

    @TempDir
    Path tmp;

    /** Tensor {@code i} of the test models: float32, {@code 256 × (i + 1)} elements of seeded random bytes. */
    private static List<ForeignTensor> tensors(Arena arena, int count) {
        return tensors(arena, count, 256);
    }

    /** As {@link #tensors(Arena, int)} with {@code unit × (i + 1)} elements. */
    private static List<ForeignTensor> tensors(Arena arena, int count, long unit) {
        Random rnd = new Random(21);
        List<ForeignTensor> ts = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            ts.add(Models.random(arena, rnd, "t" + i, ElementType.FLOAT32, Layout.Kind.ROW_MAJOR, unit * (i + 1)));
        }
        return ts;
    }

    /**
     * Writes the test model as {@code format} in {@code dir}: {the file to open, the file holding
     * the payloads}. npy holds the first tensor only; tfjs is a manifest plus one shard.
     */
    private static Path[] write(Format format, Path dir, List<ForeignTensor> ts) throws IOException {
        if (format == Format.TFJS) {
            Path bin = dir.resolve("group1-shard1of1.bin");
            StringBuilder weights = new StringBuilder();
            try (FileChannel ch = FileChannel.open(bin, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                for (ForeignTensor t : ts) {
                    ByteBuffer b = t.data().asByteBuffer();
                    while (b.hasRemaining()) {
                        ch.write(b);
                    }
                    weights.append(weights.isEmpty() ? "" : ",").append("{\"name\":\"").append(t.name())
                            .append("\",\"shape\":").append(t.shapeString()).append(",\"dtype\":\"float32\"}");
                }
            }
            Path manifest = dir.resolve("weights_manifest.json");
            Files.writeString(manifest, "[{\"paths\":[\"" + bin.getFileName() + "\"],\"weights\":[" + weights + "]}]");
            return new Path[] {manifest, bin};
        }
        Path f = dir.resolve("t0." + format.id());
        List<ForeignTensor> written = format == Format.NPY ? ts.subList(0, 1) : ts;
        ForeignFormats.write(Models.model(written, Map.of()), f, format, false, null);
        return new Path[] {f, f};
    }

    private static int expectedCount(Format format) {
        return format == Format.NPY ? 1 : TENSORS;
    }

    @ParameterizedTest
    @EnumSource(value = Format.class, names = {"SAFETENSORS", "NPY", "NPZ", "GGUF", "TFJS"})
    void openingReadsNoPayload(Format format) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = tensors(arena, TENSORS);
            Path[] f = write(format, tmp, ts);
            try (ForeignModel m = ForeignFormats.read(f[0], format, false, null)) {
                assertEquals(expectedCount(format), m.tensors().size());
                assertEquals(0, m.residentBytes());
                long total = 0;
                for (ForeignTensor t : m.tensors()) {
                    assertFalse(t.isLoaded(), t.name());
                    assertEquals(0, t.residentBytes());
                    t.descriptor(); // the descriptor needs no payload
                    total += t.byteSize();
                }
                assertEquals(total, m.totalBytes());
                assertEquals(0, m.residentBytes(), "describing a tensor read its payload");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Format.class, names = {"SAFETENSORS", "NPY", "NPZ", "GGUF", "TFJS"})
    void aPayloadIsReadOnFirstUseIntoMemoryTheTensorOwns(Format format) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = tensors(arena, TENSORS);
            Path[] f = write(format, tmp, ts);
            try (ForeignModel m = ForeignFormats.read(f[0], format, false, null)) {
                ForeignTensor t = m.tensor("t0");
                MemorySegment data = t.data();
                assertTrue(t.isLoaded());
                assertEquals(0, data.address() % Payloads.ALIGNMENT);
                assertArrayEquals(TestSupport.bytes(ts.get(0).data()), TestSupport.bytes(data));
                assertEquals(t.byteSize(), t.residentBytes());
                assertEquals(t.byteSize(), m.residentBytes(), "only the used tensor is in memory");
                assertSame(data, t.data(), "a loaded payload is not read again");
                for (ForeignTensor other : m.tensors()) {
                    assertEquals(other == t, other.isLoaded(), other.name());
                }
            }
        }
    }

    @Test
    void releaseFreesThePayloadAndTheNextUseReadsTheFileAgain() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = tensors(arena, TENSORS);
            Path[] f = write(Format.SAFETENSORS, tmp, ts);
            try (ForeignModel m = Safetensors.read(f[0])) {
                ForeignTensor t = m.tensor("t3");
                MemorySegment before = t.data();
                byte[] bytes = TestSupport.bytes(before);
                t.release();
                assertFalse(t.isLoaded());
                assertEquals(0, m.residentBytes());
                assertThrows(IllegalStateException.class, () -> before.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
                t.release(); // twice: nothing to do
                assertArrayEquals(bytes, TestSupport.bytes(t.data()));
                assertEquals(t.byteSize(), m.residentBytes());
                m.release();
                assertEquals(0, m.residentBytes());
            }
        }
    }

    @Test
    void aTensorBuiltFromSegmentsIsAlwaysLoadedAndReleaseLeavesItAlone() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor t = tensors(arena, 1).get(0);
            assertTrue(t.isLoaded());
            assertEquals(t.byteSize(), t.residentBytes());
            t.release();
            assertTrue(t.isLoaded());
            assertEquals(1024, t.data().byteSize()); // still readable: its owner frees it
        }
    }

    /**
     * Writing a model to a stream reads one tensor at a time: whenever the stream's output grows,
     * the model holds at most the tensor being written, and nothing once it is done. (The tensors
     * are 64 KiB and more, so the writer sends each as it is written rather than batching it.)
     */
    @ParameterizedTest
    @EnumSource(value = Format.class, names = {"SAFETENSORS", "NPZ", "GGUF", "TFJS"})
    void writingAStreamHoldsOnePayloadAtATime(Format format) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = tensors(arena, TENSORS, 16 << 10);
            Path[] f = write(format, tmp, ts);
            long largest = ts.get(TENSORS - 1).byteSize();
            try (ForeignModel m = ForeignFormats.read(f[0], format, false, null)) {
                long[] peak = new long[1];
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                OutputStream watching = new OutputStream() {
                    @Override
                    public void write(int b) {
                        write(new byte[] {(byte) b}, 0, 1);
                    }

                    @Override
                    public void write(byte[] b, int off, int len) {
                        peak[0] = Math.max(peak[0], m.residentBytes());
                        bytes.write(b, off, len);
                    }
                };
                try (Writer w = Writer.of(watching)) {
                    assertEquals(TENSORS, m.writeTo(w));
                    w.finish();
                }
                assertTrue(peak[0] > 0, "no payload seen while writing");
                assertTrue(peak[0] <= largest, "held " + peak[0] + " bytes, the largest tensor has " + largest);
                assertEquals(0, m.residentBytes());
                try (Reader r = Reader.of(bytes.toByteArray())) {
                    int i = 0;
                    for (Tensor t : r) {
                        try (t) {
                            assertArrayEquals(TestSupport.bytes(ts.get(i++).data()), TestSupport.bytes(t.buffer(0)));
                        }
                    }
                    assertEquals(TENSORS, i);
                }
            }
        }
    }

    @Test
    void writingAContainerReleasesWhatItReadAndKeepsWhatTheCallerLoaded() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = tensors(arena, TENSORS);
            Path[] f = write(Format.SAFETENSORS, tmp, ts);
            Path out = tmp.resolve("out.hrry");
            try (ForeignModel m = Safetensors.read(f[0])) {
                ForeignTensor kept = m.tensor("t2");
                kept.load();
                try (HurrayFileWriter w = HurrayFile.create(out)) {
                    m.writeTo(w);
                    w.finish();
                }
                assertTrue(kept.isLoaded(), "a tensor the caller loaded stays loaded");
                assertEquals(kept.byteSize(), m.residentBytes());
            }
            try (HurrayFile file = HurrayFile.open(out)) {
                assertEquals(TENSORS, file.count());
                try (Tensor t = file.read("t5")) {
                    assertArrayEquals(TestSupport.bytes(ts.get(5).data()), TestSupport.bytes(t.buffer(0)));
                }
            }
        }
    }

    @Test
    void forEachTensorHandsOnOneTensorAtATime() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            Path[] f = write(Format.GGUF, tmp, tensors(arena, TENSORS));
            try (ForeignModel m = Gguf.read(f[0])) {
                List<String> seen = new ArrayList<>();
                m.forEachTensor((t, h) -> {
                    assertFalse(t.isLoaded(), "read for the call, not loaded into the tensor");
                    assertEquals(t.totalBytes(), t.residentBytes());
                    assertEquals(t.totalBytes(), m.residentBytes(), "only " + t.name() + " is in memory");
                    assertEquals(t.byteSize(), h.buffer(0).byteSize());
                    seen.add(t.name());
                });
                assertEquals(List.of("t0", "t1", "t2", "t3", "t4", "t5"), seen);
                assertEquals(0, m.residentBytes());
            }
        }
    }

    /**
     * A file shortened after it was opened: the first use of a payload past the new end is a
     * {@link ForeignFormatException} naming the file, its size now, the bytes its data needs and
     * its size when opened; the tensor stays unloaded, and the tensors before the cut still read.
     */
    @ParameterizedTest
    @EnumSource(value = Format.class, names = {"SAFETENSORS", "NPY", "GGUF", "TFJS"})
    void aFileShortenedAfterOpenFailsTheReadNamingItsSizes(Format format) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = tensors(arena, TENSORS);
            Path[] f = write(format, tmp, ts);
            try (ForeignModel m = ForeignFormats.read(f[0], format, false, null)) {
                long sizeAtOpen = Files.size(f[1]);
                ForeignTensor last = m.tensors().get(m.tensors().size() - 1);
                long needs = format == Format.TFJS ? sizeAtOpen : last.sourceOffset() + last.byteSize();
                long now = sizeAtOpen - 100;
                try (FileChannel ch = FileChannel.open(f[1], StandardOpenOption.WRITE)) {
                    ch.truncate(now);
                }
                ForeignFormatException e = assertThrows(ForeignFormatException.class, last::data);
                assertTrue(e.getMessage().startsWith(f[1].getFileName().toString()) || e.getMessage().contains(f[1].toString())
                        || e.getMessage().contains(f[1].getFileName().toString()), e.getMessage());
                assertTrue(e.getMessage().contains("truncated: the file is now " + now + " bytes, but its data needs "
                        + needs + " (it had " + sizeAtOpen + " bytes when opened"), e.getMessage());
                assertFalse(last.isLoaded());
                assertEquals(0, m.residentBytes());
                if (format != Format.NPY) {
                    assertArrayEquals(TestSupport.bytes(ts.get(0).data()), TestSupport.bytes(m.tensor("t0").data()));
                }
            }
        }
    }

    @Test
    void anNpzShortenedAfterOpenFailsTheReadAsTruncated() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            Path[] f = write(Format.NPZ, tmp, tensors(arena, TENSORS));
            try (ForeignModel m = Npz.read(f[0], null)) {
                long sizeAtOpen = Files.size(f[0]);
                try (FileChannel ch = FileChannel.open(f[0], StandardOpenOption.WRITE)) {
                    ch.truncate(sizeAtOpen / 2);
                }
                ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> m.tensor("t5").data());
                assertTrue(e.getMessage().contains("t5.npy: truncated: the file is now " + sizeAtOpen / 2
                        + " bytes (it had " + sizeAtOpen + " bytes when opened"), e.getMessage());
                assertFalse(m.tensor("t5").isLoaded());
            }
        }
    }

    /** A stored member whose header survives but whose data the shortened archive cuts. */
    @Test
    void anNpzCutInsideAStoredMembersDataNamesTheShorteningToo() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            Path[] f = write(Format.NPZ, tmp, tensors(arena, TENSORS));
            try (ForeignModel m = Npz.read(f[0], null)) {
                long sizeAtOpen = Files.size(f[0]);
                // The end record's central-directory offset: the last member's data ends there.
                ByteBuffer end = ByteBuffer.wrap(Files.readAllBytes(f[0])).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                long cd = Integer.toUnsignedLong(end.getInt((int) sizeAtOpen - 22 + 16));
                try (FileChannel ch = FileChannel.open(f[0], StandardOpenOption.WRITE)) {
                    ch.truncate(cd - 3);
                }
                ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> m.tensor("t5").data());
                assertTrue(e.getMessage().contains("t5.npy: truncated: the file is now " + (cd - 3)
                        + " bytes (it had " + sizeAtOpen + " bytes when opened; did another process shorten it?)"),
                        e.getMessage());
                assertFalse(m.tensor("t5").isLoaded());
            }
        }
    }

    @Test
    void closingTheModelReleasesEveryPayloadAndRefusesNewReads() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            Path[] f = write(Format.NPZ, tmp, tensors(arena, TENSORS));
            ForeignModel m = Npz.read(f[0], null);
            MemorySegment data = m.tensor("t1").data();
            ForeignTensor unread = m.tensor("t2");
            m.close();
            m.close();
            assertThrows(IllegalStateException.class, () -> data.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
            assertEquals(0, m.residentBytes());
            IllegalStateException e = assertThrows(IllegalStateException.class, unread::data);
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
    }

    /** Concurrent first uses read the file once, and the payload can be read from any thread. */
    @Test
    void concurrentFirstUsesShareOnePayload() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = tensors(arena, TENSORS);
            byte[] want = TestSupport.bytes(ts.get(4).data());
            Path[] f = write(Format.SAFETENSORS, tmp, ts);
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try (ForeignModel m = Safetensors.read(f[0])) {
                ForeignTensor t = m.tensor("t4");
                List<Future<MemorySegment>> fs = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    fs.add(pool.submit(() -> {
                        MemorySegment s = t.data();
                        assertArrayEquals(want, TestSupport.bytes(s));
                        return s;
                    }));
                }
                MemorySegment first = fs.get(0).get();
                for (Future<MemorySegment> x : fs) {
                    assertSame(first, x.get());
                }
                assertArrayEquals(want, TestSupport.bytes(first)); // read here, loaded on another thread
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void mxScalesAreReadWithTheirValues() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(5);
            ForeignTensor values = Models.random(arena, rnd, "w", ElementType.FLOAT8_E4M3FN, Layout.Kind.ROW_MAJOR, 4, 64);
            ForeignTensor scales = Models.random(arena, rnd, "w" + Safetensors.DEFAULT_SCALE_SUFFIX,
                    ElementType.FLOAT8_E8M0FNU, Layout.Kind.ROW_MAJOR, 4, 2);
            Path st = tmp.resolve("mx.safetensors");
            Safetensors.write(Models.model(List.of(values, scales), Map.of()), st, Safetensors.Options.defaults(), null);
            try (ForeignModel m = Safetensors.read(st)) {
                ForeignTensor w = m.tensor("w");
                assertTrue(w.quantization().orElseThrow() instanceof Quantization.Mx);
                assertArrayEquals(new long[] {8}, w.scaleBufferSizes());
                assertEquals(0, m.residentBytes());
                assertArrayEquals(TestSupport.bytes(scales.data()), TestSupport.bytes(w.scaleBuffers().get(0)));
                assertEquals(256 + 8, m.residentBytes());
                assertArrayEquals(TestSupport.bytes(values.data()), TestSupport.bytes(w.data()));
            }
        }
    }

    /**
     * Writers that must change a payload on the way (a column-major reorder for safetensors and
     * GGUF, an MX split into values and scales for safetensors) read it for that tensor's write
     * only: after writing, no lazy input tensor is loaded, and the output has the right bytes.
     */
    @Test
    void reorderedAndSplitPayloadsAreReadForTheirOwnWriteOnly() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(9);
            ForeignTensor col = Models.random(arena, rnd, "col", ElementType.FLOAT32, Layout.Kind.COLUMN_MAJOR, 3, 5);
            Path npy = tmp.resolve("col.npy");
            Npy.write(col, npy, null);
            ForeignTensor values = Models.random(arena, rnd, "w", ElementType.FLOAT8_E4M3FN, Layout.Kind.ROW_MAJOR, 4, 64);
            ForeignTensor scales = Models.random(arena, rnd, "w" + Safetensors.DEFAULT_SCALE_SUFFIX,
                    ElementType.FLOAT8_E8M0FNU, Layout.Kind.ROW_MAJOR, 4, 2);
            Path mx = tmp.resolve("mx.safetensors");
            Safetensors.write(Models.model(List.of(values, scales), Map.of()), mx, Safetensors.Options.defaults(), null);
            for (Format out : new Format[] {Format.SAFETENSORS, Format.GGUF}) {
                try (ForeignModel m = Npy.read(npy, "col")) {
                    Path o = tmp.resolve("col-out." + out.id());
                    ForeignFormats.write(m, o, out, false, null);
                    assertFalse(m.tensor("col").isLoaded(), out + ": the reorder kept the input loaded");
                    assertEquals(0, m.residentBytes());
                    try (ForeignModel back = ForeignFormats.read(o)) {
                        assertArrayEquals(TestSupport.bytes(Payloads.toRowMajor(col, arena).data()),
                                TestSupport.bytes(back.tensor("col").data()));
                    }
                }
            }
            try (ForeignModel m = Safetensors.read(mx)) {
                Path o = tmp.resolve("mx-out.safetensors");
                Safetensors.write(m, o, Safetensors.Options.defaults(), null);
                assertFalse(m.tensor("w").isLoaded(), "the MX split kept the input loaded");
                assertEquals(0, m.residentBytes());
                try (ForeignModel back = Safetensors.read(o)) {
                    assertArrayEquals(TestSupport.bytes(values.data()), TestSupport.bytes(back.tensor("w").data()));
                    assertArrayEquals(TestSupport.bytes(scales.data()), TestSupport.bytes(back.tensor("w").scaleBuffers().get(0)));
                }
            }
        }
    }

    @Test
    void dequantizedTfjsWeightsAreComputedOnFirstUse() throws IOException {
        Path bin = tmp.resolve("w.bin");
        Files.write(bin, new byte[] {0, 1, 2, 3});
        Path mf = tmp.resolve("weights_manifest.json");
        Files.writeString(mf, "[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"q\",\"shape\":[4],\"dtype\":\"float32\","
                + "\"quantization\":{\"dtype\":\"uint8\",\"scale\":0.5,\"min\":-1}}]}]");
        try (ForeignModel m = Tfjs.read(mf, true, null)) {
            ForeignTensor q = m.tensor("q");
            assertEquals(ElementType.FLOAT32, q.dtype());
            assertEquals(16, q.byteSize());
            assertEquals(0, m.residentBytes());
            float[] got = new float[4];
            for (int i = 0; i < 4; i++) {
                got[i] = q.data().getAtIndex(Payloads.LE_FLOAT, i);
            }
            assertArrayEquals(new float[] {-1f, -0.5f, 0f, 0.5f}, got);
        }
    }

    /**
     * An npz member whose zip sizes and npy header declare a 16-byte array but whose deflate
     * stream inflates to 8 MiB more: opening accepts it (the declared sizes agree), and its first
     * use refuses it after the declared bytes, without inflating the rest or loading the tensor.
     */
    @Test
    void anNpzMemberInflatingPastItsDeclaredArrayIsRefusedOnUse() throws IOException {
        byte[] header = HostileInputsTest.npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }");
        byte[] content = new byte[header.length + 16 + (8 << 20)];
        System.arraycopy(header, 0, content, 0, header.length);
        Deflater d = new Deflater(Deflater.BEST_COMPRESSION, true);
        d.setInput(content);
        d.finish();
        ByteArrayOutputStream compressed = new ByteArrayOutputStream();
        byte[] buf = new byte[1 << 16];
        while (!d.finished()) {
            compressed.write(buf, 0, d.deflate(buf));
        }
        d.end();
        Path npz = tmp.resolve("inflating.npz");
        Files.write(npz, HostileInputsTest.zipOneEntry("w.npy", compressed.toByteArray(), header.length + 16));
        assertTrue(Files.size(npz) < 64 << 10);
        try (ForeignModel m = Npz.read(npz, null)) {
            ForeignTensor w = m.tensor("w");
            assertEquals(16, w.byteSize());
            ForeignFormatException e = assertThrows(ForeignFormatException.class, w::data);
            assertTrue(e.getMessage().contains("w.npy: holds more bytes than the 16 its npy header declares"),
                    e.getMessage());
            assertFalse(w.isLoaded());
            assertEquals(0, m.residentBytes());
        }
    }
}
