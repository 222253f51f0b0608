package dev.hurray.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.hurray.HurrayException;
import dev.hurray.Reader;
import dev.hurray.ReaderOptions;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import java.io.IOException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Decoders handed from closed readers to new ones ({@link NativeReader.IdleDecoders}): a reader
 * of any limits takes an idle decoder, and gets its own limits on it
 * ({@code hurray_decoder_set_options}), never the previous reader's.
 */
class NativeReaderTest {
    private static final ReaderOptions DEFAULTS = ReaderOptions.defaults();
    /** float32[64]: 256 payload bytes per tensor. */
    private static final int ELEMENTS = 64;

    @BeforeEach
    void noIdleDecoders() {
        NativeReader.IdleDecoders.destroyAll();
    }

    /** A stream of {@code count} equal float32[64] tensors (from two on the decoder keeps the descriptor's model). */
    private static byte[] stream(int count, boolean checksums) throws IOException {
        float[] v = new float[ELEMENTS];
        for (int i = 0; i < v.length; i++) {
            v[i] = i;
        }
        try (Writer w = Writer.toMemory(WriterOptions.defaults().withPayloadChecksums(checksums));
                Tensor t = Tensor.of(v, ELEMENTS)) {
            for (int i = 0; i < count; i++) {
                w.write(t);
            }
            w.finish();
            return w.toByteArray();
        }
    }

    /** Reads every tensor of {@code bytes} with {@code options}; the count. */
    private static int readAll(byte[] bytes, ReaderOptions options) throws IOException {
        int n = 0;
        try (Reader r = Reader.of(bytes, options)) {
            for (Tensor next = r.read(); next != null; next = r.read(), n++) {
                try (Tensor t = next) {
                    assertEquals(ELEMENTS, t.toFloatArray().length);
                }
            }
        }
        return n;
    }

    private static Status refusal(byte[] bytes, ReaderOptions options) {
        return assertThrows(HurrayException.class, () -> readAll(bytes, options)).status();
    }

    /**
     * Readers with different buffer pool caps (the Kafka deserializer's 0, a plain reader's
     * default) share one decoder too: the taker sets its own cap on it.
     */
    @Test
    void readersOfAnyPoolCapShareOneDecoder() throws IOException {
        byte[] plain = stream(3, false);
        long made = NativeReader.decodersMade();
        for (int i = 0; i < 20; i++) {
            assertEquals(3, readAll(plain, DEFAULTS.withBufferPoolBytes(0)));
            assertEquals(3, readAll(plain, DEFAULTS));
            assertEquals(3, readAll(plain, DEFAULTS.withBufferPoolBytes(1 << 20).withMaxTensorBytes(plain.length)));
        }
        assertEquals(1, NativeReader.decodersMade() - made, "one decoder for 60 readers of three pool caps");
        assertEquals(1, NativeReader.IdleDecoders.count());
    }

    @Test
    void readersOfAnyLimitsShareOneDecoderOneAfterAnother() throws IOException {
        byte[] plain = stream(2, false);
        byte[] checked = stream(2, true);
        long made = NativeReader.decodersMade();
        for (int i = 0; i < 40; i++) {
            // Per-record limits as the Kafka deserializer sets them, and the defaults in between.
            assertEquals(2, readAll(plain, DEFAULTS.withMaxTensorBytes(plain.length + i)
                    .withMaxDescriptorBytes(plain.length)));
            assertEquals(2, readAll(plain, DEFAULTS));
            assertEquals(2, readAll(checked, DEFAULTS.withRequirePayloadChecksums(true)));
        }
        assertEquals(1, NativeReader.decodersMade() - made, "one decoder for 120 readers of three kinds of limits");
        assertEquals(1, NativeReader.IdleDecoders.count());
    }

    @Test
    void smallLimitsHoldOnADecoderLastUsedWithLargeOnesAndTheDefaultsComeBack() throws IOException {
        byte[] plain = stream(3, false);
        ReaderOptions tight = DEFAULTS.withMaxTensorBytes(4L * ELEMENTS - 1);
        // What a new decoder with the tight limit says.
        Status fresh = refusal(plain, tight);
        assertEquals(Status.LIMIT_EXCEEDED, fresh);
        NativeReader.IdleDecoders.destroyAll();

        long made = NativeReader.decodersMade();
        // Twice with the defaults: the decoder keeps the repeated descriptor (checked once).
        assertEquals(3, readAll(plain, DEFAULTS));
        assertEquals(3, readAll(plain, DEFAULTS));
        assertEquals(fresh, refusal(plain, tight));
        assertEquals(Status.LIMIT_EXCEEDED, refusal(plain, DEFAULTS.withMaxDescriptorBytes(8)));
        assertEquals(Status.LIMIT_EXCEEDED, refusal(plain, DEFAULTS.withMaxRank(0)));
        // A defaults reader after small-limits readers accepts the tensors again.
        assertEquals(3, readAll(plain, DEFAULTS));
        assertEquals(3, readAll(plain, DEFAULTS.withMaxTensorBytes(4L * ELEMENTS)));
        assertEquals(fresh, refusal(plain, tight));
        assertEquals(1, NativeReader.decodersMade() - made, "the refused and accepting readers shared one decoder");
    }

