package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Hostile input: truncated and corrupted streams give a {@link HurrayException} with the right
 * status, never a crash, a hang or a clean end of stream.
 */
class HostileInputTest {
    private static byte[] plain;
    private static byte[] checksummed;
    private static int tensorCount;

    @BeforeAll
    static void makeStreams() throws IOException {
        List<Tensor> ts = new ArrayList<>();
        try {
            ts.add(Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3));
            ts.add(TestSupport.filled(TensorDescriptor.builder(ElementType.INT4, 7).name("nibbles").metadata("k", "v").build(), 3));
            ts.add(Tensor.of(new long[0], 0));
            ts.add(Tensor.copyOf(TensorDescriptor.of(ElementType.COMPLEX64), java.lang.foreign.MemorySegment.ofArray(new float[] {1, -1})));
            tensorCount = ts.size();
            plain = TestSupport.stream(ts, WriterOptions.defaults());
            checksummed = TestSupport.stream(ts, WriterOptions.defaults().withPayloadChecksums(true));
        } finally {
            ts.forEach(Tensor::close);
        }
    }

    /** Reads everything; returns the status of the failure, or fails if the stream ended cleanly. */
    private static Status failureOf(byte[] wire, ReaderOptions options) throws IOException {
        try (Reader r = Reader.of(wire, options)) {
            for (int i = 0; i <= tensorCount; i++) {
                Tensor t = r.read();
                if (t == null) {
                    fail("a damaged stream of " + wire.length + " bytes ended cleanly");
                }
                t.close();
            }
            fail("more tensors than were written");
        } catch (HurrayException e) {
            return e.status();
        }
        return null;
    }

    @Test
    void truncatedAtEveryByteIsTruncated() throws IOException {
        for (byte[] wire : List.of(plain, checksummed)) {
            for (int len = 0; len < wire.length; len++) {
                assertEquals(Status.TRUNCATED, failureOf(Arrays.copyOf(wire, len), ReaderOptions.defaults()),
                        "prefix of " + len + " bytes");
            }
        }
    }

    @Test
    void everyCorruptedByteOfAChecksummedStreamIsDetected() throws IOException {
        Set<Status> seen = EnumSet.noneOf(Status.class);
        for (int i = 0; i < checksummed.length; i++) {
            for (int mask : new int[] {0x01, 0x80}) {
                byte[] wire = checksummed.clone();
                wire[i] ^= (byte) mask;
                Status s = failureOf(wire, ReaderOptions.defaults());
                assertTrue(s == Status.CORRUPT || s == Status.INVALID_MAGIC, "byte " + i + ": " + s);
                seen.add(s);
            }
        }
        assertEquals(EnumSet.of(Status.CORRUPT, Status.INVALID_MAGIC), seen);
    }

    @Test
    void corruptedHeaderAndDescriptorBytesOfAPlainStreamAreDetected() throws IOException {
        // Without payload checksums only the header, frame headers and descriptors are protected:
        // flip every byte of the first item's framing (16-byte stream header, 24-byte frame
        // header and the descriptor).
        int descriptorLength = (int) java.nio.ByteBuffer.wrap(plain, 16 + 8, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
        for (int i = 0; i < 16 + 24 + descriptorLength; i++) {
            byte[] wire = plain.clone();
            wire[i] ^= 0x10;
            Status s = failureOf(wire, ReaderOptions.defaults());
            assertTrue(s == Status.CORRUPT || s == Status.INVALID_MAGIC, "byte " + i + ": " + s);
        }
    }

    @Test
    void notAHurrayStream() throws IOException {
        byte[] junk = "GET / HTTP/1.1\r\nHost: example\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        assertEquals(Status.INVALID_MAGIC, failureOf(junk, ReaderOptions.defaults()));
    }

    /** A stream header with a correct checksum but another version or unknown flags. */
    @Test
    void otherVersionsAndUnknownFlags() throws IOException {
        byte[] v2 = plain.clone();
        v2[8] = 2;
        fixHeaderCrc(v2);
        assertEquals(Status.VERSION_MISMATCH, failureOf(v2, ReaderOptions.defaults()));
        byte[] flags = plain.clone();
        flags[11] = (byte) 0x80;
        fixHeaderCrc(flags);
        assertEquals(Status.UNSUPPORTED, failureOf(flags, ReaderOptions.defaults()));
    }

    private static void fixHeaderCrc(byte[] wire) {
        CRC32C crc = new CRC32C();
        crc.update(wire, 0, 12);
        int c = (int) crc.getValue();
        for (int i = 0; i < 4; i++) {
            wire[12 + i] = (byte) (c >>> (8 * i));
        }
    }

    @Test
    void failuresCarryTheNativeMessage() throws IOException {
        try (Reader r = Reader.of(Arrays.copyOf(plain, 30))) {
            HurrayException e = assertThrows(HurrayException.class, r::read);
            assertEquals(Status.TRUNCATED, e.status());
            assertEquals(Status.TRUNCATED.value(), e.code());
            assertTrue(e.nativeMessage().startsWith("hurray_decoder_next"), e.nativeMessage());
            assertTrue(e.getMessage().startsWith("TRUNCATED: "), e.getMessage());
        }
    }
}
