package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * A sink that fails once in the middle of a large payload the writer borrows from its caller:
 * afterwards no call of the writer touches that payload again, even after the caller freed it
 * (a flush used to send the poisoned encoder's pending output, which still pointed there).
 */
class WriterAfterSinkFailureTest {
    /** Takes {@code before} bytes, then throws what {@code failure} makes once, then takes everything. */
    private static OutputStream failingOnce(long before, Supplier<Throwable> failure) {
        return new OutputStream() {
            long taken;
            boolean failed;

            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                if (!failed && taken + len > before) {
                    failed = true;
                    Throwable t = failure.get();
                    if (t instanceof IOException e) {
                        throw e;
                    }
                    if (t instanceof RuntimeException e) {
                        throw e;
                    }
                    throw (Error) t;
                }
                taken += len;
            }
        };
    }

    private static void writeBorrowedThenFreeIt(Writer w, Class<? extends Throwable> thrown) {
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, 2 * 1024 * 1024); // 8 MiB, borrowed in place
        Arena caller = Arena.ofShared();
        MemorySegment payload = caller.allocate(d.buffers().get(0).byteSize(), 64);
        assertThrows(thrown, () -> w.write(d, payload));
        caller.close(); // the caller frees its memory after the failed write
    }

    @Test
    void afterAnIoFailureMidPayloadEveryCallSaysPoisonedAndCloseSucceeds() throws Exception {
        Writer w = Writer.of(failingOnce(100_000, () -> new IOException("link down")));
        writeBorrowedThenFreeIt(w, HurrayException.class);
        assertEquals(Status.POISONED, assertThrows(HurrayException.class, w::flush).status());
        assertEquals(Status.POISONED, assertThrows(HurrayException.class, w::finish).status());
        assertEquals(Status.POISONED, assertThrows(HurrayException.class,
                () -> w.write(TensorDescriptor.of(ElementType.FLOAT32, 4), MemorySegment.ofArray(new float[4]))).status());
        w.close();
    }

    @Test
    void afterAnErrorFromTheSinkMidPayloadNothingTouchesThePayloadAndCloseSucceeds() throws Exception {
        Writer w = Writer.of(failingOnce(100_000, () -> new InternalError("a fault in a mapped file")));
        writeBorrowedThenFreeIt(w, InternalError.class);
        assertEquals(Status.POISONED, assertThrows(HurrayException.class, w::flush).status());
        w.close();
    }

    @Test
    void anErrorBeforeAnyByteLeftTakesTheTensorBackAndTheWriterGoesOn() throws Exception {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        boolean[] failed = {false};
        OutputStream out = new OutputStream() {
            @Override
            public void write(int b) {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                if (!failed[0]) {
                    failed[0] = true;
                    throw new InternalError("first write refused");
                }
                bytes.write(b, off, len);
            }
        };
        Writer w = Writer.of(out);
        writeBorrowedThenFreeIt(w, InternalError.class);
        w.flush(); // nothing of the refused tensor is left to send
        w.write(TensorDescriptor.builder(ElementType.FLOAT32, 4).name("after").build(), MemorySegment.ofArray(new float[] {1, 2, 3, 4}));
        w.close();
        try (Reader r = Reader.of(bytes.toByteArray()); Tensor t = r.read()) {
            assertEquals("after", t.descriptor().name().orElseThrow());
        }
    }
}
