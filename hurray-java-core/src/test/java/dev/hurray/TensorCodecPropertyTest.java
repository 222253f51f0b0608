package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * Random chunkings of a stream through {@link TensorDecoder} give the tensors {@link Reader}
 * gives, and {@link TensorEncoder}'s pieces, sent in random-sized parts, are the bytes
 * {@link Writer} writes.
 */
class TensorCodecPropertyTest {

    /** A random stream of named tensors, some with payloads above the 64 KiB read-ahead. */
    private static List<Tensor> tensors(Random rnd) throws HurrayException {
        int count = 1 + rnd.nextInt(12);
        List<Tensor> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int kind = rnd.nextInt(10);
            long elems = kind == 0 ? 20_000 + rnd.nextInt(60_000) : kind == 1 ? 0 : 1 + rnd.nextInt(3_000);
            ElementType type = rnd.nextBoolean() ? ElementType.FLOAT32 : ElementType.UINT8;
            TensorDescriptor.Builder b = TensorDescriptor.builder(type, elems).name("t" + i);
            if (rnd.nextInt(3) == 0) {
                b.metadata("k", "v" + i);
            }
            out.add(TestSupport.filled(b.build(), rnd.nextLong()));
        }
        return out;
    }

    private static List<Tensor> readAll(byte[] wire) throws IOException {
        List<Tensor> out = new ArrayList<>();
        try (Reader r = Reader.of(wire)) {
            for (Tensor t; (t = r.read()) != null;) {
                out.add(t);
            }
        }
        return out;
    }

    @Property(tries = 60)
    void randomChunkingsDecodeAsReaderReads(@ForAll long seed, @ForAll @IntRange(min = 1, max = 70_000) int maxChunk,
            @ForAll boolean payloadChecksums) throws IOException {
        Random rnd = new Random(seed);
        List<Tensor> written = tensors(rnd);
        List<Tensor> expected = null;
        List<Tensor> got = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            byte[] wire = TestSupport.stream(written, WriterOptions.defaults().withPayloadChecksums(payloadChecksums));
            expected = readAll(wire);
            try (TensorDecoder d = TensorDecoder.create()) {
                int at = 0;
                while (at < wire.length) {
                    int n = Math.min(wire.length - at, 1 + rnd.nextInt(maxChunk));
                    switch (rnd.nextInt(4)) {
                        case 0 -> d.feed(ByteBuffer.wrap(wire, at, n));
                        case 1 -> {
                            ByteBuffer direct = ByteBuffer.allocateDirect(n);
                            direct.put(wire, at, n).flip();
                            d.feed(direct);
                            assertEquals(0, direct.remaining());
                        }
                        case 2 -> d.feed(arena.allocate(n).copyFrom(MemorySegment.ofArray(wire).asSlice(at, n)));
                        default -> {
                            // The zero-copy form: write into the decoder's own region.
                            MemorySegment region = d.inputRegion();
                            n = (int) Math.min(n, region.byteSize());
                            MemorySegment.copy(MemorySegment.ofArray(wire), at, region, 0, n);
                            d.filled(n);
                        }
                    }
                    at += n;
                    for (Tensor t; (t = d.next()) != null;) {
                        got.add(t);
                    }
                }
                d.endOfInput();
                assertNull(d.next());
                assertTrue(d.isEndOfStream());
                assertEquals(0, d.metadata().size());
            }
            assertEquals(expected.size(), got.size());
            for (int i = 0; i < got.size(); i++) {
                TestSupport.assertSameTensor(expected.get(i), got.get(i));
            }
        } finally {
            written.forEach(Tensor::close);
            if (expected != null) {
                expected.forEach(Tensor::close);
            }
            got.forEach(Tensor::close);
        }
    }

    @Property(tries = 40)
    void encoderPiecesSentInRandomPartsAreTheWritersBytes(@ForAll long seed,
            @ForAll @IntRange(min = 0, max = 65536) int copyBytes, @ForAll boolean payloadChecksums) throws IOException {
        Random rnd = new Random(seed);
        List<Tensor> written = tensors(rnd);
        try {
            WriterOptions options = WriterOptions.defaults().withPayloadChecksums(payloadChecksums);
            byte[] expected = TestSupport.stream(written, options);
            ByteArrayOutputStream wire = new ByteArrayOutputStream();
            try (TensorEncoder e = TensorEncoder.create(options, copyBytes)) {
                for (Tensor t : written) {
                    e.encode(t);
                    // Leave small items pending now and then, so several leave together.
                    if (e.borrowsPayloads() || rnd.nextBoolean()) {
                        drain(e, wire, rnd);
                    }
                }
                e.finish();
                drain(e, wire, rnd);
                assertEquals(0, e.pendingBytes());
            }
            assertArrayEquals(expected, wire.toByteArray());
        } finally {
            written.forEach(Tensor::close);
        }
    }

    /** Sends the pending output in random-sized parts, as a socket taking what it can would. */
    static void drain(TensorEncoder e, ByteArrayOutputStream wire, Random rnd) throws HurrayException {
        while (e.pendingBytes() > 0) {
            long sent = 0;
            long budget = 1 + rnd.nextInt(100_000);
            for (TensorEncoder.Piece p : e.output()) {
                ByteBuffer b = p.bytes();
                int n = (int) Math.min(b.remaining(), budget - sent);
                byte[] chunk = new byte[n];
                b.get(chunk);
                wire.write(chunk, 0, n);
                sent += n;
                if (sent == budget) {
                    break;
                }
            }
            e.consumed(sent);
        }
    }
}
