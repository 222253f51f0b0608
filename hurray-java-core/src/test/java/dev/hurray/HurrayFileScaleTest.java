package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A container of 100,000 tiny tensors written and read through Java: opening makes a bounded
 * number of {@code read_at} calls whatever the count, and a lookup by name at most
 * ⌈log2(n + 1)⌉ + 1 (docs/spec/hrryfile.md §4.1–4.2), counted by the native reader
 * ({@code hurray_file_reader_read_at_calls}) as seen through {@link HurrayFile#readAtCalls()}.
 */
class HurrayFileScaleTest {
    private static final int N = 100_000;
    /** ⌈log2(N + 1)⌉. */
    private static final int PROBES = 64 - Long.numberOfLeadingZeros(N);

    @TempDir
    static Path dir;
    private static Path path;

    private static String name(int i) {
        return String.format("t%06d", i);
    }

    @BeforeAll
    static void write() throws IOException {
        path = dir.resolve("many.hrry");
        TensorDescriptor base = TensorDescriptor.of(ElementType.UINT8, 1);
        MemorySegment[] payload = new MemorySegment[1];
        try (HurrayFileWriter w = HurrayFile.create(path, FileWriterOptions.defaults().withSyncOnFinish(false))) {
            for (int k = 0; k < N; k++) {
                int i = (int) ((k * 7919L) % N); // added out of order; the index sorts them
                payload[0] = MemorySegment.ofArray(new byte[] {(byte) (i % 251)});
                w.add(base.toBuilder().name(name(i)).build(), payload);
            }
            w.metadata("count", Integer.toString(N));
            w.finish();
        }
    }

    @Test
    void openAndLookupsMakeBoundedReads() throws IOException {
        assertEquals(17, PROBES);
        try (HurrayFile f = HurrayFile.open(path)) {
            assertEquals(N, f.count());
            // 12.8 MB of entries exceed the 1 MiB eager threshold: the header and the trailer only.
            assertEquals(2, f.readAtCalls(), "read_at calls made by open");
            int worst = 0;
            for (int k : new int[] {0, 1, 777, 4242, 50_000, 99_998, 99_999}) {
                long before = f.readAtCalls();
                FileEntry e = f.entry(name(k)).orElseThrow();
                int used = (int) (f.readAtCalls() - before);
                assertTrue(used <= PROBES + 1, "lookup of " + name(k) + " made " + used + " read_at calls");
                worst = Math.max(worst, used);
                assertEquals(k, e.index(), "sorted by name");
                before = f.readAtCalls();
                try (Tensor t = f.read(e)) {
                    assertEquals(1, f.readAtCalls() - before, "one range per buffer");
                    assertEquals((byte) (k % 251), t.buffer(0).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
                }
            }
            assertTrue(worst >= PROBES - 3, "the search really probes the table (" + worst + ")");
            long before = f.readAtCalls();
            assertTrue(f.entry("t100000").isEmpty());
            assertTrue(f.readAtCalls() - before <= PROBES);
            // An entry by index: one entry and one record.
            before = f.readAtCalls();
            assertEquals(name(31_337), f.entry(31_337).name());
            assertEquals(2, f.readAtCalls() - before);
            assertEquals(Integer.toString(N), f.metadataString("count").orElseThrow());
        }
        try (HurrayFile f = HurrayFile.map(path)) {
            assertEquals(2, f.readAtCalls(), "a map copies the header and the trailer only");
            long before = f.readAtCalls();
            assertEquals(name(99_999), f.entry(name(99_999)).orElseThrow().name());
            assertTrue(f.readAtCalls() - before <= PROBES + 1);
        }
    }

    @Test
    void anIndexUnderTheEagerThresholdIsLoadedAtOpen() throws IOException {
        FileReaderOptions eager = FileReaderOptions.defaults().withEagerIndexBytes(64L << 20);
        try (HurrayFile f = HurrayFile.open(path, eager)) {
            assertEquals(3, f.readAtCalls(), "header, trailer and the whole index");
            long before = f.readAtCalls();
            assertEquals(name(12_345), f.entry(name(12_345)).orElseThrow().name());
            assertEquals(before, f.readAtCalls(), "lookups make no reads");
        }
    }

    @Test
    void everyEntryOfALargeFileCanBeListedAndRead() throws IOException {
        // The file owns the native copies of the first 65,536 entries it hands out (freed at
        // close); entries beyond own theirs. Both kinds read their tensors, before and after.
        FileReaderOptions eager = FileReaderOptions.defaults().withEagerIndexBytes(64L << 20);
        try (HurrayFile f = HurrayFile.open(path, eager)) {
            List<FileEntry> all = f.entries();
            assertEquals(N, all.size());
            for (int k : new int[] {0, 65_535, 65_536, N - 1}) {
                FileEntry e = all.get(k);
                assertEquals(name(k), e.name());
                try (Tensor t = f.read(e)) {
                    assertEquals((byte) (k % 251), t.buffer(0).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
                }
            }
            assertSame(f.entry(10), f.entry(10), "an owned entry is handed out again");
            assertEquals(all.get(10), f.entry(10), "a listed entry equals the looked-up one");
            assertEquals(name(N - 1), f.entry(N - 1).name());
        }
    }

    /**
     * Listing keeps no native entry: a million-entry container must not cost a native index
     * entry per tensor while it is listed (counted, not timed). Lookups by index still keep
     * theirs, for repeated reads.
     */
    @Test
    void listingTheIndexHoldsNoNativeEntry() throws IOException {
        try (HurrayFile f = HurrayFile.open(path)) {
            long n = 0;
            for (FileEntry e : f) {
                n++;
                if (n == N / 2) {
                    try (Tensor t = f.read(e)) { // a listed entry reads its tensor
                        assertEquals((byte) ((N / 2 - 1) % 251), t.buffer(0).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
                    }
                }
            }
            assertEquals(N, n);
            assertEquals(N, f.stream().count());
            assertEquals(N, f.entries().size());
            assertEquals(0, f.retainedNativeEntries(), "iterate, stream and entries() keep no native entry");
            f.entry(3);
            assertEquals(1, f.retainedNativeEntries());
        }
    }
}
