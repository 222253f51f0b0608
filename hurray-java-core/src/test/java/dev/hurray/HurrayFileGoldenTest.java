package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The golden HRRYFILE containers under {@code <repo>/src/golden} (written by
 * {@code native/hurray-core/tests/golden.rs}; manifest format in {@code src/golden/README.md},
 * key {@code containers}) read in Java exactly as the manifest says, through both
 * {@link HurrayFile#open} and {@link HurrayFile#map}: index order, names, encoded descriptors,
 * payload offsets, lengths, alignments and bytes, and the file metadata. Re-writing a container
 * from Java and reading that back gives the same tensors, metadata and offsets.
 *
 * <p>The directory is found as in {@link GoldenVectorsTest} (first ancestor holding
 * {@code hurray.h}, or the system property {@code hurray.golden.dir}).
 */
class HurrayFileGoldenTest {
    private static final HexFormat HEX = HexFormat.of();
    private static Path dir;
    private static List<Map<String, Object>> containers;

    @TempDir
    Path tmp;

    @BeforeAll
    @SuppressWarnings("unchecked")
    static void locate() throws IOException {
        String override = System.getProperty("hurray.golden.dir");
        if (override != null && !override.isEmpty()) {
            dir = Paths.get(override);
        } else {
            Path p = Paths.get("").toAbsolutePath();
            while (p != null && !Files.exists(p.resolve("hurray.h"))) {
                p = p.getParent();
            }
            assertNotNull(p, "golden vectors missing: no ancestor of the working directory holds hurray.h");
            dir = p.resolve("src").resolve("golden");
        }
        Path m = dir.resolve("manifest.json");
        if (!Files.isRegularFile(m)) {
            fail("golden vectors missing: " + m);
        }
        Map<String, Object> manifest = (Map<String, Object>) TestSupport.json(Files.readString(m, StandardCharsets.UTF_8));
        containers = (List<Map<String, Object>>) manifest.get("containers");
        assertNotNull(containers, "the manifest lists no containers");
        assertTrue(containers.size() >= 2);
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> list(Object o) {
        return (List<Map<String, Object>>) o;
    }

    private static long num(Map<String, Object> m, String k) {
        return ((Number) m.get(k)).longValue();
    }

    private static String crc(byte[] b) {
        CRC32C c = new CRC32C();
        c.update(b);
        return String.format(Locale.ROOT, "%08x", c.getValue());
    }

    @Test
    void everyContainerReadsAsItsManifestSays() throws IOException {
        int tensors = 0;
        for (Map<String, Object> c : containers) {
            Path path = dir.resolve((String) c.get("file"));
            byte[] bytes = Files.readAllBytes(path);
            assertEquals(num(c, "bytes"), bytes.length);
            assertEquals(c.get("crc32c"), crc(bytes));
            for (boolean mapped : new boolean[] {false, true}) {
                FileReaderOptions o = FileReaderOptions.defaults()
                        .withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY).withVerifyAtOpen(true);
                try (HurrayFile f = mapped ? HurrayFile.map(path, o) : HurrayFile.open(path, o)) {
                    tensors += check(c, f, c.get("file") + (mapped ? " (map)" : " (open)"));
                }
            }
        }
        assertTrue(tensors >= 2 * 39, "read " + tensors + " golden tensors");
    }

    /** Checks {@code f} against manifest container {@code c}; returns the number of tensors checked. */
    private static int check(Map<String, Object> c, HurrayFile f, String where) throws IOException {
        assertEquals(num(c, "bytes"), f.size(), where);
        assertEquals(num(c, "tensor_count"), f.count(), where);
        List<Map<String, Object>> meta = list(c.get("metadata"));
        Map<String, byte[]> got = f.metadata();
        assertEquals(meta.stream().map(kv -> (String) kv.get("key")).toList(), List.copyOf(got.keySet()), where + " metadata keys in order");
        for (Map<String, Object> kv : meta) {
            assertArrayEquals(HEX.parseHex((String) kv.get("value_hex")), got.get((String) kv.get("key")), where);
        }
        List<FileEntry> entries = f.entries();
        List<Map<String, Object>> expected = list(c.get("tensors"));
        assertEquals(expected.size(), entries.size(), where);
        boolean checksums = Boolean.TRUE.equals(c.get("payload_checksums"));
        long minAlignment = num(c, "min_payload_alignment");
        for (Map<String, Object> e : expected) {
            int index = (int) num(e, "index");
            String name = (String) e.get("name");
            String at = where + " #" + index + " " + name;
            FileEntry entry = entries.get(index);
            assertEquals(index, entry.index(), at);
            assertEquals(name, entry.name(), at);
            assertEquals(entry, f.entry(name).orElseThrow(), at + " found by name");
            TensorDescriptor d = entry.descriptor();
            assertEquals(e.get("dtype"), d.elementType().formatName(), at);
            assertArrayEquals(HEX.parseHex((String) e.get("descriptor_hex")), d.encode(), at + " encoded descriptor");
            List<Map<String, Object>> bufs = list(e.get("buffers"));
            assertEquals(bufs.size(), entry.buffers().size(), at);
            try (Tensor t = f.read(entry)) {
                assertEquals(d, t.descriptor(), at);
                for (int b = 0; b < bufs.size(); b++) {
                    Map<String, Object> mb = bufs.get(b);
                    FileEntry.BufferLocation loc = entry.buffers().get(b);
                    assertEquals(num(mb, "offset"), loc.offset(), at + " buffer " + b + " offset");
                    assertEquals(num(mb, "byte_size"), loc.length(), at);
                    assertEquals(num(mb, "alignment"), loc.alignment(), at);
                    assertEquals(0, loc.offset() % Math.max(loc.alignment(), minAlignment), at);
                    assertEquals(checksums, loc.hasChecksum(), at);
                    if (checksums) {
                        assertEquals(mb.get("crc32c"), String.format(Locale.ROOT, "%08x", loc.crc32c()), at);
                    }
                    MemorySegment s = t.buffer(b);
                    assertEquals(0, s.address() % loc.alignment(), at + " pointer alignment");
                    byte[] payload = s.toArray(ValueLayout.JAVA_BYTE);
                    assertEquals(mb.get("crc32c"), crc(payload), at);
                    assertArrayEquals(HEX.parseHex((String) mb.get("hex")), payload, at);
                }
            }
        }
        return expected.size();
    }

    @Test
    void aContainerRewrittenFromJavaReadsTheSame() throws IOException {
        for (Map<String, Object> c : containers) {
            Path golden = dir.resolve((String) c.get("file"));
            Path copy = tmp.resolve("copy-" + c.get("file"));
            FileWriterOptions o = FileWriterOptions.defaults()
                    .withPayloadChecksums(Boolean.TRUE.equals(c.get("payload_checksums")))
                    .withMinPayloadAlignment(num(c, "min_payload_alignment"));
            try (HurrayFile in = HurrayFile.map(golden); HurrayFileWriter out = HurrayFile.create(copy, o)) {
                // Same add order as the Rust writer (payloads are laid out in add order): by
                // the file offset of buffer 0; a zero-length payload shares its offset with
                // the tensor added after it, so it goes first.
                List<FileEntry> order = new ArrayList<>(in.entries());
                order.sort(Comparator.<FileEntry>comparingLong(e -> e.buffers().get(0).offset())
                        .thenComparingLong(e -> e.buffers().get(0).length() == 0 ? 0 : 1));
                for (FileEntry e : order) {
                    try (Tensor t = in.read(e)) {
                        out.add(t);
                    }
                }
                for (Map.Entry<String, byte[]> m : in.metadata().entrySet()) {
                    out.metadata(m.getKey(), m.getValue());
                }
                out.finish();
            }
            try (HurrayFile f = HurrayFile.open(copy)) {
                check(c, f, "Java copy of " + c.get("file"));
            }
            assertArrayEquals(Files.readAllBytes(golden), Files.readAllBytes(copy),
                    "Java's writer (through the native one) produces the same bytes as Rust's");
        }
    }
}
