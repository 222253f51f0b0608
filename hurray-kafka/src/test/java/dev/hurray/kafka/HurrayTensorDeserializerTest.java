package dev.hurray.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Round trips and hostile records without a broker (the broker tests are in {@link KafkaBrokerTest}). */
class HurrayTensorDeserializerTest {
    private final HurrayTensorSerializer ser = new HurrayTensorSerializer(Map.of());
    private final HurrayTensorDeserializer de = new HurrayTensorDeserializer(Map.of());

    @org.junit.jupiter.api.AfterEach
    void close() {
        ser.close();
        de.close();
    }

    private static float[] floats(int n, long seed) {
        Random r = new Random(seed);
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = r.nextFloat() * 2 - 1;
        }
        return v;
    }

    @Test
    void roundTripsThroughAByteBufferViewAndSetsHeaders() {
        float[] v = floats(768, 1);
        RecordHeaders h = new RecordHeaders();
        byte[] value;
        try (Tensor t = Tensor.of(v, 768)) {
            value = ser.serialize("emb", h, t);
        }
        assertEquals(Optional.of(ElementType.FLOAT32), TensorHeaders.dtype(h));
        assertArrayEquals(new long[] {768}, TensorHeaders.shape(h).orElseThrow());
        // A view into a larger buffer, as the consumer passes it: position and limit matter.
        ByteBuffer batch = ByteBuffer.allocate(value.length + 20);
        batch.position(7);
        batch.put(value);
        batch.position(7).limit(7 + value.length);
        try (Tensor t = de.deserialize("emb", h, batch)) {
            assertArrayEquals(v, t.toFloatArray());
        }
        assertEquals(7, batch.position());
    }

    @Test
    void payloadChecksumsAreOptionalAndCanBeRequired() {
        HurrayTensorDeserializer strict = new HurrayTensorDeserializer(Map.of(HurrayKafkaConfig.REQUIRE_PAYLOAD_CHECKSUMS, "true"));
        try (HurrayTensorSerializer withCrc = new HurrayTensorSerializer(Map.of(HurrayKafkaConfig.PAYLOAD_CHECKSUMS, true));
             Tensor t = Tensor.of(new int[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            byte[] plain = ser.serialize("t", t);
            byte[] crc = withCrc.serialize("t", t);
            assertTrue(crc.length > plain.length);
            try (Tensor back = strict.deserialize("t", crc)) {
                assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6}, back.toIntArray());
            }
            assertEquals(Status.CORRUPT, status(() -> strict.deserialize("t", plain)));
        } finally {
            strict.close();
        }
    }

    @Test
    void nullAndEmptyStreamsAreNull() throws IOException {
        assertNull(de.deserialize("t", (byte[]) null));
        assertNull(ser.serialize("t", null));
        byte[] empty;
        try (Writer w = Writer.toMemory()) {
            w.finish();
            empty = w.toByteArray();
        }
        assertNull(de.deserialize("t", empty));
    }

    @Test
    void badRecordsRaiseSerializationExceptionWithTheHurrayStatus() throws IOException {
        byte[] good;
        try (Tensor t = Tensor.of(floats(768, 2), 768)) {
            good = ser.serialize("t", t);
        }
        assertEquals(Status.INVALID_MAGIC, status(() -> de.deserialize("t", "{\"not\":\"hurray\"}".getBytes())));
        assertEquals(Status.TRUNCATED, status(() -> de.deserialize("t", new byte[0])));
        for (int cut : new int[] {1, 8, 40, good.length / 2, good.length - 1}) {
            Status s = status(() -> de.deserialize("t", Arrays.copyOf(good, cut)));
            // LIMIT_EXCEEDED: a descriptor (or payload) declared longer than the whole record.
            assertTrue(s == Status.TRUNCATED || s == Status.LIMIT_EXCEEDED, cut + ": " + s);
        }
        // Flip a bit outside the payload (stream header, frame, descriptor, end marker; 24 bytes
        // each for frame and end marker, docs/spec/stream.md): a CRC or a structural check catches it.
        Random r = new Random(3);
        int beforePayload = good.length - 768 * 4 - 24;
        for (int i = 0; i < 300; i++) {
            byte[] bad = good.clone();
            int at = r.nextInt(beforePayload + 24);
            at = at < beforePayload ? at : good.length - 24 + (at - beforePayload);
            bad[at] ^= (byte) (1 << r.nextInt(8));
            Status s = status(() -> {
                Tensor t = de.deserialize("t", bad);
                if (t != null) {
                    t.close();
                }
            });
            int where = at;
            assertTrue(s != null && s.isError(), "flip at " + where + " went unnoticed");
        }
        // Two tensors in one record.
        byte[] two;
        try (Writer w = Writer.toMemory(); Tensor a = Tensor.of(new float[] {1}, 1)) {
            w.write(a);
            w.write(a);
            w.finish();
            two = w.toByteArray();
        }
        assertEquals(Status.CORRUPT, status(() -> de.deserialize("t", two)));
    }

    @Test
    void aRecordCannotClaimMoreMemoryThanItsSize() throws IOException {
        // A valid descriptor of a 4 GiB tensor with no payload behind it: refused before allocating.
        byte[] header;
        try (Tensor t = Tensor.of(new float[] {1}, 1)) {
            header = ser.serialize("t", t);
        }
        dev.hurray.TensorDescriptor huge = dev.hurray.TensorDescriptor.of(ElementType.FLOAT32, 1L << 30);
        byte[] desc = huge.encode();
        // Replace the small descriptor: stream header, then the item as the writer frames it.
        byte[] small = dev.hurray.TensorDescriptor.of(ElementType.FLOAT32, 1).encode();
        int at = indexOf(header, small);
        assertTrue(at > 0);
        byte[] forged = new byte[at + desc.length + 4];
        System.arraycopy(header, 0, forged, 0, at);
        System.arraycopy(desc, 0, forged, at, desc.length);
        Status s = status(() -> de.deserialize("t", forged));
        assertTrue(s == Status.LIMIT_EXCEEDED || s == Status.CORRUPT || s == Status.TRUNCATED, String.valueOf(s));
    }

    @Test
    void aReaderPerRecordReusesDecodersAndEachRecordKeepsItsOwnLimits() {
        // Records of many sizes: each reader gets limits from its record's size, and takes the
        // decoder the previous record's reader left (hurray_decoder_set_options).
        byte[][] good = new byte[24][];
        for (int k = 0; k < good.length; k++) {
            try (Tensor t = Tensor.of(floats(32 * (k + 1), k), 32 * (k + 1))) {
                good[k] = ser.serialize("t", t);
            }
        }
        byte[] big;
        try (Tensor t = Tensor.of(floats(16384, 99), 16384)) {
            big = ser.serialize("t", t);
        }
        // Half a 64 KiB tensor's record: its payload is declared larger than the record.
        byte[] half = Arrays.copyOf(big, big.length / 2);
        try (Tensor t = de.deserialize("t", big)) {
            assertEquals(16384, t.descriptor().elementCount());
        }
        long made = dev.hurray.internal.NativeReader.decodersMade();
        for (int round = 0; round < 5; round++) {
            for (int k = 0; k < good.length; k++) {
                try (Tensor t = de.deserialize("t", new RecordHeaders(), ByteBuffer.wrap(good[k]).asReadOnlyBuffer())) {
                    assertArrayEquals(floats(32 * (k + 1), k), t.toFloatArray());
                }
            }
            // Refused by its own size limit even right after the large record's reader.
            try (Tensor t = de.deserialize("t", big)) {
                assertEquals(16384, t.descriptor().elementCount());
            }
            assertEquals(Status.LIMIT_EXCEEDED, status(() -> de.deserialize("t", half)));
        }
        assertEquals(0, dev.hurray.internal.NativeReader.decodersMade() - made,
                "records read one after another make no native decoder");
    }

    @Test
    void recordsOfOneShapeShareOneDecoderAndOneDescriptor() {
        byte[][] records = new byte[3][];
        for (int k = 0; k < records.length; k++) {
            try (Tensor t = Tensor.of(floats(768, 10 + k), 768)) {
                records[k] = ser.serialize("t", t);
            }
        }
        try (Tensor warm = de.deserialize("t", records[0])) {
            assertEquals(768, warm.descriptor().elementCount());
        }
        long made = dev.hurray.internal.NativeReader.decodersMade();
        Tensor[] back = new Tensor[records.length];
        for (int k = 0; k < records.length; k++) {
            back[k] = de.deserialize("t", null, ByteBuffer.wrap(records[k]));
            assertEquals(1, de.idleDecoders(), "the record's decoder is kept for the next one");
        }
        // One immutable descriptor for all three; each tensor its own values, closed in any order.
        assertSame(back[0].descriptor(), back[1].descriptor());
        assertSame(back[1].descriptor(), back[2].descriptor());
        for (int k : new int[] {1, 2, 0}) {
            assertArrayEquals(floats(768, 10 + k), back[k].toFloatArray());
            back[k].close();
        }
        assertEquals(0, dev.hurray.internal.NativeReader.decodersMade() - made);
    }

    @Test
    void aBadRecordDoesNotPoisonTheDecoderThatMetIt() throws IOException {
        byte[] good;
        byte[] big;
        try (Tensor t = Tensor.of(floats(768, 5), 768); Tensor b = Tensor.of(floats(20000, 6), 20000)) {
            good = ser.serialize("t", t);
            big = ser.serialize("t", b);
        }
        byte[] three;
        try (Writer w = Writer.toMemory(); Tensor a = Tensor.of(new float[] {1}, 1)) {
            w.write(a);
            w.write(a);
            w.write(a);
            w.finish();
            three = w.toByteArray();
        }
        byte[] flipped = good.clone();
        flipped[20] ^= 4; // inside the frame or descriptor: a checksum catches it
        byte[][] bad = {Arrays.copyOf(good, good.length - 30), flipped, three, Arrays.copyOf(big, big.length / 2),
            "{\"not\":\"hurray\"}".getBytes(), new byte[0]};
        Status[] want = {Status.TRUNCATED, null, Status.CORRUPT, Status.LIMIT_EXCEEDED, Status.INVALID_MAGIC, Status.TRUNCATED};
        try (Tensor t = de.deserialize("t", big)) {
            assertEquals(20000, t.descriptor().elementCount());
        }
        long made = dev.hurray.internal.NativeReader.decodersMade();
        for (int round = 0; round < 20; round++) {
            for (int i = 0; i < bad.length; i++) {
                byte[] b = bad[i];
                Status s = status(() -> de.deserialize("t", b));
                if (want[i] == null) {
                    assertTrue(s != null && s.isError(), "record " + i + ": " + s);
                } else {
                    assertEquals(want[i], s, "record " + i);
                }
                // The next good record, of another size or the same, through the same decoder.
                try (Tensor t = de.deserialize("t", null, ByteBuffer.wrap(i % 2 == 0 ? good : big))) {
                    assertArrayEquals(i % 2 == 0 ? floats(768, 5) : floats(20000, 6), t.toFloatArray());
                }
                assertEquals(1, de.idleDecoders());
            }
        }
        assertEquals(0, dev.hurray.internal.NativeReader.decodersMade() - made, "no decoder is made after a bad record");
    }

    @Test
    void manyThreadsShareOneDeserializerAndTheirTensorsOutliveIt() throws Exception {
        int threads = 4;
        int perThread = 600;
        byte[][] records = new byte[40][];
        for (int k = 0; k < records.length; k++) {
            // Varying sizes and names: per-record limits change from one record to the next.
            try (Tensor t = Tensor.of(floats(16 + 37 * k, k), 16 + 37 * k); Tensor named = renamed(t, "doc-" + "x".repeat(k))) {
                records[k] = ser.serialize("t", k % 3 == 0 ? t : named);
            }
        }
        HurrayTensorDeserializer shared = new HurrayTensorDeserializer(Map.of(HurrayKafkaConfig.TENSOR_SCOPE, "SHARED"));
        java.util.concurrent.ConcurrentLinkedQueue<Object[]> kept = new java.util.concurrent.ConcurrentLinkedQueue<>();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            java.util.List<java.util.concurrent.Future<?>> fs = new java.util.ArrayList<>();
            for (int th = 0; th < threads; th++) {
                int seed = th;
                fs.add(pool.submit(() -> {
                    Random r = new Random(seed);
                    for (int i = 0; i < perThread; i++) {
                        int k = r.nextInt(records.length);
                        Tensor t = shared.deserialize("t", null, ByteBuffer.wrap(records[k]).asReadOnlyBuffer());
                        assertArrayEquals(floats(16 + 37 * k, k), t.toFloatArray());
                        assertEquals(k % 3 == 0 ? Optional.empty() : Optional.of("doc-" + "x".repeat(k)), t.descriptor().name());
                        if (i % 10 == 0) {
                            kept.add(new Object[] {t, k}); // closed later, on another thread
                        } else {
                            t.close();
                        }
                    }
                    return null;
                }));
            }
            for (var f : fs) {
                f.get(60, java.util.concurrent.TimeUnit.SECONDS);
            }
            assertTrue(shared.idleDecoders() >= 1 && shared.idleDecoders() <= threads, String.valueOf(shared.idleDecoders()));
        } finally {
            pool.shutdownNow();
            shared.close();
        }
        assertEquals(0, shared.idleDecoders(), "close frees the idle decoders");
        java.util.List<Object[]> later = new java.util.ArrayList<>(kept);
        java.util.Collections.shuffle(later, new Random(7));
        assertEquals(threads * perThread / 10, later.size());
        for (Object[] e : later) {
            Tensor t = (Tensor) e[0];
            int k = (Integer) e[1];
            assertArrayEquals(floats(16 + 37 * k, k), t.toFloatArray());
            t.close();
        }
    }

    @Test
    void reconfiguringTheScopeStartsFreshDecoders() throws Exception {
        byte[] rec;
        try (Tensor t = Tensor.of(floats(768, 8), 768)) {
            rec = ser.serialize("t", t);
        }
        try (Tensor t = de.deserialize("t", rec)) {
            assertEquals(768, t.toFloatArray().length);
        }
        assertEquals(1, de.idleDecoders());
        de.configure(Map.of(HurrayKafkaConfig.TENSOR_SCOPE, "SHARED"), false);
        Tensor shared = de.deserialize("t", rec);
        // A SHARED tensor: another thread may read and close it.
        java.util.concurrent.CompletableFuture.runAsync(() -> {
            assertArrayEquals(floats(768, 8), shared.toFloatArray());
            shared.close();
        }).get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(1, de.idleDecoders());
    }

    private static Tensor renamed(Tensor t, String name) {
        long n = t.descriptor().elementCount();
        return Tensor.copyOf(dev.hurray.TensorDescriptor.builder(ElementType.FLOAT32, n).name(name).build(), t.buffer(0));
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    @Test
    void claimCheckRoundTripAndMissingFile(@TempDir Path dir) throws IOException {
        Map<String, Object> cfg = Map.of(HurrayKafkaConfig.CLAIM_CHECK_DIR, dir.toString(),
                HurrayKafkaConfig.CLAIM_CHECK_THRESHOLD, 1024);
        try (HurrayTensorSerializer s = new HurrayTensorSerializer(cfg);
             HurrayTensorDeserializer d = new HurrayTensorDeserializer(cfg)) {
            claimCheck(dir, s, d);
        }
    }

    private void claimCheck(Path dir, HurrayTensorSerializer s, HurrayTensorDeserializer d) throws IOException {
        float[] v = floats(4096, 4);
        RecordHeaders h = new RecordHeaders();
        byte[] ref;
        try (Tensor t = Tensor.of(v, 64, 64)) {
            ref = s.serialize("big topic/1", h, t);
        }
        assertTrue(ref.length < 1024, ref.length + " bytes");
        assertTrue(TensorHeaders.isClaimCheck(h));
        assertArrayEquals(new long[] {64, 64}, TensorHeaders.shape(h).orElseThrow());
        Path file;
        try (var files = Files.list(dir)) {
            file = files.filter(p -> p.toString().endsWith(".hrry")).findFirst().orElseThrow();
        }
        byte[] bytes = Files.readAllBytes(file);
        try (Tensor back = d.deserialize("big topic/1", h, ref)) {
            // The tensor owns its memory: another process truncating the file cannot touch it.
            try (var ch = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.WRITE)) {
                ch.truncate(100);
            }
            assertArrayEquals(v, back.toFloatArray());
        }
        // Truncated file: refused with the container's status (its trailer is gone), no crash.
        assertEquals(Status.INVALID_MAGIC, status(() -> d.deserialize("t", ref)));
        // Damaged file: the container's per-payload CRC32C catches it.
        byte[] pattern = new byte[16];
        ByteBuffer.wrap(pattern).order(java.nio.ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(v, 0, 4);
        int at = indexOf(bytes, pattern);
        assertTrue(at > 0);
        bytes[at + 100] ^= 1;
        Files.write(file, bytes);
        assertEquals(Status.CORRUPT, status(() -> d.deserialize("t", ref)));
        // A file whose payloads carry no CRC32C cannot be checked: refused.
        try (Tensor t = Tensor.of(v, 64, 64);
             dev.hurray.HurrayFileWriter w = dev.hurray.HurrayFile.create(file,
                     dev.hurray.FileWriterOptions.defaults().withPayloadChecksums(false))) {
            w.add("tensor", t);
            w.finish();
        }
        assertEquals(Status.CORRUPT, status(() -> d.deserialize("t", ref)));
        Files.delete(file);
        TensorSerializationException e = assertThrows(TensorSerializationException.class, () -> d.deserialize("t", ref));
        assertEquals(Status.NOT_FOUND, e.status());
        assertTrue(e.getMessage().contains("gone"), e.getMessage());
        // No store on the consumer, or another store: refused, never resolved elsewhere.
        assertEquals(Status.UNSUPPORTED, status(() -> de.deserialize("t", ref)));
        // Without a store, the producer refuses a tensor over the threshold.
        try (HurrayTensorSerializer noStore = new HurrayTensorSerializer(Map.of(HurrayKafkaConfig.CLAIM_CHECK_THRESHOLD, "1024"));
             Tensor t = Tensor.of(v, 4096)) {
            assertEquals(Status.LIMIT_EXCEEDED, status(() -> noStore.serialize("t", t)));
        }
    }

    @Test
    void storeRefusesKeysOutsideItsDirectory(@TempDir Path dir) {
        SharedDirectoryStore store = new SharedDirectoryStore(dir);
        for (String key : new String[] {"../x.hrry", "/etc/passwd", "..", "a/b", ""}) {
            assertThrows(IllegalArgumentException.class, () -> store.path(key), key);
        }
    }

    @Test
    void storeRefusesASymbolicLinkInsideItsDirectory(@TempDir Path dir, @TempDir Path outside) throws IOException {
        SharedDirectoryStore store = new SharedDirectoryStore(dir);
        String key;
        try (Tensor t = Tensor.of(new float[] {1, 2}, 2)) {
            key = store.put("t", "w", t);
        }
        Path target = Files.move(dir.resolve(key), outside.resolve(key));
        Files.createSymbolicLink(dir.resolve(key), target);
        ClaimCheckReference ref = new ClaimCheckReference(store.uri(), key, "w", 0, 0);
        java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class,
                () -> store.open(ref, dev.hurray.FileReaderOptions.defaults()));
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        Files.delete(dir.resolve(key));
        Files.move(target, dir.resolve(key));
        store.open(ref, dev.hurray.FileReaderOptions.defaults()).close(); // the store's own file opens
    }

    @Test
    void aMissingStoreDirectoryIsAConfigError(@TempDir Path dir) {
        assertThrows(org.apache.kafka.common.config.ConfigException.class, () -> new HurrayTensorSerializer(
                Map.of(HurrayKafkaConfig.CLAIM_CHECK_DIR, dir.resolve("absent").toString())));
    }

    @Test
    void headerShapeParsingIsBounded() {
        assertEquals(Optional.empty(), TensorHeaders.parseShape("[1,-2]"));
        assertEquals(Optional.empty(), TensorHeaders.parseShape("1,2"));
        assertEquals(Optional.empty(), TensorHeaders.parseShape("[x]"));
        assertArrayEquals(new long[0], TensorHeaders.parseShape("[]").orElseThrow());
    }

    /** The status of the TensorSerializationException {@code r} throws, or null if it throws none. */
    static Status status(Runnable r) {
        try {
            r.run();
            return null;
        } catch (TensorSerializationException e) {
            return e.status();
        } catch (SerializationException e) {
            throw new AssertionError("a SerializationException without a Hurray status", e);
        }
    }
}
