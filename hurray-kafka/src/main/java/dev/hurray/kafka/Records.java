package dev.hurray.kafka;

import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The record encodings (docs/spec/kafka.md): a tensor record is one Hurray stream holding one
 * tensor; a claim-check reference is one Hurray stream holding an empty uint8 tensor whose
 * metadata carries the reference. Both are encoded and decoded by the core library; this class
 * only maps the reference's fields to metadata entries.
 */
final class Records {
    static final String PREFIX = "hurray.claim-check.";
    static final String STORE = PREFIX + "store";
    static final String FILE = PREFIX + "file";
    static final String TENSOR = PREFIX + "tensor";
    static final String SIZE = PREFIX + "size";
    static final String CRC32C = PREFIX + "crc32c";

    private static final MemorySegment EMPTY = MemorySegment.ofArray(new byte[0]);

    private Records() {
    }

    /** A claim-check reference as a Hurray stream. */
    static byte[] encode(ClaimCheckReference ref, String name, WriterOptions options) throws HurrayException {
        TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.UINT8, 0)
                .metadata(STORE, ref.store().toString())
                .metadata(FILE, ref.file())
                .metadata(TENSOR, ref.tensor())
                .metadata(SIZE, Long.toString(ref.size()))
                .metadata(CRC32C, String.format("%08x", ref.crc32c()));
        if (name != null) {
            b.name(name);
        }
        try (Writer w = Writer.toMemory(options)) {
            w.write(b.build(), EMPTY);
            w.finish();
            return w.toByteArray();
        }
    }

    /** True if {@code d} is a claim-check reference (its metadata has the reference's file key). */
    static boolean isReference(TensorDescriptor d) {
        return !d.metadata().isEmpty() && d.metadata().containsKey(FILE);
    }

    /**
     * The reference in {@code d}'s metadata.
     *
     * @throws HurrayException {@link Status#CORRUPT} for a missing or malformed field
     */
    static ClaimCheckReference reference(TensorDescriptor d) throws HurrayException {
        Map<String, byte[]> m = d.metadata();
        try {
            URI store = new URI(text(m, STORE));
            long size = Long.parseLong(text(m, SIZE));
            String crc = text(m, CRC32C);
            if (crc.length() != 8) {
                throw new NumberFormatException("crc32c is not 8 hex digits");
            }
            return new ClaimCheckReference(store, text(m, FILE), text(m, TENSOR), size, Long.parseLong(crc, 16));
        } catch (URISyntaxException | IllegalArgumentException e) {
            throw new HurrayException(Status.CORRUPT, "malformed claim-check reference: " + e.getMessage(), e);
        }
    }

    private static String text(Map<String, byte[]> m, String key) {
        byte[] v = m.get(key);
        if (v == null) {
            throw new IllegalArgumentException("no " + key);
        }
        return new String(v, StandardCharsets.UTF_8);
    }

    /** CRC32C of the tensor's payloads in buffer-table order, unsigned. */
    static long crc32c(Tensor tensor) {
        CRC32C crc = new CRC32C();
        int n = tensor.descriptor().buffers().size();
        for (int i = 0; i < n; i++) {
            MemorySegment s = tensor.buffer(i);
            for (long off = 0; off < s.byteSize(); off += 1L << 30) {
                ByteBuffer bb = s.asSlice(off, Math.min(1L << 30, s.byteSize() - off)).asByteBuffer();
                crc.update(bb);
            }
        }
        return crc.getValue();
    }

    /** Sum of the tensor's payload sizes in bytes. */
    static long payloadBytes(Tensor tensor) {
        long n = 0;
        int count = tensor.descriptor().buffers().size();
        for (int i = 0; i < count; i++) {
            n += tensor.buffer(i).byteSize();
        }
        return n;
    }
}
