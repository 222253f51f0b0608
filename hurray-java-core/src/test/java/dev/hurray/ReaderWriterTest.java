package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.Pipe;
import java.nio.channels.ReadableByteChannel;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Reader and writer state rules: threads, end of stream, channel modes, options. */
class ReaderWriterTest {
    private static byte[] wireOf(int... values) throws IOException {
        try (Tensor t = Tensor.of(values)) {
            return TestSupport.stream(List.of(t), WriterOptions.defaults());
        }
    }

    @Test
    void endOfStreamIsSticky() throws IOException {
        try (Reader r = Reader.of(wireOf(1))) {
            r.read().close();
            assertNull(r.read());
            assertNull(r.read());
            assertTrue(r.isEndOfStream());
            assertTrue(!r.iterator().hasNext());
        }
    }

    @Test
    void useAfterCloseAndDoubleClose() throws IOException {
        Reader r = Reader.of(wireOf(1));
        r.close();
        r.close();
        assertThrows(IllegalStateException.class, r::read);
        Writer w = Writer.toMemory();
        w.close();
        w.close();
        try (Tensor t = Tensor.of(new int[] {1})) {
            assertThrows(IllegalStateException.class, () -> w.write(t));
        }
        assertThrows(IllegalStateException.class, w::finish);
        // close wrote the end marker: the memory holds a complete empty stream
        try (Reader empty = Reader.of(w.toByteArray())) {
            assertNull(empty.read());
        }
    }

    @Test
    void writeAfterFinishIsInvalidStateAndFinishIsIdempotent() throws IOException {
        try (Writer w = Writer.toMemory(); Tensor t = Tensor.of(new int[] {1})) {
            w.write(t);
            w.finish();
            w.finish();
            assertEquals(Status.INVALID_STATE, assertThrows(HurrayException.class, () -> w.write(t)).status());
        }
    }