    @Test
    void requiredPayloadChecksumsHoldOnAReusedDecoderAndDoNotOutliveTheirReader() throws IOException {
        byte[] plain = stream(1, false);
        byte[] checked = stream(1, true);
        ReaderOptions require = DEFAULTS.withRequirePayloadChecksums(true);
        long made = NativeReader.decodersMade();
        assertEquals(1, readAll(plain, DEFAULTS));
        assertEquals(Status.CORRUPT, refusal(plain, require));
        assertEquals(1, readAll(checked, require));
        assertEquals(1, readAll(plain, DEFAULTS));
        assertEquals(Status.CORRUPT, refusal(plain, require));
        assertEquals(1, readAll(plain, DEFAULTS.withMaxTensorBytes(1 << 20)));
        assertEquals(1, NativeReader.decodersMade() - made);
    }

    @Test
    void optionsTheLibraryRefusesLeaveTheIdleDecoderUsable() throws IOException {
        byte[] plain = stream(1, false);
        assertEquals(1, readAll(plain, DEFAULTS));
        long made = NativeReader.decodersMade();
        HurrayException e = assertThrows(HurrayException.class, () -> Reader.of(plain, DEFAULTS.withMaxRank(33)));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        e = assertThrows(HurrayException.class, () -> Reader.of(plain, DEFAULTS.withMaxDescriptorBytes(1L << 40)));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertEquals(1, NativeReader.IdleDecoders.count(), "the decoder went back idle, with its own limits");
        assertEquals(1, readAll(plain, DEFAULTS));
        assertEquals(Status.LIMIT_EXCEEDED, refusal(plain, DEFAULTS.withMaxTensorBytes(8)));
        assertEquals(0, NativeReader.decodersMade() - made);
    }

    @Test
    void readersOpenAtOnceGetTheirOwnDecodersAndAtMostSixteenWaitAfterwards() throws IOException {
        byte[] plain = stream(1, false);
        Reader[] open = new Reader[20];
        long made = NativeReader.decodersMade();
        for (int i = 0; i < open.length; i++) {
            open[i] = Reader.of(plain, i % 2 == 0 ? DEFAULTS : DEFAULTS.withMaxTensorBytes(4L * ELEMENTS + i));
        }
        assertEquals(open.length, NativeReader.decodersMade() - made);
        for (Reader r : open) {
            try (r; Tensor t = r.read()) {
                assertArrayEquals(new float[] {0, 1, 2}, java.util.Arrays.copyOf(t.toFloatArray(), 3));
                assertNull(r.read());
            }
        }
        assertEquals(NativeReader.IdleDecoders.MAX_IDLE, NativeReader.IdleDecoders.count());
    }

    /**
     * A reader closed as its last use (try-with-resources) becomes unreachable inside close():
     * the leak cleaner must not destroy the decoder close() is handing to the next reader.
     * Before the fix, readers closed in a loop while the collector ran often found their decoder
     * destroyed (USE_AFTER_DESTROY from hurray_decoder_set_options or _next: a freed native
     * object used). A race, so this runs readers on four threads for a few seconds with
     * collections in between; without the fix it failed within a second or two.
     */
    @Test
    void aClosingReadersCleanerNeverDestroysTheDecoderItHandsOn() throws Exception {
        byte[] plain = stream(1, false);
        ReaderOptions small = DEFAULTS.withMaxTensorBytes(4L * ELEMENTS);
        long end = System.nanoTime() + 4_000_000_000L;
        java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicLong readers = new java.util.concurrent.atomic.AtomicLong();
        Thread gc = Thread.ofPlatform().daemon().start(() -> {
            while (System.nanoTime() < end && failure.get() == null) {
                System.gc();
            }
        });
        Thread[] threads = new Thread[4];
        for (int i = 0; i < threads.length; i++) {
            threads[i] = Thread.ofPlatform().start(() -> {
                for (int k = 0; System.nanoTime() < end && failure.get() == null; k++) {
                    try {
                        assertEquals(1, readAll(plain, k % 2 == 0 ? small : DEFAULTS));
                        readers.incrementAndGet();
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                }
            });
        }
        for (Thread t : threads) {
            t.join();
        }
        gc.join();
        if (failure.get() != null) {
            throw new AssertionError("after " + readers.get() + " readers", failure.get());
        }
    }
}
