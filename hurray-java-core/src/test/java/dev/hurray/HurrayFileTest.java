package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.internal.NativeFileReader;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HurrayFile} over real temp files: round trips through {@code create()} and both
 * readers for every element type and shape, listing, metadata, zero copy and the mapping's
 * lifetime, and the errors of misuse.
 */
class HurrayFileTest {
    @TempDir
    Path dir;

    /** Opens {@code path} with {@code open()} (false) or {@code map()} (true). */
    static HurrayFile reopen(Path path, boolean mapped) throws IOException {
        return mapped ? HurrayFile.map(path) : HurrayFile.open(path);
    }

    /** The descriptors of {@link TestSupport#everyTypeAndRank()}, each named {@code t/NNN}. */
    private static List<TensorDescriptor> namedCorpus() throws HurrayException {
        List<TensorDescriptor> out = new ArrayList<>();
        int i = 0;
        for (TensorDescriptor d : TestSupport.everyTypeAndRank()) {
            out.add(d.toBuilder().name(String.format("t/%03d", i++)).build());
        }
        return out;
    }

    /** Writes {@code tensors} into a container at {@code path} (named by their descriptors). */
    private static long write(Path path, List<Tensor> tensors, FileWriterOptions options) throws IOException {
        try (HurrayFileWriter w = HurrayFile.create(path, options)) {
            for (Tensor t : tensors) {
                w.add(t);
            }
            return w.finish();
        }
    }

    @Test
    void everyElementTypeAndShapeRoundTripsThroughOpenAndMap() throws IOException {
        List<TensorDescriptor> corpus = namedCorpus();
        List<Tensor> tensors = new ArrayList<>();
        try {
            for (int i = 0; i < corpus.size(); i++) {
                tensors.add(TestSupport.filled(corpus.get(i), i));
            }
            Path path = dir.resolve("all.hrry");
            long size = write(path, tensors, FileWriterOptions.defaults());
            assertEquals(Files.size(path), size);
            for (boolean mapped : new boolean[] {false, true}) {
                try (HurrayFile f = reopen(path, mapped)) {
                    assertEquals(size, f.size());
                    assertEquals(corpus.size(), f.count());
                    assertEquals(mapped, f.isMapped());
                    for (int i = 0; i < corpus.size(); i++) {
                        try (Tensor t = f.read(corpus.get(i).name().orElseThrow())) {
                            TestSupport.assertSameTensor(tensors.get(i), t);
                        }
                    }
                }
            }
        } finally {
            tensors.forEach(Tensor::close);
        }
    }

    @Test
    void quantizedAndMultiBufferTensorsRoundTrip() throws IOException {
        TensorDescriptor perChannel = TensorDescriptor.builder(ElementType.INT8, 2, 3)
                .quantization(new Quantization.PerChannelAffine(0, ElementType.FLOAT32))
                .buffer(BufferSpec.cpu(6)).buffer(BufferSpec.cpu(8)).buffer(BufferSpec.cpu(8))
                .name("quant/per_channel").metadata("origin", "test").build();
        TensorDescriptor strided = TensorDescriptor.builder(ElementType.FLOAT32, 3, 2)
                .layout(Layout.strided(1, 3)).buffer(BufferSpec.cpu(24)).name("strided").build();
        TensorDescriptor ipc = TensorDescriptor.builder(ElementType.UINT8, 100)
                .buffer(new BufferSpec(100, 4096, DeviceTag.IPC, SyncMode.PRODUCER_SYNCED)).name("ipc").build();
        Path path = dir.resolve("q.hrry");
        // A non-CPU buffer cannot be allocated by Java: it is added from a descriptor and bytes.
        byte[] ipcBytes = TestSupport.bytes(3, 100);
        try (Tensor a = TestSupport.filled(perChannel, 1); Tensor b = TestSupport.filled(strided, 2)) {
            try (HurrayFileWriter w = HurrayFile.create(path)) {
                w.add(a);
                w.add(b);
                w.add(ipc, MemorySegment.ofArray(ipcBytes));
                w.finish();
            }
            for (boolean mapped : new boolean[] {false, true}) {
                try (HurrayFile f = reopen(path, mapped); Tensor ra = f.read("quant/per_channel");
                        Tensor rb = f.read("strided"); Tensor rc = f.read("ipc")) {
                    TestSupport.assertSameTensor(a, ra);
                    TestSupport.assertSameTensor(b, rb);
                    assertEquals(ipc, rc.descriptor());
                    assertArrayEquals(ipcBytes, rc.buffer(0).toArray(ValueLayout.JAVA_BYTE));
                    assertEquals(0, rc.buffer(0).address() % 4096);
                }
            }
        }
    }