    @Test
    void payloadsAreCheckedByTheNativeWriter() throws IOException {
        TensorDescriptor d = TensorDescriptor.of(ElementType.INT32, 4);
        try (Writer w = Writer.toMemory()) {
            assertEquals(Status.BUFFER_TOO_SMALL,
                    assertThrows(HurrayException.class, () -> w.write(d, java.lang.foreign.MemorySegment.ofArray(new int[3]))).status());
            assertEquals(Status.INVALID_ARGUMENT,
                    assertThrows(HurrayException.class, () -> w.write(d, java.lang.foreign.MemorySegment.ofArray(new int[5]))).status());
            assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> w.write(d)).status());
            // nothing was written by the refused calls
            w.write(d, java.lang.foreign.MemorySegment.ofArray(new int[] {1, 2, 3, 4}));
            w.finish();
            try (Reader r = Reader.of(w.toByteArray()); Tensor t = r.read()) {
                assertArrayEquals(new int[] {1, 2, 3, 4}, t.toIntArray());
            }
        }
    }

    @Test
    void toByteArrayNeedsAMemoryWriter() throws IOException {
        try (Writer w = Writer.of(new ByteArrayOutputStream())) {
            assertThrows(IllegalStateException.class, w::toByteArray);
        }
    }

    @Test
    void nonBlockingChannelsAreRejected() throws IOException {
        Pipe pipe = Pipe.open();
        try (Pipe.SourceChannel source = pipe.source(); Pipe.SinkChannel sink = pipe.sink()) {
            pipe.source().configureBlocking(false);
            pipe.sink().configureBlocking(false);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Reader.of(pipe.source()));
            assertTrue(e.getMessage().contains("non-blocking"));
            assertThrows(IllegalArgumentException.class, () -> Writer.of(pipe.sink()));
        }
    }

    /**
     * A channel read that returns 0 is asked again, never taken as end of input
     * (docs/spec/stream.md §Transport rules, rule 2).
     */
    @Test
    void zeroByteChannelReadsAreNotEndOfInput() throws IOException {
        ByteBuffer src = ByteBuffer.wrap(wireOf(4, 5, 6));
        int[] zeros = {0};
        ReadableByteChannel stuttering = new ReadableByteChannel() {
            boolean zero;

            @Override
            public int read(ByteBuffer dst) {
                zero = !zero;
                if (zero) {
                    zeros[0]++;
                    return 0;
                }
                if (!src.hasRemaining()) {
                    return -1;
                }
                int n = Math.min(3, Math.min(dst.remaining(), src.remaining()));
                dst.put(dst.position(), src, src.position(), n).position(dst.position() + n);
                src.position(src.position() + n);
                return n;
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        };
        try (Reader r = Reader.of(stuttering); Tensor t = r.read()) {
            assertArrayEquals(new int[] {4, 5, 6}, t.toIntArray());
            assertNull(r.read());
        }
        assertTrue(zeros[0] > 10);
    }

    /**
     * An input stream that keeps returning 0 (InputStream's contract allows it only for a 0-byte
     * request) is asked again with a back-off, as a channel is, and an interrupt ends the read
     * with TRANSPORT, never in a hot loop that no interrupt ends (one core held for good, and a
     * reader nobody can stop or close).
     */
    @Test
    @Timeout(30)
    void anInputStreamThatKeepsReturningZeroIsInterruptible() throws Exception {
        CountDownLatch asked = new CountDownLatch(3);
        java.io.InputStream stuck = new java.io.InputStream() {
            @Override
            public int read() {
                asked.countDown();
                return 0;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                asked.countDown();
                return 0;
            }
        };
        Reader r = Reader.of(stuck);
        CompletableFuture<Throwable> failure = new CompletableFuture<>();
        Thread reading = Thread.ofPlatform().daemon().start(() -> {
            try {
                r.read();
                failure.complete(null);
            } catch (Throwable t) {
                failure.complete(t);
            }
        });
        asked.await(); // asked again after 0 bytes: the reader is in its back-off loop
        reading.interrupt();
        reading.join(5_000);
        assertFalse(reading.isAlive(), "the read still spins after an interrupt");
        HurrayException e = assertInstanceOf(HurrayException.class, failure.get());
        assertEquals(Status.TRANSPORT, e.status());
        assertInstanceOf(java.io.InterruptedIOException.class, e.getCause());
        r.close();
    }

    @Test
    @Timeout(30)
    void closeFromAnotherThreadDuringABlockedReadIsRefused() throws Exception {
        Pipe pipe = Pipe.open();
        CountDownLatch inRead = new CountDownLatch(1);
        ReadableByteChannel signalling = new ReadableByteChannel() {
            @Override
            public int read(ByteBuffer dst) throws IOException {
                inRead.countDown();
                return pipe.source().read(dst); // blocks: nothing is ever written
            }

            @Override
            public boolean isOpen() {
                return pipe.source().isOpen();
            }

            @Override
            public void close() throws IOException {
                pipe.source().close();
            }
        };
        Reader r = Reader.of(signalling);
        CompletableFuture<Throwable> blocked = CompletableFuture.supplyAsync(() -> {
            try {
                r.read();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        inRead.await();
        IllegalStateException refused = assertThrows(IllegalStateException.class, r::close);
        assertTrue(refused.getMessage().contains("in use by thread"), refused.getMessage());
        assertThrows(IllegalStateException.class, r::read, "a second thread cannot read concurrently either");
        // The documented way out: close the source; the blocked read fails with TRANSPORT.
        pipe.source().close();
        Throwable t = blocked.get(10, TimeUnit.SECONDS);
        HurrayException e = assertInstanceOf(HurrayException.class, t);
        assertEquals(Status.TRANSPORT, e.status());
        assertInstanceOf(ClosedChannelException.class, e.getCause()); // AsynchronousCloseException if it was blocked
        r.close();
        pipe.sink().close();
    }

    @Test
    @Timeout(30)
    void writerCloseFromAnotherThreadDuringABlockedWriteIsRefused() throws Exception {
        Pipe pipe = Pipe.open();
        CountDownLatch inWrite = new CountDownLatch(1);
        java.nio.channels.WritableByteChannel signalling = new java.nio.channels.WritableByteChannel() {
            @Override
            public int write(ByteBuffer src) throws IOException {
                int n = pipe.sink().write(src);
                inWrite.countDown(); // part of the item is out; the rest cannot fit the pipe
                return n;
            }

            @Override
            public boolean isOpen() {
                return pipe.sink().isOpen();
            }

            @Override
            public void close() throws IOException {
                pipe.sink().close();
            }
        };
        Writer w = Writer.of(signalling);
        CompletableFuture<Throwable> blocked = CompletableFuture.supplyAsync(() -> {
            // 4 MiB cannot fit the pipe, and nobody reads: the write blocks in the channel.
            try (Tensor big = Tensor.allocate(TensorDescriptor.of(ElementType.UINT8, 4 << 20))) {
                w.write(big);
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        inWrite.await();
        IllegalStateException refused = assertThrows(IllegalStateException.class, w::close);
        assertTrue(refused.getMessage().contains("in use by thread"), refused.getMessage());
        pipe.source().close(); // the blocked write now fails: the sink's peer is gone
        HurrayException e = assertInstanceOf(HurrayException.class, blocked.get(10, TimeUnit.SECONDS));
        assertEquals(Status.TRANSPORT, e.status());
        assertInstanceOf(IOException.class, e.getCause());
        w.close(); // poisoned (part of the item was written): closes without a second report
    }

    @Test
    void readerMadeOnOneThreadIsUsedAndClosedOnAnother() throws Exception {
        Reader r = Reader.of(wireOf(8, 9));
        int[] got = CompletableFuture.supplyAsync(() -> {
            try (Tensor t = r.read()) {
                return t.toIntArray();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).get(10, TimeUnit.SECONDS);
        assertArrayEquals(new int[] {8, 9}, got);
        CompletableFuture.runAsync(() -> {
            try {
                r.close();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).get(10, TimeUnit.SECONDS);
        assertThrows(IllegalStateException.class, r::read);
    }

    @Test
    void readerOptionsComeFromTheNativeDefaultsAndAreValidatedNatively() throws IOException {
        ReaderOptions d = ReaderOptions.defaults();
        assertEquals(32, d.maxRank());
        assertEquals(1L << 20, d.maxDescriptorBytes());
        assertEquals(64L << 30, d.maxTensorBytes());
        assertEquals(TensorScope.CONFINED, d.tensorScope());
        HurrayException e = assertThrows(HurrayException.class, () -> Reader.of(new byte[0], d.withMaxRank(33)));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertTrue(e.nativeMessage().contains("max_rank"), e.nativeMessage());
        assertThrows(IllegalArgumentException.class, () -> d.withMaxTensorBytes(-1));
    }

    @Test
    void limitsAreEnforcedBeforeAllocation() throws IOException {
        byte[] wire;
        try (Tensor t = Tensor.of(new long[1000], 10, 10, 10)) {
            wire = TestSupport.stream(List.of(t), WriterOptions.defaults());
        }
        try (Reader r = Reader.of(wire, ReaderOptions.defaults().withMaxTensorBytes(7999))) {
            assertEquals(Status.LIMIT_EXCEEDED, assertThrows(HurrayException.class, r::read).status());
        }
        try (Reader r = Reader.of(wire, ReaderOptions.defaults().withMaxRank(2))) {
            assertEquals(Status.LIMIT_EXCEEDED, assertThrows(HurrayException.class, r::read).status());
        }
        try (Reader r = Reader.of(wire, ReaderOptions.defaults().withMaxDescriptorBytes(16))) {
            assertEquals(Status.LIMIT_EXCEEDED, assertThrows(HurrayException.class, r::read).status());
        }
        try (Reader r = Reader.of(wire, ReaderOptions.defaults().withRequirePayloadChecksums(true))) {
            HurrayException e = assertThrows(HurrayException.class, r::read);
            assertEquals(Status.CORRUPT, e.status());
            // errors other than TRANSPORT are sticky
            assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, r::read).status());
        }
    }
    /**
     * Tensors whose descriptors repeat the previous one under another name (the decoder's
     * HURRAY_FIELDS_SAME_EXCEPT_NAME): every tensor still reads back with its own name, and a
     * change of metadata, shape or type in between, a composite read whole, or mixing read and
     * nextItem never lets one tensor's fields leak into another's.
     */
    @Test
    void renamedRepeatsReadBackWithTheirOwnFields() throws Exception {
        TensorDescriptor a = TensorDescriptor.builder(ElementType.FLOAT32, 4).name("a").metadata("k", "v").build();
        TensorDescriptor other = TensorDescriptor.builder(ElementType.FLOAT32, 4).name("m").metadata("k", "w").build();
        TensorDescriptor shape5 = TensorDescriptor.builder(ElementType.FLOAT32, 5).name("s").metadata("k", "w").build();
        TensorDescriptor int8 = TensorDescriptor.builder(ElementType.INT8, 5).name("i").metadata("k", "w").build();
        List<TensorDescriptor> sent = List.of(a, a.withName("b"), a.withName(""), a.withName("c"), other,
                other.withName("n"), shape5, shape5.withName("t"), int8, int8.withName("j"), a.withName("d"),
                a.withName("e"));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Writer w = Writer.of(out)) {
            for (TensorDescriptor d : sent) {
                try (Tensor t = Tensor.allocate(d)) {
                    w.write(t);
                }
                if (d.name().orElse("").equals("c")) {
                    try (Tensor m = Tensor.allocate(int8)) {
                        w.write(Composite.builder("head").add("x", m));
                    }
                }
            }
        }
        try (Reader r = Reader.of(out.toByteArray())) {
            int k = 0;
            for (TensorDescriptor want : sent) {
                boolean viaItem = k % 3 == 1;
                Tensor t = viaItem ? r.nextItem().tensor().orElseThrow() : r.read();
                try (t) {
                    TensorDescriptor got = t.descriptor();
                    assertEquals(want.name(), got.name(), "tensor " + k);
                    assertEquals(want.shape(), got.shape(), "tensor " + k);
                    assertEquals(want.elementType(), got.elementType(), "tensor " + k);
                    assertArrayEquals(want.metadata().get("k"), got.metadata().get("k"), "tensor " + k);
                    assertEquals(want, got, "tensor " + k);
                    assertEquals(want.buffers().get(0).byteSize(), t.buffer(0).byteSize(), "tensor " + k);
                }
                if (want.name().orElse("").equals("c")) {
                    try (Item item = r.nextItem()) {
                        assertTrue(item.isComposite());
                    }
                }
                k++;
            }
            assertNull(r.read());
        }
    }
    /**
     * A reader per message, on many threads at once (the Kafka consumer shape): the readers'
     * recycled native result areas never mix one reader's tensor with another's.
     */
    @Test
    @Timeout(120)
    void manyShortLivedReadersOnManyThreadsReadTheirOwnTensors() throws Exception {
        int threads = 8;
        int perThread = 1500;
        List<CompletableFuture<Void>> all = new java.util.ArrayList<>();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(threads)) {
            for (int t = 0; t < threads; t++) {
                int id = t;
                all.add(CompletableFuture.runAsync(() -> {
                    try {
                        for (int i = 0; i < perThread; i++) {
                            float v = id * 100_000f + i;
                            byte[] msg;
                            try (Writer w = Writer.toMemory(); Tensor x = Tensor.of(new float[] {v, -v}, 2)) {
                                w.write(x.descriptor().withName("m" + id + "-" + i), x.buffer(0));
                                w.finish();
                                msg = w.toByteArray();
                            }
                            try (Reader r = Reader.of(msg); Tensor got = r.read()) {
                                assertEquals("m" + id + "-" + i, got.descriptor().name().orElseThrow());
                                assertArrayEquals(new float[] {v, -v}, got.toFloatArray());
                                assertNull(r.read());
                            }
                        }
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }, pool));
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get();
        }
    }
    /**
     * A reader closed in any state (mid-stream, after a corrupt stream, after its end) hands its
     * decoder on to the next reader, which must start clean: no buffered bytes, failure or
     * partly read tensor of the previous stream leaks into it.
     */
    @Test
    void aDecoderHandedOnByAClosedReaderStartsClean() throws Exception {
        byte[] two;
        try (Writer w = Writer.toMemory(); Tensor a = Tensor.of(new float[] {1, 2, 3}, 3);
             Tensor b = Tensor.of(new float[] {4, 5}, 2)) {
            w.write(a.descriptor().withName("a"), a.buffer(0));
            w.write(b.descriptor().withName("b"), b.buffer(0));
            w.finish();
            two = w.toByteArray();
        }
        byte[] garbage = "not a hurray stream at all".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        for (int round = 0; round < 50; round++) {
            // Left mid-stream: one tensor read of two.
            try (Reader r = Reader.of(two); Tensor t = r.read()) {
                assertEquals("a", t.descriptor().name().orElseThrow());
            }
            // Left failed.
            try (Reader r = Reader.of(garbage)) {
                assertEquals(Status.INVALID_MAGIC, assertThrows(HurrayException.class, r::read).status());
            }
            // Left with half a tensor buffered.
            try (Reader r = Reader.of(java.util.Arrays.copyOf(two, two.length - 30))) {
                try (Tensor t = r.read()) {
                    assertEquals("a", t.descriptor().name().orElseThrow());
                }
                assertThrows(HurrayException.class, r::read);
            }
            // Each next reader reads its whole stream from the start.
            try (Reader r = Reader.of(two)) {
                try (Tensor t = r.read()) {
                    assertEquals("a", t.descriptor().name().orElseThrow());
                    assertArrayEquals(new float[] {1, 2, 3}, t.toFloatArray());
                }
                try (Tensor t = r.read()) {
                    assertEquals("b", t.descriptor().name().orElseThrow());
                    assertArrayEquals(new float[] {4, 5}, t.toFloatArray());
                }
                assertNull(r.read());
            }
        }
    }
    /**
     * A gathering sink (a socket channel's shape) that fails fatally once: every later write
     * reports that same failure, as over a plain sink, even though this sink would take bytes
     * again (a dead connection must not swallow output).
     */
    @Test
    void aDeadGatheringSinkReportsItsFailureAgain() throws Exception {
        class OnceDead implements java.nio.channels.GatheringByteChannel {
            int calls;

            @Override
            public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
                if (calls++ == 0) {
                    throw new ClosedChannelException();
                }
                long n = 0;
                for (int i = offset; i < offset + length; i++) {
                    n += srcs[i].remaining();
                    srcs[i].position(srcs[i].limit());
                }
                return n;
            }

            @Override
            public long write(ByteBuffer[] srcs) throws IOException {
                return write(srcs, 0, srcs.length);
            }

            @Override
            public int write(ByteBuffer src) throws IOException {
                return (int) write(new ByteBuffer[] {src});
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        }
        OnceDead ch = new OnceDead();
        Writer w = Writer.of(ch);
        try (Tensor big = Tensor.allocate(TensorDescriptor.of(ElementType.FLOAT32, 64 * 1024))) {
            HurrayException first = assertThrows(HurrayException.class, () -> w.write(big));
            assertEquals(Status.TRANSPORT, first.status());
            assertInstanceOf(ClosedChannelException.class, first.getCause());
            int calls = ch.calls;
            HurrayException again = assertThrows(HurrayException.class, () -> w.write(big));
            assertEquals(Status.TRANSPORT, again.status());
            assertInstanceOf(ClosedChannelException.class, again.getCause());
            assertEquals(calls, ch.calls, "no write reaches a dead sink");
        }
    }

    @Test
    void aWriterRelaysAnOwnedTensorOfAnotherThreadAndRefusesAConfinedCallerSegmentOfOne() throws Exception {
        // Read on this thread (confined), written on another: the tensor owns its memory and is
        // pinned for the write, so the relay works (Writer.write(Tensor)'s Javadoc).
        byte[] wire;
        try (Tensor t = Tensor.of(new float[] {1, 2, 3})) {
            wire = TestSupport.stream(List.of(t), WriterOptions.defaults());
        }
        try (Reader r = Reader.of(wire); Tensor t = r.read()) {
            byte[] relayed = CompletableFuture.supplyAsync(() -> {
                try (Writer w = Writer.toMemory()) {
                    w.write(t);
                    w.finish();
                    return w.toByteArray();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).get(10, TimeUnit.SECONDS);
            assertArrayEquals(wire, relayed);
        }
        // A caller segment confined to this thread, wrapped and written on another: refused.
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment s = a.allocate(12, 64);
            Tensor t = Tensor.wrap(TensorDescriptor.of(ElementType.FLOAT32, 3), s);
            Throwable e = CompletableFuture.supplyAsync(() -> {
                try (Writer w = Writer.toMemory()) {
                    w.write(t);
                    return null;
                } catch (Throwable x) {
                    return x;
                }
            }).get(10, TimeUnit.SECONDS);
            assertInstanceOf(WrongThreadException.class, e);
            t.close();
        }
    }
}
