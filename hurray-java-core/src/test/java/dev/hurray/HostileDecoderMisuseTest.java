package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The push decoder misused and fed in hostile pieces: a collection that refuses what
 * {@code drainTo} hands it, a collection calling back into the decoder, the decoder's own
 * input region fed back to it, regions filled in several steps or by nothing, and read-only,
 * empty and sliced buffers. Every tensor arrives once, as the Reader reads it.
 */
class HostileDecoderMisuseTest {
    static List<Tensor> tensors(Random rnd, int count) {
        List<Tensor> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int kind = rnd.nextInt(6);
            long elems = kind == 0 ? 17_000 + rnd.nextInt(40_000) : kind == 1 ? 0 : 1 + rnd.nextInt(2_000);
            ElementType type = rnd.nextBoolean() ? ElementType.FLOAT32 : ElementType.UINT8;
            out.add(TestSupport.filled(TensorDescriptor.builder(type, elems).name("t" + i).build(), rnd.nextLong()));
        }
        return out;
    }

    static List<Tensor> readAll(byte[] wire) throws IOException {
        List<Tensor> out = new ArrayList<>();
        try (Reader r = Reader.of(wire)) {
            for (Tensor t; (t = r.read()) != null;) {
                out.add(t);
            }
        }
        return out;
    }

    /** A collection whose add throws every other call (before keeping anything). */
    static final class Refusing extends AbstractList<Tensor> {
        final List<Tensor> kept = new ArrayList<>();
        int calls;

        @Override
        public boolean add(Tensor t) {
            if (calls++ % 2 == 0) {
                throw new UnsupportedOperationException("refused");
            }
            return kept.add(t);
        }

        @Override
        public Tensor get(int i) {
            return kept.get(i);
        }

        @Override
        public int size() {
            return kept.size();
        }
    }

    /** A collection that refuses every tensor leaves each with the decoder: none is lost, each comes once, in order. */
    @Test
    void aTensorACollectionRefusesStaysWithTheDecoder() throws IOException {
        for (TensorScope scope : TensorScope.values()) {
            List<Tensor> written = tensors(new Random(36), 20);
            List<Tensor> expected = null;
            List<Tensor> got = new ArrayList<>();
            try {
                byte[] wire = TestSupport.stream(written, WriterOptions.defaults());
                expected = readAll(wire);
                try (TensorDecoder d = TensorDecoder.create(ReaderOptions.defaults().withTensorScope(scope))) {
                    d.feed(ByteBuffer.wrap(wire));
                    d.endOfInput();
                    Refusing refusing = new Refusing();
                    int rounds = 0;
                    while (got.size() + refusing.size() < expected.size() && rounds++ < 1000) {
                        try {
                            d.drainTo(refusing);
                        } catch (UnsupportedOperationException e) {
                            // Refused: the tensor waits for the next call.
                        }
                        got.addAll(refusing.kept);
                        refusing.kept.clear();
                        // Every third round one through next() too.
                        if (rounds % 3 == 0) {
                            Tensor t = d.next();
                            if (t != null) {
                                got.add(t);
                            }
                        }
                    }
                    // A collection calling back into the decoder from add is refused, the tensor kept.
                    List<Tensor> reentrant = new ArrayList<>() {
                        @Override
                        public boolean add(Tensor t) {
                            try {
                                d.next();
                            } catch (HurrayException e) {
                                throw new AssertionError(e);
                            }
                            return super.add(t);
                        }
                    };
                    if (got.size() < expected.size()) {
                        assertThrows(IllegalStateException.class, () -> d.drainTo(reentrant));
                    }
                    for (Tensor t; (t = d.next()) != null;) {
                        got.add(t);
                    }
                    assertTrue(d.isEndOfStream());
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
    }

    /**
     * An encoder's pieces kept past their life: a borrowed piece read after the tensor it
     * borrows was released and closed, a staging piece after reset or close, throw
     * {@link IllegalStateException} (never reading freed memory); the encoder then encodes
     * the next stream's bytes as a fresh one does.
     */
    @Test
    void anEncodersPiecesKeptPastTheirLifeThrow() throws IOException {
        for (TensorScope scope : TensorScope.values()) {
            Tensor big = Tensor.allocate(TensorDescriptor.of(ElementType.FLOAT32, 50_000), scope);
            try (TensorEncoder e = TensorEncoder.create()) {
                e.encode(big);
                List<TensorEncoder.Piece> pieces = e.output();
                ByteBuffer borrowed = pieces.stream().filter(TensorEncoder.Piece::borrowed).findFirst().orElseThrow().bytes();
                ByteBuffer staged = pieces.stream().filter(p -> !p.borrowed()).findFirst().orElseThrow().bytes();
                e.consumed(e.pendingBytes());
                big.close();
                assertThrows(IllegalStateException.class, () -> borrowed.get(0), scope + ": a borrowed piece after the tensor closed");
                assertThrows(IllegalStateException.class, () -> staged.get(0));
                e.finish();
                ByteBuffer end = e.output().get(0).bytes();
                e.reset();
                assertThrows(IllegalStateException.class, () -> end.get(0), "a staging piece after reset");
                try (Tensor small = Tensor.of("after", new float[] {1, 2, 3})) {
                    e.encode(small);
                    e.finish();
                    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
                    for (TensorEncoder.Piece p : e.output()) {
                        byte[] b = new byte[p.bytes().remaining()];
                        p.bytes().get(b);
                        out.write(b);
                    }
                    e.consumed(e.pendingBytes());
                    assertEquals(0, e.pendingBytes());
                    byte[] want = TestSupport.stream(List.of(small), WriterOptions.defaults());
                    org.junit.jupiter.api.Assertions.assertArrayEquals(want, out.toByteArray());
                }
                ByteBuffer last = null;
                e.finish();
                List<TensorEncoder.Piece> rest = e.output();
                if (!rest.isEmpty()) {
                    last = rest.get(0).bytes();
                }
                e.close();
                if (last != null) {
                    ByteBuffer l = last;
                    assertThrows(IllegalStateException.class, () -> l.get(0), "a staging piece after close");
                }
            }
        }
    }

    /**
     * Hostile pieces: a region filled in several steps, filled with nothing, asked for twice,
     * the region itself (or a buffer over it) fed back to the decoder (refused, as the feed ends
     * the region, taking no byte), read-only, empty and offset buffers, next and drainTo taking
     * turns: the tensors the Reader reads, for both scopes.
     */
    @Test
    void hostilePiecesDecodeAsTheReaderReads() throws IOException {
        for (int round = 0; round < 40; round++) {
            Random rnd = new Random(round);
            TensorScope scope = round % 2 == 0 ? TensorScope.SHARED : TensorScope.CONFINED;
            List<Tensor> written = tensors(rnd, 1 + rnd.nextInt(15));
            List<Tensor> expected = null;
            List<Tensor> got = new ArrayList<>();
            try (Arena arena = Arena.ofConfined()) {
                byte[] wire = TestSupport.stream(written,
                        WriterOptions.defaults().withPayloadChecksums(rnd.nextBoolean()));
                expected = readAll(wire);
                try (TensorDecoder d = TensorDecoder.create(ReaderOptions.defaults().withTensorScope(scope))) {
                    int at = 0;
                    int maxChunk = 1 + rnd.nextInt(rnd.nextBoolean() ? 50 : 100_000);
                    while (at < wire.length) {
                        int n = Math.min(wire.length - at, 1 + rnd.nextInt(maxChunk));
                        switch (rnd.nextInt(7)) {
                            case 0 -> d.feed(ByteBuffer.wrap(wire, at, n).asReadOnlyBuffer());
                            case 1 -> {
                                ByteBuffer direct = ByteBuffer.allocateDirect(n + 9);
                                direct.position(5);
                                direct.put(wire, at, n).flip().position(5);
                                d.feed(direct.asReadOnlyBuffer());
                            }
                            case 2 -> {
                                d.feed(ByteBuffer.allocate(0));
                                d.feed(MemorySegment.ofArray(new byte[0]));
                                d.feed(arena.allocate(n).copyFrom(MemorySegment.ofArray(wire).asSlice(at, n)));
                            }
                            case 3 -> {
                                // The region fed back instead of filled: refused, no byte taken.
                                MemorySegment region = d.inputRegion();
                                int k = (int) Math.min(n, region.byteSize());
                                MemorySegment.copy(MemorySegment.ofArray(wire), at, region, 0, k);
                                boolean asBuffer = rnd.nextBoolean();
                                assertThrows(IllegalStateException.class, () -> {
                                    if (asBuffer) {
                                        d.feed(region.asSlice(0, k).asByteBuffer());
                                    } else {
                                        d.feed(region.asSlice(0, k));
                                    }
                                });
                                assertThrows(IllegalStateException.class, () -> d.filled(k));
                                n = 0;
                            }
                            default -> {
                                // Filled in steps (0 included), the region asked for again between.
                                MemorySegment region = d.inputRegion();
                                n = (int) Math.min(n, region.byteSize());
                                int done = 0;
                                while (done < n) {
                                    int k = rnd.nextInt(4) == 0 ? 0 : 1 + rnd.nextInt(n - done);
                                    MemorySegment.copy(MemorySegment.ofArray(wire), at + done, region, done, k);
                                    d.filled(k);
                                    done += k;
                                    if (rnd.nextInt(5) == 0 && done < n) {
                                        // Asked for again before it is full: the rest of the same room.
                                        MemorySegment again = d.inputRegion();
                                        assertEquals(region.byteSize() - done, again.byteSize());
                                        region = again;
                                        n -= done;
                                        at += done;
                                        done = 0;
                                    }
                                }
                                assertThrows(IllegalArgumentException.class, () -> d.filled(-1));
                            }
                        }
                        at += n;
                        if (rnd.nextBoolean()) {
                            d.drainTo(got);
                        } else {
                            for (Tensor t; (t = d.next()) != null;) {
                                got.add(t);
                            }
                        }
                    }
                    d.endOfInput();
                    d.drainTo(got);
                    assertNull(d.next());
                    assertTrue(d.isEndOfStream());
                }
                assertEquals(expected.size(), got.size(), "round " + round);
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
    }
}
