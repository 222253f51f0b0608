package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** TensorContext (docs/spec/c-abi.md "Tensor context"): descriptor, ABI version, owner released once. */
class TensorContextTest {

    @Test
    void fromATensorKeepsItAliveUntilDestroyed() throws Exception {
        Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
        TensorContext ctx = TensorContext.of(t);
        assertEquals(4, ctx.abiVersion());
        assertEquals(TensorContext.ABI_VERSION, ctx.abiVersion());
        assertEquals(t.descriptor(), ctx.descriptor());
        assertArrayEquals(t.descriptor().encode(), ctx.descriptorBytes());
        IllegalStateException e = assertThrows(IllegalStateException.class, t::close);
        assertTrue(e.getMessage().contains("shared"), e.getMessage());
        assertTrue(t.isOpen());
        ctx.close();
        ctx.close();
        t.close();
        assertFalse(t.isOpen());
        assertThrows(IllegalStateException.class, ctx::abiVersion);
        assertThrows(IllegalStateException.class, ctx::nativeHandle);
        assertThrows(IllegalStateException.class, () -> TensorContext.of(t));
    }

    @Test
    void ownerReleasedExactlyOnceOnANativeThread() throws Throwable {
        AtomicInteger owner = new AtomicInteger();
        AtomicReference<Thread> on = new AtomicReference<>();
        TensorContext ctx = TensorContext.of(TensorDescriptor.of(ElementType.INT8, 3), () -> {
            owner.incrementAndGet();
            on.set(Thread.currentThread());
        });
        MemorySegment raw = ctx.release();
        assertFalse(ctx.isOpen());
        ctx.close();
        assertEquals(0, owner.get());
        assertEquals(0, InteropNative.destroyOnNativeThread(
                InteropNative.hurrayFunction("hurray_tensor_context_destroy"), raw));
        assertEquals(1, owner.get());
        assertTrue(on.get() != Thread.currentThread());
    }

    @Test
    void adoptsAContextNativeCodeMade() throws Exception {
        byte[] desc = TensorDescriptor.of(ElementType.FLOAT64, 5).encode();
        MemorySegment made;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bytes = a.allocate(desc.length);
            bytes.copyFrom(MemorySegment.ofArray(desc));
            MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            assertEquals(0, hurray_h.hurray_tensor_context_new(3, bytes, desc.length, MemorySegment.NULL,
                    MemorySegment.NULL, out));
            made = out.get(ValueLayout.ADDRESS, 0);
        }
        try (TensorContext ctx = TensorContext.adopt(made)) {
            assertEquals(3, ctx.abiVersion());
            assertEquals(TensorDescriptor.of(ElementType.FLOAT64, 5), ctx.descriptor());
        }
        // a round trip through the raw pointer: released once, by the adopter
        AtomicInteger owner = new AtomicInteger();
        TensorContext ctx = TensorContext.of(TensorDescriptor.of(ElementType.INT32, 2), owner::incrementAndGet);
        try (TensorContext again = TensorContext.adopt(ctx.release())) {
            assertEquals(TensorDescriptor.of(ElementType.INT32, 2), again.descriptor());
        }
        assertEquals(1, owner.get());
        assertThrows(IllegalArgumentException.class, () -> TensorContext.adopt(MemorySegment.NULL));
    }

    @Test
    void emptyDescriptorsNewerVersionsAndBadArguments() throws Exception {
        try (TensorContext ctx = TensorContext.of(4, new byte[0], null)) {
            assertEquals(0, ctx.descriptorBytes().length);
            assertEquals(Status.NOT_FOUND, assertThrows(HurrayException.class, ctx::descriptor).status());
        }
        byte[] d = TensorDescriptor.of(ElementType.INT8, 1).encode();
        try (TensorContext ctx = TensorContext.of(99, d, null)) {
            assertEquals(99, ctx.abiVersion());
            assertEquals(Status.VERSION_MISMATCH, assertThrows(HurrayException.class, ctx::descriptor).status());
        }
        AtomicInteger owner = new AtomicInteger();
        assertEquals(Status.INVALID_ARGUMENT,
                assertThrows(HurrayException.class, () -> TensorContext.of(0, d, owner::incrementAndGet)).status());
        assertThrows(HurrayException.class, () -> TensorContext.of(4, new byte[] {1, 2, 3}, owner::incrementAndGet));
        assertEquals(0, owner.get(), "a failed create never releases the owner");
    }

    @Test
    void anExceptionInTheOwnerReleaseIsRethrownNotFatal() throws Throwable {
        TensorContext ctx = TensorContext.of(TensorDescriptor.of(ElementType.INT8, 1), () -> {
            throw new UnsupportedOperationException("owner release failed on purpose");
        });
        assertThrows(UnsupportedOperationException.class, ctx::close);
        assertFalse(ctx.isOpen());
        TensorContext onNative = TensorContext.of(TensorDescriptor.of(ElementType.INT8, 1), () -> {
            throw new UnsupportedOperationException("owner release failed on a native thread");
        });
        assertEquals(0, InteropNative.destroyOnNativeThread(
                InteropNative.hurrayFunction("hurray_tensor_context_destroy"), onNative.release()));
    }
}
