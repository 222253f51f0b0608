package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.function.Executable;

/** Shared helpers: deterministic tensors and sources/sinks that move one byte per call. */
final class TestSupport {
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper()
            .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_LONG_FOR_INTS)
            .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /**
     * A JSON document as plain values: objects as insertion-ordered maps, arrays as lists,
     * integers as {@code Long}, other numbers as {@code Double} (the golden-vector manifest).
     */
    static Object json(String text) {
        try {
            return JSON.readValue(text, Object.class);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage(), e);
        }
    }

    /**
     * The native refusal behind {@code build()}'s {@link IllegalArgumentException}: a field the
     * format refuses is a caller mistake, unchecked, with the {@link HurrayException} as cause.
     */
    static HurrayException refusedBuild(Executable build) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build);
        return assertInstanceOf(HurrayException.class, e.getCause(), e.toString());
    }

    private TestSupport() {
    }

    /** Dimensions for rank {@code rank} with few elements: cycles 2,3,1. */
    static long[] smallDims(int rank) {
        long[] d = new long[rank];
        for (int i = 0; i < rank; i++) {
            d[i] = new long[] {2, 3, 1}[i % 3];
        }
        return d;
    }

    /** Deterministic bytes for buffer contents. */
    static byte[] bytes(long seed, long n) {
        byte[] b = new byte[Math.toIntExact(n)];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    /** A tensor of {@code descriptor} whose buffers hold deterministic bytes derived from {@code seed}. */
    static Tensor filled(TensorDescriptor descriptor, long seed) {
        MemorySegment[] contents = new MemorySegment[descriptor.buffers().size()];
        for (int i = 0; i < contents.length; i++) {
            contents[i] = MemorySegment.ofArray(bytes(seed * 131 + i, descriptor.buffers().get(i).byteSize()));
        }
        return Tensor.copyOf(descriptor, contents);
    }

    /**
     * Descriptors covering every element type with ranks 0–8, plus shapes with zero-size
     * dimensions (at the front, middle and end).
     */
    static List<TensorDescriptor> everyTypeAndRank() {
        List<TensorDescriptor> out = new ArrayList<>();
        for (ElementType t : ElementType.values()) {
            for (int rank = 0; rank <= 8; rank++) {
                out.add(TensorDescriptor.of(t, smallDims(rank)));
            }
            out.add(TensorDescriptor.of(t, 0));
            out.add(TensorDescriptor.of(t, 3, 0, 5));
            out.add(TensorDescriptor.of(t, 4, 7, 0));
        }
        return out;
    }

    /** Asserts equal descriptors and byte-identical buffers. */
    static void assertSameTensor(Tensor expected, Tensor actual) {
        assertEquals(expected.descriptor(), actual.descriptor());
        assertEquals(expected.buffers().size(), actual.buffers().size());
        for (int i = 0; i < expected.buffers().size(); i++) {
            MemorySegment e = expected.buffer(i);
            MemorySegment a = actual.buffer(i);
            assertEquals(e.byteSize(), a.byteSize(), "buffer " + i + " size");
            assertEquals(-1, e.mismatch(a), "buffer " + i + " contents of " + expected.descriptor());
            BufferSpec spec = actual.descriptor().buffers().get(i);
            assertTrue(a.address() % spec.alignment() == 0, "buffer " + i + " alignment");
        }
    }

    /** An input stream that returns at most one byte per read. */
    static InputStream oneByteAtATime(InputStream in) {
        return new FilterInputStream(in) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return super.read(b, off, Math.min(len, 1));
            }
        };
    }

    /** An output stream that passes bytes on one write call per byte. */
    static OutputStream oneByteAtATime(OutputStream out) {
        return new FilterOutputStream(out) {
            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                for (int i = 0; i < len; i++) {
                    out.write(b[off + i]);
                }
            }
        };
    }

    /** One read of a channel, as a test replaces it. */
    @FunctionalInterface
    interface ChannelRead {
        int read(ByteBuffer dst) throws IOException;
    }

    /** {@code ch} read through {@code read}; whether it is open, and closing it, stay {@code ch}'s. */
    static ReadableByteChannel readingThrough(ReadableByteChannel ch, ChannelRead read) {
        return new ReadableByteChannel() {
            @Override
            public int read(ByteBuffer dst) throws IOException {
                return read.read(dst);
            }

            @Override
            public boolean isOpen() {
                return ch.isOpen();
            }

            @Override
            public void close() throws IOException {
                ch.close();
            }
        };
    }

    /** A readable channel that moves at most one byte per read. */
    static ReadableByteChannel oneByteAtATime(ReadableByteChannel ch) {
        return readingThrough(ch, dst -> {
            if (!dst.hasRemaining()) {
                return 0;
            }
            ByteBuffer one = dst.slice(dst.position(), 1);
            int n = ch.read(one);
            if (n > 0) {
                dst.position(dst.position() + n);
            }
            return n;
        });
    }

    /** A writable channel that takes at most one byte per write. */
    static WritableByteChannel oneByteAtATime(WritableByteChannel ch) {
        return new WritableByteChannel() {
            @Override
            public int write(ByteBuffer src) throws IOException {
                if (!src.hasRemaining()) {
                    return 0;
                }
                ByteBuffer one = src.slice(src.position(), 1);
                int n = ch.write(one);
                src.position(src.position() + n);
                return n;
            }

            @Override
            public boolean isOpen() {
                return ch.isOpen();
            }

            @Override
            public void close() throws IOException {
                ch.close();
            }
        };
    }

    /** Writes {@code tensors} to memory and returns the stream bytes. */
    static byte[] stream(List<Tensor> tensors, WriterOptions options) throws IOException {
        try (Writer w = Writer.toMemory(options)) {
            for (Tensor t : tensors) {
                w.write(t);
            }
            w.finish();
            return w.toByteArray();
        }
    }
}