    @Test
    void entriesListTheIndexInNameOrderWithoutReadingPayloads() throws IOException {
        Path path = dir.resolve("list.hrry");
        String[] names = {"zeta", "alpha", "mid/b", "mid/a", "Ω"};
        try (HurrayFileWriter w = HurrayFile.create(path)) {
            for (int i = 0; i < names.length; i++) {
                try (Tensor t = Tensor.of(new float[] {i, i + 0.5f, -i}, 3)) {
                    w.add(names[i], t);
                }
            }
            w.finish();
        }
        String[] sorted = {"alpha", "mid/a", "mid/b", "zeta", "Ω"};
        for (boolean mapped : new boolean[] {false, true}) {
            try (HurrayFile f = reopen(path, mapped)) {
                List<FileEntry> entries = f.entries();
                assertEquals(sorted.length, entries.size());
                long previousEnd = 0;
                for (int i = 0; i < sorted.length; i++) {
                    FileEntry e = entries.get(i);
                    assertEquals(i, e.index());
                    assertEquals(sorted[i], e.name());
                    assertEquals(sorted[i], f.name(i));
                    assertEquals(sorted[i], e.descriptor().name().orElseThrow());
                    assertEquals(ElementType.FLOAT32, e.descriptor().elementType());
                    assertEquals(Shape.of(3), e.descriptor().shape());
                    assertEquals(1, e.buffers().size());
                    FileEntry.BufferLocation loc = e.buffers().get(0);
                    assertEquals(12, loc.length());
                    assertEquals(64, loc.alignment());
                    assertEquals(0, loc.offset() % 64);
                    assertTrue(loc.offset() >= 16 && loc.offset() + loc.length() <= f.size());
                    assertTrue(loc.hasChecksum());
                    assertEquals(12, e.totalBytes());
                    previousEnd = Math.max(previousEnd, loc.offset() + loc.length());
                    // The stored checksum is the CRC32C of the payload bytes.
                    try (Tensor t = f.read(e)) {
                        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
                        crc.update(t.buffer(0).asByteBuffer());
                        assertEquals(crc.getValue(), loc.crc32c());
                    }
                }
                // Iteration and stream give the same entries.
                List<String> iterated = new ArrayList<>();
                for (FileEntry e : f) {
                    iterated.add(e.name());
                }
                assertEquals(List.of(sorted), iterated);
                assertEquals(List.of(sorted), f.stream().map(FileEntry::name).toList());
                assertTrue(f.contains("mid/a"));
                assertFalse(f.contains("mid"));
                assertTrue(f.entry("nope").isEmpty());
                assertEquals(entries.get(2), f.entry("mid/b").orElseThrow());
                HurrayException e = assertThrows(HurrayException.class, () -> f.read("nope"));
                assertEquals(Status.NOT_FOUND, e.status());
                assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> f.entry(5)).status());
                f.verify();
            }
        }
    }

    @Test
    void fileMetadataRoundTripsSortedByKey() throws IOException {
        Path path = dir.resolve("meta.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path); Tensor t = Tensor.of(new int[] {7}, 1)) {
            w.add("x", t);
            w.metadata("version", "1");
            w.metadata("blob", new byte[] {0, 1, (byte) 0xFF});
            w.metadata("empty", new byte[0]);
            w.metadata("version", "2"); // replaces
            w.finish();
        }
        for (boolean mapped : new boolean[] {false, true}) {
            try (HurrayFile f = reopen(path, mapped)) {
                Map<String, byte[]> m = f.metadata();
                assertEquals(List.of("blob", "empty", "version"), List.copyOf(m.keySet()));
                assertArrayEquals(new byte[] {0, 1, (byte) 0xFF}, m.get("blob"));
                assertArrayEquals(new byte[0], m.get("empty"));
                assertEquals("2", f.metadataString("version").orElseThrow());
                assertArrayEquals(new byte[0], f.metadata("empty").orElseThrow());
                assertTrue(f.metadata("absent").isEmpty());
                assertThrows(UnsupportedOperationException.class, () -> m.put("k", new byte[0]));
            }
        }
    }

    @Test
    void anEmptyContainerIsValid() throws IOException {
        Path path = dir.resolve("empty.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path)) {
            w.finish();
        }
        for (boolean mapped : new boolean[] {false, true}) {
            try (HurrayFile f = reopen(path, mapped)) {
                assertEquals(0, f.count());
                assertEquals(List.of(), f.entries());
                assertFalse(f.iterator().hasNext());
                assertEquals(Map.of(), f.metadata());
                f.verify();
            }
        }
    }

    @Test
    void mappedTensorsPointIntoTheMappingWithoutCopying() throws IOException {
        Path path = dir.resolve("zc.hrry");
        List<Tensor> tensors = new ArrayList<>();
        try {
            int i = 0;
            for (TensorDescriptor d : namedCorpus()) {
                tensors.add(TestSupport.filled(d, i++));
            }
            write(path, tensors, FileWriterOptions.defaults());
        } finally {
            tensors.forEach(Tensor::close);
        }
        try (HurrayFile f = HurrayFile.map(path)) {
            MemorySegment map = f.mapping().orElseThrow();
            assertEquals(f.size(), map.byteSize());
            assertTrue(map.isReadOnly());
            long lo = map.address();
            long hi = lo + map.byteSize();
            int checked = 0;
            for (FileEntry e : f) {
                try (Tensor t = f.read(e)) {
                    for (int b = 0; b < t.buffers().size(); b++) {
                        MemorySegment s = t.buffer(b);
                        if (s.byteSize() == 0) {
                            continue;
                        }
                        assertTrue(s.address() >= lo && s.address() + s.byteSize() <= hi,
                                e.name() + " buffer " + b + " lies outside the mapping");
                        assertEquals(lo + e.buffers().get(b).offset(), s.address(), "at its file offset");
                        assertTrue(s.isReadOnly());
                        checked++;
                    }
                }
            }
            assertTrue(checked > 100, "checked " + checked + " buffers");
        }
        // Through open(), buffers are the reader's own allocations, outside any mapping.
        try (HurrayFile f = HurrayFile.open(path); Tensor t = f.read("t/010")) {
            assertTrue(f.mapping().isEmpty());
            assertFalse(t.buffer(0).isReadOnly());
        }
    }

    @Test
    void theMappingLivesUntilTheFileAndEveryTensorAreClosed() throws Exception {
        Path path = dir.resolve("life.hrry");
        try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2)) {
            write(path, List.of(named(t, "a"), named(t, "b")), FileWriterOptions.defaults());
        }
        // Closing the file first: the tensor keeps the mapping alive.
        HurrayFile f = HurrayFile.map(path);
        MemorySegment map = f.mapping().orElseThrow();
        Tensor a = f.read("a");
        Tensor b = f.read("b");
        f.close();
        f.close(); // idempotent
        assertThrows(IllegalStateException.class, () -> f.read("a"));
        assertThrows(IllegalStateException.class, f::count);
        assertArrayEquals(new float[] {1, 2, 3, 4}, a.toFloatArray());
        assertEquals('H', (char) map.get(ValueLayout.JAVA_BYTE, 0), "still mapped");
        a.close();
        assertArrayEquals(new float[] {1, 2, 3, 4}, b.toFloatArray(), "b still holds the mapping");
        MemorySegment bBuffer = b.buffer(0);
        b.close();
        // The last close unmapped: every view now throws instead of touching unmapped memory.
        assertThrows(IllegalStateException.class, () -> map.get(ValueLayout.JAVA_BYTE, 0));
        assertThrows(IllegalStateException.class, () -> bBuffer.get(ValueLayout.JAVA_FLOAT, 0));
        assertThrows(IllegalStateException.class, a::toFloatArray);

        // Closing the tensors first: the file keeps it.
        HurrayFile g = HurrayFile.map(path);
        MemorySegment map2 = g.mapping().orElseThrow();
        try (Tensor t = g.read("a")) {
            assertEquals(2f, t.toFloatArray()[1]);
        }
        assertEquals('H', (char) map2.get(ValueLayout.JAVA_BYTE, 0));
        g.close();
        assertThrows(IllegalStateException.class, () -> map2.get(ValueLayout.JAVA_BYTE, 0));

        // A shared tensor closed on another thread releases the mapping there.
        HurrayFile h = HurrayFile.map(path, FileReaderOptions.defaults().withTensorScope(TensorScope.SHARED));
        MemorySegment map3 = h.mapping().orElseThrow();
        Tensor shared = h.read("b");
        h.close();
        CompletableFuture.runAsync(shared::close).get(10, TimeUnit.SECONDS);
        assertThrows(IllegalStateException.class, () -> map3.get(ValueLayout.JAVA_BYTE, 0));
    }

    /** A tensor with the same buffers as {@code t} under another name (a borrowed view). */
    private static Tensor named(Tensor t, String name) throws HurrayException {
        return Tensor.wrap(t.descriptor().toBuilder().name(name).build(), t.buffer(0));
    }

    @Test
    void mappedBuffersAreReadOnlyAndCanBeRelayed() throws IOException {
        Path path = dir.resolve("ro.hrry");
        try (Tensor t = Tensor.of(new float[] {1, 2, 3}, 3)) {
            write(path, List.of(named(t, "v")), FileWriterOptions.defaults());
        }
        try (HurrayFile f = HurrayFile.map(path); Tensor t = f.read("v")) {
            // A write would fault on the read-only map; the segment refuses it instead.
            assertThrows(IllegalArgumentException.class, () -> t.buffer(0).set(ValueLayout.JAVA_FLOAT, 0, 9f));
            assertThrows(IllegalArgumentException.class, () -> t.buffer(0).fill((byte) 0));
            // A mapped tensor can be written to a stream and to another container as it is.
            byte[] wire;
            try (Writer w = Writer.toMemory()) {
                w.write(t);
                w.finish();
                wire = w.toByteArray();
            }
            try (Reader r = Reader.of(wire); Tensor back = r.read()) {
                TestSupport.assertSameTensor(t, back);
            }
            Path copy = dir.resolve("copy.hrry");
            try (HurrayFileWriter w = HurrayFile.create(copy)) {
                w.add(t);
                w.add("renamed", t);
                w.finish();
            }
            try (HurrayFile g = HurrayFile.open(copy); Tensor c = g.read("renamed")) {
                assertArrayEquals(new float[] {1, 2, 3}, c.toFloatArray());
                assertEquals(List.of("renamed", "v"), g.stream().map(FileEntry::name).toList());
            }
        }
    }

    @Test
    void readBufferFillsTheCallersMemory() throws IOException {
        Path path = dir.resolve("pool.hrry");
        try (Tensor t = Tensor.of(new long[] {1, -2, 3, Long.MIN_VALUE}, 4)) {
            write(path, List.of(named(t, "l")), FileWriterOptions.defaults());
        }
        for (boolean mapped : new boolean[] {false, true}) {
            try (HurrayFile f = reopen(path, mapped); Arena arena = Arena.ofConfined()) {
                FileEntry e = f.entry("l").orElseThrow();
                MemorySegment pool = arena.allocate(64, 64);
                assertEquals(32, f.readBuffer(e, 0, pool));
                assertArrayEquals(new long[] {1, -2, 3, Long.MIN_VALUE},
                        pool.asSlice(0, 32).toArray(ValueLayout.JAVA_LONG));
                assertEquals(Status.BUFFER_TOO_SMALL,
                        assertThrows(HurrayException.class, () -> f.readBuffer(e, 0, pool.asSlice(0, 31))).status());
                assertEquals(Status.INVALID_ARGUMENT,
                        assertThrows(HurrayException.class, () -> f.readBuffer(e, 1, pool)).status());
                assertThrows(IllegalArgumentException.class, () -> f.readBuffer(e, 0, MemorySegment.ofArray(new byte[64])));
                assertThrows(IllegalArgumentException.class, () -> f.readBuffer(e, 0, pool.asReadOnly()));
            }
        }
    }

    @Test
    void entriesBelongToTheirFile() throws IOException {
        Path path = dir.resolve("own.hrry");
        try (Tensor t = Tensor.of(new double[] {0.5}, 1)) {
            write(path, List.of(named(t, "d")), FileWriterOptions.defaults());
        }
        FileEntry kept;
        try (HurrayFile a = HurrayFile.open(path); HurrayFile b = HurrayFile.map(path)) {
            FileEntry ea = a.entry("d").orElseThrow();
            FileEntry eb = b.entry("d").orElseThrow();
            assertNotEquals(ea, eb);
            assertThrows(IllegalArgumentException.class, () -> a.read(eb));
            assertThrows(IllegalArgumentException.class, () -> b.read(ea));
            kept = ea;
        }
        // Entries outlive the file as values.
        assertEquals("d", kept.name());
        assertEquals(ElementType.FLOAT64, kept.descriptor().elementType());
        assertTrue(kept.toString().contains("name=\"d\""), kept.toString());
    }

    @Test
    void theDescriptorOfATensorReadIsTheEntrysDescriptor() throws IOException {
        Path path = dir.resolve("same.hrry");
        try (Tensor t = Tensor.of(new short[] {1, 2}, 2)) {
            write(path, List.of(named(t, "s")), FileWriterOptions.defaults());
        }
        try (HurrayFile f = HurrayFile.open(path)) {
            FileEntry e = f.entry("s").orElseThrow();
            try (Tensor t = f.read(e)) {
                assertSame(e.descriptor(), t.descriptor(), "decoded once, shared");
            }
        }
    }

    @Test
    void aFileIsUsedByOneThreadAtATime() throws Exception {
        Path path = dir.resolve("thread.hrry");
        try (Tensor t = Tensor.of(new float[] {1}, 1)) {
            write(path, List.of(named(t, "f")), FileWriterOptions.defaults());
        }
        try (HurrayFile f = HurrayFile.open(path)) {
            // Made on one thread, used (one at a time) on another.
            assertEquals(1L, CompletableFuture.supplyAsync(() -> {
                try {
                    return f.count();
                } catch (HurrayException e) {
                    throw new RuntimeException(e);
                }
            }).get(10, TimeUnit.SECONDS));
            Iterator<FileEntry> it = f.iterator();
            assertEquals("f", it.next().name());
            assertFalse(it.hasNext());
        }
    }

    @Test
    void payloadChecksumsCanBeOffAndPayloadsPageAligned() throws IOException {
        Path path = dir.resolve("paged.hrry");
        FileWriterOptions o = FileWriterOptions.defaults().withPayloadChecksums(false).withMinPayloadAlignment(4096);
        try (Tensor t = Tensor.of(new byte[] {1, 2, 3}, 3); Tensor u = Tensor.of(new byte[] {4}, 1)) {
            write(path, List.of(named(t, "a"), named(u, "b")), o);
        }
        try (HurrayFile f = HurrayFile.map(path)) {
            for (FileEntry e : f) {
                assertEquals(0, e.buffers().get(0).offset() % 4096);
                assertFalse(e.buffers().get(0).hasChecksum());
                assertEquals(0, e.buffers().get(0).crc32c());
            }
        }
        HurrayException e = assertThrows(HurrayException.class,
                () -> HurrayFile.create(dir.resolve("bad.hrry"), FileWriterOptions.defaults().withMinPayloadAlignment(100)));
        assertEquals(Status.INVALID_ALIGNMENT, e.status());
        assertFalse(Files.list(dir).anyMatch(p -> p.getFileName().toString().startsWith(".bad.hrry")), "no temp file left");
    }

    @Test
    void lookupsByNameAreCachedAndMissesAreNot() throws IOException {
        Path path = dir.resolve("cache.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path)) {
            for (int i = 0; i < 50; i++) {
                try (Tensor t = Tensor.of(new float[] {i})) {
                    w.add("t" + i, t);
                }
            }
            w.finish();
        }
        for (boolean mapped : new boolean[] {false, true}) {
            try (HurrayFile f = mapped ? HurrayFile.map(path) : HurrayFile.open(path)) {
                FileEntry a = f.entry("t7").orElseThrow();
                assertSame(a, f.entry("t7").orElseThrow(), "the second lookup is served from the cache");
                assertEquals("t7", a.name());
                assertTrue(f.entry("nope").isEmpty());
                assertTrue(f.entry("nope").isEmpty());
                assertTrue(f.contains("t8"));
                try (Tensor t = f.read("t7")) {
                    assertArrayEquals(new float[] {7}, t.toFloatArray());
                }
                assertEquals(Status.NOT_FOUND, assertThrows(HurrayException.class, () -> f.read("nope")).status());
            }
        }
    }

    /** A one-tensor container of {@code floats} float32 values 0, 1, 2, ...; the values. */
    private static float[] writeOne(Path path, int floats) throws IOException {
        float[] v = new float[floats];
        for (int i = 0; i < v.length; i++) {
            v[i] = i;
        }
        try (HurrayFileWriter w = HurrayFile.create(path); Tensor t = Tensor.of(v, v.length)) {
            w.add("only", t);
            w.finish();
        }
        return v;
    }

    @Test
    void openingAPathReadsTheFileNativelyWithoutUpcalls() throws IOException {
        Path path = dir.resolve("small.hrry");
        float[] v = writeOne(path, 16);
        assertTrue(Files.size(path) <= 4096);
        FileReaderOptions[] options = {
            FileReaderOptions.defaults(),
            FileReaderOptions.defaults().withPayloadChecks(FileReaderOptions.PayloadChecks.SKIP),
            FileReaderOptions.defaults().withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY),
        };
        for (boolean mapped : new boolean[] {false, true}) {
            for (FileReaderOptions o : options) {
                long before = NativeFileReader.channelReaders();
                MemorySegment kept;
                try (HurrayFile f = mapped ? HurrayFile.map(path, o) : HurrayFile.open(path, o)) {
                    assertEquals(1, f.readAtCalls(), "a container of at most 4 KiB opens in one read");
                    FileEntry e = f.entry("only").orElseThrow();
                    assertSame(e, f.entry(0), "one entry per index");
                    try (Tensor t = f.read(e)) {
                        assertArrayEquals(v, t.toFloatArray());
                        kept = t.buffer(0);
                    }
                    assertThrows(IllegalStateException.class, () -> kept.get(ValueLayout.JAVA_BYTE, 0));
                    f.close();
                    f.close(); // a second close is a no-op
                    assertEquals("only", e.name(), "an entry's fields outlive the file");
                    assertThrows(IllegalStateException.class, () -> f.read(e));
                    assertThrows(IllegalStateException.class, f::count);
                }
                assertEquals(before, NativeFileReader.channelReaders(), "no Java channel: no Java code ran inside the reader's I/O");
            }
        }
        // The channel route still works, and is counted (the control).
        long before = NativeFileReader.channelReaders();
        try (HurrayFile f = HurrayFile.open(FileChannel.open(path)); Tensor t = f.read("only")) {
            assertArrayEquals(v, t.toFloatArray());
        }
        assertEquals(before + 1, NativeFileReader.channelReaders());
    }

    @Test
    void aPathTheLibraryCannotTakeGoesThroughAChannel() throws IOException {
        // A name holding U+FFFD cannot be told from one decoded lossily, so it takes the channel.
        Path path = dir.resolve("odd\uFFFDname.hrry");
        float[] v = writeOne(path, 4);
        long before = NativeFileReader.channelReaders();
        try (HurrayFile f = HurrayFile.open(path); Tensor t = f.read("only")) {
            assertArrayEquals(v, t.toFloatArray());
        }
        assertEquals(before + 1, NativeFileReader.channelReaders());
        try (HurrayFile f = HurrayFile.map(path); Tensor t = f.read("only")) {
            assertTrue(f.mapping().orElseThrow().isMapped(), "mapped by FileChannel.map");
            assertArrayEquals(v, t.toFloatArray());
        }
    }

    @Test
    void aMapMadeByTheCLibraryIsUnmappedByTheLastRelease() throws Exception {
        Path path = dir.resolve("cmap.hrry");
        float[] v = writeOne(path, 1000);
        boolean linux = System.getProperty("os.name").startsWith("Linux")
                && List.of("amd64", "aarch64").contains(System.getProperty("os.arch"));
        // The region is made only when asked for; a tensor keeps the map after the file closes.
        HurrayFile f = HurrayFile.map(path);
        Tensor t = f.read("only");
        f.close();
        MemorySegment region = f.mapping().orElseThrow();
        assertEquals(!linux, region.isMapped(), "mmap through the C library on Linux");
        assertTrue(region.isReadOnly());
        assertEquals('H', (char) region.get(ValueLayout.JAVA_BYTE, 0));
        assertArrayEquals(v, t.toFloatArray());
        CompletableFuture.runAsync(() -> {
            try {
                t.close(); // a confined tensor refuses another thread
            } catch (WrongThreadException expected) {
                return;
            }
            throw new AssertionError("closed on another thread");
        }).get(10, TimeUnit.SECONDS);
        t.close();
        assertThrows(IllegalStateException.class, () -> region.get(ValueLayout.JAVA_BYTE, 0));
        // Asked for only after the unmapping: a segment that throws, never one over freed pages.
        HurrayFile g = HurrayFile.map(path);
        g.close();
        MemorySegment late = g.mapping().orElseThrow();
        assertThrows(IllegalStateException.class, () -> late.get(ValueLayout.JAVA_BYTE, 0));
        // Many maps in a row leave nothing behind: each is unmapped at close.
        for (int i = 0; i < 2000; i++) {
            try (HurrayFile h = HurrayFile.map(path)) {
                assertEquals(1, h.count());
                if (linux && i == 0) {
                    assertEquals(1, mapsOf(path), "mapped once while open");
                }
            }
        }
        if (linux) {
            assertEquals(0, mapsOf(path), "no mapping left");
        }
    }

    /** How many of this process's mappings (/proc/self/maps) are of {@code path}. */
    private static long mapsOf(Path path) throws IOException {
        String name = path.toRealPath().toString();
        try (var lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.filter(l -> l.endsWith(" " + name)).count();
        }
    }

    @Test
    void badPathsFailClearlyThroughOpenAndMap() throws Exception {
        Path missing = dir.resolve("missing.hrry");
        assertThrows(NoSuchFileException.class, () -> HurrayFile.open(missing));
        assertThrows(NoSuchFileException.class, () -> HurrayFile.map(missing));
        HurrayException d = assertThrows(HurrayException.class, () -> HurrayFile.open(dir));
        assertEquals(Status.INVALID_ARGUMENT, d.status());
        assertTrue(d.getMessage().contains("is a directory"), d.getMessage());
        HurrayException md = assertThrows(HurrayException.class, () -> HurrayFile.map(dir));
        assertEquals(Status.INVALID_ARGUMENT, md.status());
        // map() is refused by the native library's open, with open()'s words.
        assertTrue(md.getMessage().contains("is a directory") && md.getMessage().contains(dir.toString()),
                md.getMessage());
        // The empty path is the current directory: refused the same way, not "Is a directory".
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> HurrayFile.open(Path.of(""))).status());
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> HurrayFile.map(Path.of(""))).status());
        // Devices are not containers either (not "input of 0 bytes").
        Path zero = Path.of("/dev/zero");
        if (Files.exists(zero)) {
            assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> HurrayFile.map(zero)).status());
            assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> HurrayFile.open(zero)).status());
        }
        // A FIFO is refused at once, by open() and by map(), instead of blocking until a writer comes.
        Path fifo = dir.resolve("fifo");
        Process p = new ProcessBuilder("mkfifo", fifo.toString()).start();
        Assumptions.assumeTrue(p.waitFor() == 0, "mkfifo is not available");
        for (boolean mapped : new boolean[] {false, true}) {
            HurrayException e = assertTimeoutPreemptively(Duration.ofSeconds(20),
                    () -> assertThrows(HurrayException.class, () -> {
                        if (mapped) {
                            HurrayFile.map(fifo);
                        } else {
                            HurrayFile.open(fifo);
                        }
                    }));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.getMessage().contains("not a regular file"), e.getMessage());
        }
    }

    @Test
    void aFileLargerThanTheFirstReadOpensInTwo() throws IOException {
        Path path = dir.resolve("larger.hrry");
        float[] v = writeOne(path, 10_000);
        for (boolean mapped : new boolean[] {false, true}) {
            try (HurrayFile f = reopen(path, mapped)) {
                assertEquals(2, f.readAtCalls(), "the last 4 KiB (trailer and index), the header");
                try (Tensor t = f.read("only")) {
                    assertArrayEquals(v, t.toFloatArray());
                }
                assertEquals(mapped ? 2 : 3, f.readAtCalls(), "the payload: one read, none from the map");
            }
        }
    }
}
