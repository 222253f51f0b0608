package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The golden vectors under {@code <repo>/src/golden} (written by the Rust tests; format in
 * {@code src/golden/README.md}) read identically in Java: every tensor's descriptor fields,
 * encoded descriptor bytes and buffers match the manifest, then the stream ends; every strict
 * prefix is {@link Status#TRUNCATED}; bit flips in the checksummed stream are detected.
 *
 * <p>The directory is {@code <repo>/src/golden}, the repository root being the first ancestor
 * of the working directory that holds {@code hurray.h}; the system property
 * {@code hurray.golden.dir} overrides it.
 */
class GoldenVectorsTest {
    private static final HexFormat HEX = HexFormat.of();
    private static Path dir;
    private static Map<String, Object> manifest;

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
            assertNotNull(p, "golden vectors missing: no ancestor of " + Paths.get("").toAbsolutePath() + " holds hurray.h");
            dir = p.resolve("src").resolve("golden");
        }
        Path m = dir.resolve("manifest.json");
        if (!Files.isRegularFile(m)) {
            fail("golden vectors missing: " + m + " does not exist (they are written by the Rust tests, "
                    + "see src/golden/README.md)");
        }
        manifest = (Map<String, Object>) TestSupport.json(Files.readString(m, StandardCharsets.UTF_8));
        assertEquals("hurray-golden-manifest", manifest.get("format"));
        assertEquals(1L, manifest.get("manifest_version"));
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

    private static List<Map<String, Object>> streams() {
        return list(manifest.get("streams"));
    }

    @Test
    void everyStreamReadsAsItsManifestSays() throws IOException {
        assertTrue(streams().size() >= 3);
        int tensors = 0;
        for (Map<String, Object> stream : streams()) {
            byte[] wire = Files.readAllBytes(dir.resolve((String) stream.get("file")));
            assertEquals(num(stream, "bytes"), wire.length);
            assertEquals(stream.get("crc32c"), crc(wire));
            ReaderOptions options = ReaderOptions.defaults()
                    .withRequirePayloadChecksums(Boolean.TRUE.equals(stream.get("payload_checksums")));
            try (Reader r = Reader.of(wire, options)) {
                List<Map<String, Object>> expected = list(stream.get("tensors"));
                assertEquals(num(stream, "tensor_count"), expected.size());
                for (Map<String, Object> e : expected) {
                    try (Tensor t = r.read()) {
                        assertNotNull(t, stream.get("file") + " ended before tensor " + e.get("index"));
                        check(e, t, stream.get("file") + "#" + e.get("index"));
                        tensors++;
                    }
                }
                assertNull(r.read(), "end of stream after the listed tensors");
            }
        }
        assertTrue(tensors >= 39, "read " + tensors + " golden tensors");
    }

    @SuppressWarnings("unchecked")
    private static void check(Map<String, Object> e, Tensor t, String where) throws IOException {
        TensorDescriptor d = t.descriptor();
        assertEquals(e.get("name"), d.name().orElse(null), where);
        assertEquals(e.get("dtype"), d.elementType().formatName(), where);
        assertEquals(num(e, "dtype_code"), d.elementType().code(), where);
        long[] shape = ((List<Object>) e.get("shape")).stream().mapToLong(x -> ((Number) x).longValue()).toArray();
        assertEquals(Shape.of(shape), d.shape(), where);
        assertEquals(num(e, "element_count"), d.elementCount(), where);
        assertEquals(e.get("layout"), d.layout().kind().formatName(), where);
        assertEquals(num(e, "layout_code"), d.layout().kind().code(), where);
        if (e.get("strides") == null) {
            assertEquals(0, d.layout().strides().length, where);
        } else {
            long[] strides = ((List<Object>) e.get("strides")).stream().mapToLong(x -> ((Number) x).longValue()).toArray();
            assertArrayEquals(strides, d.layout().strides(), where);
        }
        assertEquals(num(e, "byte_offset"), d.byteOffset(), where);
        Map<String, Object> q = (Map<String, Object>) e.get("quantization");
        if (q == null) {
            assertTrue(d.quantization().isEmpty(), where);
        } else {
            Quantization got = d.quantization().orElseThrow();
            assertEquals(num(q, "kind_code"), got.code(), where);
            assertEquals(q.get("dequantized"), got.dequantized().formatName(), where);
            Quantization want = switch ((String) q.get("kind")) {
                case "per_tensor_affine" -> new Quantization.PerTensorAffine(((Number) q.get("scale")).doubleValue(),
                        ((Number) q.get("bias")).doubleValue(), got.dequantized());
                case "per_channel_affine" -> new Quantization.PerChannelAffine((int) num(q, "axis"), got.dequantized());
                case "cast" -> new Quantization.Cast(got.dequantized());
                default -> throw new AssertionError("unknown kind " + q.get("kind"));
            };
            assertEquals(want, got, where);
        }
        List<Map<String, Object>> meta = list(e.get("metadata"));
        assertEquals(meta.size(), d.metadata().size(), where);
        for (Map<String, Object> kv : meta) {
            assertArrayEquals(HEX.parseHex((String) kv.get("value_hex")), d.metadata().get((String) kv.get("key")), where);
        }
        assertEquals(List.copyOf(meta.stream().map(kv -> (String) kv.get("key")).toList()), List.copyOf(d.metadata().keySet()),
                where + " metadata order");
        byte[] encoded = HEX.parseHex((String) e.get("descriptor_hex"));
        assertArrayEquals(encoded, d.encode(), where + " encoded descriptor");
        TensorDescriptor decoded = TensorDescriptor.decode(encoded);
        assertEquals(d, decoded, where);
        assertArrayEquals(encoded, decoded.encode(), where + " canonical re-encoding");

        List<Map<String, Object>> bufs = list(e.get("buffers"));
        assertEquals(bufs.size(), t.buffers().size(), where);
        for (int i = 0; i < bufs.size(); i++) {
            Map<String, Object> b = bufs.get(i);
            BufferSpec spec = d.buffers().get(i);
            assertEquals(num(b, "byte_size"), spec.byteSize(), where);
            assertEquals(num(b, "alignment"), spec.alignment(), where);
            assertEquals(((String) b.get("device")).toUpperCase(Locale.ROOT), spec.deviceTag().name(), where);
            assertEquals(num(b, "device_tag"), spec.deviceTag().code(), where);
            assertEquals(((String) b.get("sync_mode")).toUpperCase(Locale.ROOT), spec.syncMode().name(), where);
            assertEquals(num(b, "sync_mode_code"), spec.syncMode().code(), where);
            // A reader's buffer is host memory it filled: PRODUCER_SYNCED, whatever was declared.
            assertEquals(SyncMode.PRODUCER_SYNCED, t.buffers().syncMode(i), where);
            assertEquals(spec, t.buffers().spec(i), where);
            MemorySegment seg = t.buffer(i);
            assertEquals(0, seg.address() % spec.alignment(), where + " pointer alignment");
            byte[] bytes = seg.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            assertEquals(b.get("crc32c"), crc(bytes), where);
            assertArrayEquals(HEX.parseHex((String) b.get("hex")), bytes, where);
        }
    }

    @Test
    void everyStrictPrefixIsTruncated() throws IOException {
        for (Map<String, Object> stream : streams()) {
            byte[] wire = Files.readAllBytes(dir.resolve((String) stream.get("file")));
            int count = (int) num(stream, "tensor_count");
            for (int len = 0; len < wire.length; len++) {
                assertEquals(Status.TRUNCATED, failureOf(Arrays.copyOf(wire, len), count), stream.get("file") + " prefix " + len);
            }
        }
    }

    @Test
    void bitFlipsInTheChecksummedStreamAreDetected() throws IOException {
        Set<Status> allowed = Set.of(Status.CORRUPT, Status.INVALID_MAGIC, Status.VERSION_MISMATCH, Status.UNSUPPORTED);
        for (Map<String, Object> stream : streams()) {
            if (!Boolean.TRUE.equals(stream.get("payload_checksums"))) {
                continue;
            }
            byte[] wire = Files.readAllBytes(dir.resolve((String) stream.get("file")));
            int count = (int) num(stream, "tensor_count");
            for (int i = 0; i < wire.length; i++) {
                byte[] flipped = wire.clone();
                flipped[i] ^= (byte) (1 << (i % 8));
                Status s = failureOf(flipped, count);
                assertTrue(allowed.contains(s), stream.get("file") + " byte " + i + ": " + s);
            }
        }
    }

    private static Status failureOf(byte[] wire, int count) throws IOException {
        try (Reader r = Reader.of(wire)) {
            for (int i = 0; i <= count; i++) {
                Tensor t = r.read();
                if (t == null) {
                    fail("a damaged stream ended cleanly");
                }
                t.close();
            }
            fail("more tensors than the manifest lists");
        } catch (HurrayException e) {
            return e.status();
        }
        return null;
    }
}
