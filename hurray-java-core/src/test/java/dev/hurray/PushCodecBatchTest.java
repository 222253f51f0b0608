package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The push encoder's queued small tensors (staged together by one native call), its and the
 * decoder's reset for one stream per message, and the decoder's {@code drainTo}.
 */
class PushCodecBatchTest {
    static Tensor named(String name, int n, float base) throws HurrayException {
        Tensor t = Tensor.allocate(TensorDescriptor.builder(ElementType.FLOAT32, n).name(name).build());
        for (int i = 0; i < n; i++) {
            t.buffer(0).setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, base + i);
        }
        return t;
    }

    static byte[] drainAll(TensorEncoder e) throws HurrayException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (e.pendingBytes() > 0) {
            long sent = 0;
            for (TensorEncoder.Piece p : e.output()) {
                ByteBuffer b = p.bytes();
                byte[] a = new byte[b.remaining()];
                b.get(a);
                out.write(a, 0, a.length);
                sent += a.length;
            }
            e.consumed(sent);
        }
        return out.toByteArray();
    }

    @Test
    void queuedSmallTensorsAreCopiedAtOnceAndLeaveAsTheWritersBytes() throws IOException {
        List<Tensor> ts = new ArrayList<>();
        for (int i = 0; i < 700; i++) {
            ts.add(named("q" + i, 1 + i % 40, i));
        }
        byte[] expected = TestSupport.stream(ts, WriterOptions.defaults());
        ByteArrayOutputStream wire = new ByteArrayOutputStream();
        try (TensorEncoder e = TensorEncoder.create()) {
            for (int i = 0; i < ts.size(); i++) {
                e.encode(ts.get(i));
                assertFalse(e.borrowsPayloads());
                // Queued, not borrowed: the tensor may be closed (and its memory reused) at once.
                ts.get(i).close();
                if (i % 250 == 249) {
                    wire.write(drainAll(e));
                }
            }
            assertTrue(e.pendingBytes() > 0, "queued tensors count once asked");
            e.finish();
            wire.write(drainAll(e));
            assertEquals(0, e.pendingBytes());
        }
        assertArrayEquals(expected, wire.toByteArray());
    }

    @Test
    void aSmallTensorWhoseDescriptorIsTooLargeForTheBatchAreaStaysPinnedUntilConsumed() throws IOException {
        byte[] big = new byte[64 * 1024];
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 4).name("wide")
                .metadata("a", big).metadata("b", big).metadata("c", big).build();
        Tensor t = Tensor.allocate(d);
        byte[] expected = TestSupport.stream(List.of(t), WriterOptions.defaults());
        try (TensorEncoder e = TensorEncoder.create()) {
            e.encode(t);
            // As the class comment says: staged on its own, borrowed, pinned.
            assertTrue(e.borrowsPayloads());
            assertThrows(IllegalStateException.class, t::close, "pinned while borrowed");
            byte[] first = drainAll(e);
            assertFalse(e.borrowsPayloads());
            t.close();
            e.finish();
            ByteArrayOutputStream wire = new ByteArrayOutputStream();
            wire.write(first);
            wire.write(drainAll(e));
            assertArrayEquals(expected, wire.toByteArray());
        }
    }

    @Test
    void queuedTensorsKeepTheirPlaceBeforeLargeCompositeAndMetadataItems() throws IOException {
        Tensor small = named("small", 4, 1);
        Tensor big = named("big", 50_000, 2);
        Tensor member = named("m", 2, 3);
        Tensor tail = named("tail", 1, 4);
        Composite.Builder c = Composite.builder("c").add("m", member);
        byte[] expected;
        try (Writer w = Writer.toMemory()) {
            w.metadata(java.util.Map.of("k", new byte[] {1}));
            w.write(small);
            w.write(big);
            w.write(c);
            w.write(tail);
            w.finish();
            expected = w.toByteArray();
        }
        ByteArrayOutputStream wire = new ByteArrayOutputStream();
        try (TensorEncoder e = TensorEncoder.create()) {
            e.metadata(java.util.Map.of("k", new byte[] {1}));
            e.encode(small);
            e.encode(big); // borrowed: the queued tensor is staged first
            assertTrue(e.borrowsPayloads());
            assertThrows(IllegalStateException.class, big::close, "pinned while borrowed");
            wire.write(drainAll(e));
            assertFalse(e.borrowsPayloads());
            e.encode(c);
            e.encode(tail);
            e.finish();
            wire.write(drainAll(e));
        } finally {
            small.close();
            big.close();
            member.close();
            tail.close();
        }
        assertArrayEquals(expected, wire.toByteArray());
    }

    @Test
    void withNoCopyLimitEverySmallPayloadIsStagedAtOnceAndBorrowed() throws IOException {
        try (Tensor a = named("a", 8, 1); Tensor b = named("b", 8, 2)) {
            byte[] expected = TestSupport.stream(List.of(a, b), WriterOptions.defaults());
            ByteArrayOutputStream wire = new ByteArrayOutputStream();
            try (TensorEncoder e = TensorEncoder.create(WriterOptions.defaults(), 0)) {
                e.encode(a);
                assertTrue(e.borrowsPayloads(), "a payload above the copy limit is borrowed, never queued");
                assertThrows(IllegalStateException.class, () -> e.encode(b));
                wire.write(drainAll(e));
                e.encode(b);
                wire.write(drainAll(e));
                e.finish();
                wire.write(drainAll(e));
            }
            assertArrayEquals(expected, wire.toByteArray());
        }
    }

    @Test
    void encoderResetStartsAFreshStreamAndReleasesABorrowedTensor() throws IOException {
        try (TensorEncoder e = TensorEncoder.create()) {
            Tensor big = named("big", 30_000, 0);
            e.encode(big);
            assertTrue(e.borrowsPayloads());
            e.reset();
            assertFalse(e.borrowsPayloads());
            assertEquals(0, e.pendingBytes());
            big.close(); // no longer pinned
            for (int message = 0; message < 5; message++) {
                try (Tensor t = named("msg" + message, 3, message)) {
                    e.metadata(java.util.Map.of("n", new byte[] {(byte) message}));
                    e.encode(t);
                    e.finish();
                    byte[] got = drainAll(e);
                    byte[] want;
                    try (Writer w = Writer.toMemory()) {
                        w.metadata(java.util.Map.of("n", new byte[] {(byte) message}));
                        w.write(t);
                        w.finish();
                        want = w.toByteArray();
                    }
                    assertArrayEquals(want, got, "message " + message);
                    e.reset();
                }
            }
            // Queued tensors are dropped by a reset too.
            try (Tensor t = named("dropped", 2, 0)) {
                e.encode(t);
            }
            e.reset();
            assertEquals(0, e.pendingBytes());
        }
        TensorEncoder closed = TensorEncoder.create();
        closed.close();
        assertThrows(IllegalStateException.class, closed::reset);
    }

    @Test
    void encodingAClosedTensorIsRefusedAndTheQueueIsKept() throws IOException {
        Tensor ok = named("ok", 4, 0);
        Tensor gone = named("gone", 4, 0);
        gone.close();
        byte[] expected = TestSupport.stream(List.of(ok), WriterOptions.defaults());
        try (TensorEncoder e = TensorEncoder.create()) {
            e.encode(ok);
            assertThrows(IllegalStateException.class, () -> e.encode(gone));
            e.finish();
            assertArrayEquals(expected, drainAll(e));
        } finally {
            ok.close();
        }
    }

    @Test
    void drainToTakesEveryCompleteTensorInOrder() throws IOException {
        List<Tensor> ts = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            ts.add(named("d" + i, 1 + i % 5, i));
        }
        byte[] wire = TestSupport.stream(ts, WriterOptions.defaults());
        ts.forEach(Tensor::close);
        List<Tensor> got = new ArrayList<>();
        try (TensorDecoder d = TensorDecoder.create()) {
            d.feed(ByteBuffer.wrap(wire, 0, wire.length / 2));
            int first = d.drainTo(got);
            assertEquals(first, got.size());
            assertTrue(first > 0 && first < 300);
            assertEquals(0, d.drainTo(got), "nothing more until bytes arrive");
            d.feed(ByteBuffer.wrap(wire, wire.length / 2, wire.length - wire.length / 2));
            assertEquals(300 - first, d.drainTo(got));
            d.endOfInput();
            assertEquals(0, d.drainTo(got));
            assertTrue(d.isEndOfStream());
        }
        for (int i = 0; i < 300; i++) {
            assertEquals("d" + i, got.get(i).descriptor().name().orElseThrow());
            assertEquals(i, got.get(i).toFloatArray()[0]);
        }
        got.forEach(Tensor::close);
        try (TensorDecoder items = TensorDecoder.createForItems(ReaderOptions.defaults())) {
            assertThrows(IllegalStateException.class, () -> items.drainTo(new ArrayList<>()));
        }
    }

    @Test
    void drainToKeepsTheTensorsBeforeAFailure() throws IOException {
        List<Tensor> ts = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            ts.add(named("f" + i, 3, i));
        }
        byte[] wire = TestSupport.stream(ts, WriterOptions.defaults());
        ts.forEach(Tensor::close);
        // The last tensor's frame and the end marker damaged.
        byte[] bad = Arrays.copyOf(wire, wire.length);
        Arrays.fill(bad, wire.length - 40, wire.length, (byte) 0x77);
        List<Tensor> got = new ArrayList<>();
        try (TensorDecoder d = TensorDecoder.create()) {
            d.feed(ByteBuffer.wrap(bad));
            HurrayException e = assertThrows(HurrayException.class, () -> {
                d.drainTo(got);
                d.endOfInput();
                d.drainTo(got);
            });
            assertTrue(e.status() == Status.CORRUPT || e.status() == Status.TRUNCATED, e.toString());
            assertTrue(got.size() >= 18, got.size() + " tensors before the damage");
            for (int i = 0; i < got.size(); i++) {
                assertEquals("f" + i, got.get(i).descriptor().name().orElseThrow());
            }
        } finally {
            got.forEach(Tensor::close);
        }
    }

    @Test
    void decoderResetForgetsAFailureAndDecodesTheNextStream() throws IOException {
        byte[] good;
        try (Tensor a = named("a", 5, 1); Tensor b = named("b", 70_000, 2)) {
            good = TestSupport.stream(List.of(a, b), WriterOptions.defaults());
        }
        try (TensorDecoder d = TensorDecoder.create()) {
            // Garbage: sticky until reset.
            d.feed(ByteBuffer.wrap(new byte[64]));
            assertEquals(Status.INVALID_MAGIC, assertThrows(HurrayException.class, d::next).status());
            assertEquals(Status.INVALID_MAGIC, assertThrows(HurrayException.class, d::next).status(), "sticky");
            d.reset();
            // Half a stream, then reset: the partial tensor and the untaken one are dropped.
            d.feed(ByteBuffer.wrap(good, 0, good.length - 100));
            Tensor first = d.next();
            assertEquals("a", first.descriptor().name().orElseThrow());
            d.reset();
            assertEquals(1f, first.toFloatArray()[0], "a tensor taken before the reset stays valid");
            first.close();
            // A truncated stream, then reset.
            d.feed(ByteBuffer.wrap(good, 0, 10));
            d.endOfInput();
            assertEquals(Status.TRUNCATED, assertThrows(HurrayException.class, d::next).status());
            d.reset();
            for (int message = 0; message < 3; message++) {
                d.feed(ByteBuffer.wrap(good));
                d.endOfInput();
                List<Tensor> got = new ArrayList<>();
                d.drainTo(got);
                assertEquals(2, got.size());
                assertEquals(2f + 69_999, got.get(1).toFloatArray()[69_999]);
                assertNull(d.next());
                got.forEach(Tensor::close);
                d.reset();
            }
        }
        TensorDecoder closed = TensorDecoder.create();
        closed.close();
        assertThrows(IllegalStateException.class, closed::reset);
    }
}
