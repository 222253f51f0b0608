package dev.hurray.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.TensorDecoder;
import dev.hurray.TensorEncoder;
import dev.hurray.TensorScope;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The shared arena that small {@link TensorScope#SHARED} tensors of one decoder share. */
class SharedBatchTest {
    private static final ReaderOptions SHARED = ReaderOptions.defaults().withTensorScope(TensorScope.SHARED);

    /** A stream of {@code n} float32[4] tensors holding their index. */
    private static byte[] stream(int n) throws Exception {
        try (TensorEncoder e = TensorEncoder.create()) {
            for (int i = 0; i < n; i++) {
                try (Tensor t = Tensor.of(new float[] {i, i, i, i})) {
                    e.encode(t);
                }
            }
            e.finish();
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            while (e.pendingBytes() > 0) {
                int sent = 0;
                for (TensorEncoder.Piece p : e.output()) {
                    ByteBuffer b = p.bytes();
                    byte[] a = new byte[b.remaining()];
                    b.get(a);
                    out.write(a);
                    sent += a.length;
                }
                e.consumed(sent);
            }
            return out.toByteArray();
        }
    }

    private static List<Tensor> decode(TensorDecoder d, byte[] wire) throws Exception {
        List<Tensor> out = new ArrayList<>();
        d.feed(ByteBuffer.wrap(wire));
        d.drainTo(out);
        return out;
    }

    @Test
    void tensorsCloseInAnyOrderAndFromAnyThread() throws Exception {
        try (TensorDecoder d = TensorDecoder.create(SHARED)) {
            List<Tensor> ts = decode(d, stream(10));
            assertEquals(10, ts.size());
            MemorySegment first = ts.get(0).buffer(0);
            assertSame(first.scope(), ts.get(9).buffer(0).scope(), "one arena for the batch");
            Thread other = new Thread(() -> ts.get(5).close());
            other.start();
            other.join();
            for (int i : new int[] {9, 0, 3, 1, 2, 4, 8, 7, 6}) {
                assertEquals(i, ts.get(i).buffer(0).getAtIndex(ValueLayout.JAVA_FLOAT, 0));
                ts.get(i).close();
                ts.get(i).close(); // idempotent
            }
            assertTrue(first.scope().isAlive(), "the decoder still holds the batch");
        }
    }

    @Test
    void accessorsThrowAfterCloseWhileTheBatchLives() throws Exception {
        try (TensorDecoder d = TensorDecoder.create(SHARED)) {
            List<Tensor> ts = decode(d, stream(2));
            MemorySegment kept = ts.get(0).buffer(0);
            ts.get(0).close();
            assertThrows(IllegalStateException.class, () -> ts.get(0).buffer(0));
            assertThrows(IllegalStateException.class, () -> ts.get(0).toFloatArray());
            assertEquals(0f, kept.getAtIndex(ValueLayout.JAVA_FLOAT, 0), "valid until the whole batch is closed");
            assertEquals(1f, ts.get(1).buffer(0).getAtIndex(ValueLayout.JAVA_FLOAT, 0));
            ts.get(1).close();
        }
    }

    @Test
    void memoryIsFreedWhenTheLastTensorOfAFullBatchCloses() throws Exception {
        try (TensorDecoder d = TensorDecoder.create(SHARED)) {
            List<Tensor> ts = decode(d, stream(SharedBatch.MAX_TENSORS + 1));
            MemorySegment a = ts.get(0).buffer(0);
            MemorySegment b = ts.get(SharedBatch.MAX_TENSORS).buffer(0);
            assertNotSame(a.scope(), b.scope(), "a full batch makes way for a new one");
            for (int i = 0; i < SharedBatch.MAX_TENSORS - 1; i++) {
                ts.get(i).close();
            }
            assertTrue(a.scope().isAlive());
            ts.get(SharedBatch.MAX_TENSORS - 1).close();
            assertTrue(SharedBatch.awaitClosing(10_000));
            assertFalse(a.scope().isAlive(), "the last close frees the full batch");
            assertThrows(IllegalStateException.class, () -> a.get(ValueLayout.JAVA_FLOAT, 0));
            ts.get(SharedBatch.MAX_TENSORS).close();
            assertTrue(b.scope().isAlive(), "the decoder still holds the current batch");
        }
    }

    @Test
    void tensorsStayValidAfterTheDecoderResetsAndCloses() throws Exception {
        byte[] wire = stream(3);
        List<Tensor> ts = new ArrayList<>();
        MemorySegment a;
        try (TensorDecoder d = TensorDecoder.create(SHARED)) {
            ts.addAll(decode(d, wire));
            d.reset();
            ts.addAll(decode(d, wire));
            a = ts.get(0).buffer(0);
            assertSame(a.scope(), ts.get(5).buffer(0).scope(), "the batch is kept across reset");
        }
        for (int i = 0; i < ts.size(); i++) {
            assertEquals(i % 3, ts.get(i).buffer(0).getAtIndex(ValueLayout.JAVA_FLOAT, 3));
        }
        ts.forEach(Tensor::close);
        assertTrue(SharedBatch.awaitClosing(10_000));
        assertFalse(a.scope().isAlive(), "freed once the decoder closed and every tensor closed");
    }

    /**
     * The decoder lets go of a batch whose tensors are all closed while another thread is inside
     * one of its segments (a downcall that was passed it: libc {@code qsort}, held inside its
     * comparator upcall): the arena cannot close then, and the batch is closed by a later release
     * once that thread is out, not leaked.
     */
    @Test
    void aBatchReleasedWhileAnotherThreadIsInsideASegmentIsFreedLater() throws Exception {
        java.util.concurrent.CountDownLatch inside = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch leave = new java.util.concurrent.CountDownLatch(1);
        Thread user;
        MemorySegment kept;
        try (TensorDecoder d = TensorDecoder.create(SHARED)) {
            List<Tensor> ts = decode(d, stream(2));
            kept = ts.get(0).buffer(0);
            MemorySegment held = kept;
            user = new Thread(() -> Qsort.sortHolding(held, inside, leave));
            user.start();
            inside.await();
            ts.forEach(Tensor::close);
        }
        // The decoder closed: the closing thread found the arena in use and left the batch waiting.
        assertTrue(SharedBatch.awaitClosing(10_000));
        assertTrue(kept.scope().isAlive(), "another thread is inside the segment");
        assertTrue(SharedBatch.retryWaiting() >= 1, "still in use: the batch keeps waiting");
        assertTrue(kept.scope().isAlive());
        leave.countDown();
        user.join();
        // Another decoder's batch release retries the waiting one (and so does the closing thread).
        try (TensorDecoder d = TensorDecoder.create(SHARED)) {
            decode(d, stream(1)).forEach(Tensor::close);
        }
        assertTrue(SharedBatch.awaitClosing(10_000));
        assertFalse(kept.scope().isAlive(), "freed once the other thread is out");
        assertEquals(0, SharedBatch.retryWaiting());
    }

    /**
     * The last close of a batch does not run the arena's handshake on the closing caller's
     * thread: the library's closing thread does, and the caller returns at once.
     */
    @Test
    void theBatchIsClosedOnTheLibrarysClosingThread() throws Exception {
        java.util.concurrent.atomic.AtomicReference<String> closedOn = new java.util.concurrent.atomic.AtomicReference<>();
        SharedBatch b = new SharedBatch();
        java.lang.foreign.Arena m = b.member(16);
        // A release action on the batch's arena records the thread that closes it.
        MemorySegment.NULL.reinterpret(16, m, s -> closedOn.set(Thread.currentThread().getName()));
        m.close();
        b.release();
        assertTrue(SharedBatch.awaitClosing(10_000));
        assertEquals(SharedBatch.CLOSER_NAME, closedOn.get());
    }

    /**
     * A tensor's close, the batch's last, while another thread is inside one of the batch's
     * segments: the close returns normally (the tensor is closed), and the batch is freed once
     * that thread is out, without any later release of a decoder.
     */
    @Test
    void theLastCloseWhileAnotherThreadIsInsideASegmentReturnsAndTheBatchIsFreedLater() throws Exception {
        java.util.concurrent.CountDownLatch inside = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch leave = new java.util.concurrent.CountDownLatch(1);
        List<Tensor> ts;
        try (TensorDecoder d = TensorDecoder.create(SHARED)) {
            ts = decode(d, stream(2));
        }
        MemorySegment kept = ts.get(0).buffer(0);
        Thread user = new Thread(() -> Qsort.sortHolding(kept, inside, leave));
        user.start();
        inside.await();
        ts.forEach(Tensor::close); // the decoder let go already: the last close hands the batch over
        assertFalse(ts.get(1).isOpen());
        assertTrue(SharedBatch.awaitClosing(10_000));
        assertTrue(kept.scope().isAlive(), "another thread is inside the segment");
        leave.countDown();
        user.join();
        long end = System.nanoTime() + 10_000_000_000L;
        while (kept.scope().isAlive() && System.nanoTime() < end) {
            Thread.sleep(5); // the closing thread retries waiting batches every few milliseconds
        }
        assertFalse(kept.scope().isAlive(), "freed once the other thread is out");
        assertEquals(0, SharedBatch.retryWaiting());
    }

    /** libc {@code qsort} over a segment, its comparator parking the thread inside the downcall. */
    private static final class Qsort {
        private static final java.lang.foreign.Linker LINKER = java.lang.foreign.Linker.nativeLinker();
        private static final java.lang.invoke.MethodHandle QSORT = LINKER.downcallHandle(
                LINKER.defaultLookup().find("qsort").orElseThrow(),
                java.lang.foreign.FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        private static java.util.concurrent.CountDownLatch inside;
        private static java.util.concurrent.CountDownLatch leave;

        /** The comparator upcall: signals, waits, returns 0 (catches everything: an upcall must not throw). */
        static int compare(MemorySegment a, MemorySegment b) {
            try {
                inside.countDown();
                leave.await();
            } catch (Throwable t) {
                // Interrupted: leave the downcall.
            }
            return 0;
        }

        static void sortHolding(MemorySegment base, java.util.concurrent.CountDownLatch in,
                java.util.concurrent.CountDownLatch out) {
            inside = in;
            leave = out;
            try (java.lang.foreign.Arena stubs = java.lang.foreign.Arena.ofConfined()) {
                MemorySegment cmp = LINKER.upcallStub(
                        java.lang.invoke.MethodHandles.lookup().findStatic(Qsort.class, "compare",
                                java.lang.invoke.MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class)),
                        java.lang.foreign.FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS),
                        stubs);
                QSORT.invokeExact(base, 2L, 4L, cmp);
            } catch (Throwable t) {
                in.countDown();
                throw new AssertionError(t);
            }
        }
    }
}
