package dev.hurray;

import dev.hurray.ffm.hurray_h;
import dev.hurray.internal.NativeBuffers;
import dev.hurray.internal.Releases;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A tensor context ({@code HurrayTensorContext*}; docs/spec/c-abi.md "Tensor context"): a copy
 * of an encoded descriptor, the producer's C ABI version, and an opaque owner kept alive for the
 * context's lifetime. With an {@link ExternalBufferList} it says what a list's bytes are when a
 * tensor crosses to native code.
 *
 * <h2>Ownership</h2>
 * The owner is released <b>exactly once</b>, when the native context is destroyed: by
 * {@link #close()}, or by native code that took the pointer with {@link #release()} and called
 * {@code hurray_tensor_context_destroy}. For {@link #of(Tensor)} the owner is a
 * {@link TensorShare}: the tensor cannot be closed while the context lives. The release runs on
 * the destroying thread (a process-wide upcall stub; a native thread's first upcall attaches it
 * to the JVM, see {@link ExternalBuffer}); what it throws is caught in the upcall, logged, and rethrown from
 * {@link #close()} when a Java thread destroyed it.
 *
 * <h2>Consumers</h2>
 * Read {@link #abiVersion()} first and compare it with {@link #ABI_VERSION} before reading the
 * descriptor (docs/spec/c-abi.md §Tensor context). {@link #adopt(MemorySegment)} takes
 * ownership of a context native code made.
 *
 * <h2>Threads</h2>
 * Accessors may run on any thread while the context is open; do not race them with
 * {@link #close()}. Closing twice (or racing closes) destroys once.
 */
public final class TensorContext implements AutoCloseable {
    /** The C ABI version this library was built against ({@code HURRAY_C_ABI_VERSION}). */
    public static final int ABI_VERSION = hurray_h.HURRAY_C_ABI_VERSION();

    private final MemorySegment ctx;
    private final AtomicBoolean closed = new AtomicBoolean();

    private TensorContext(MemorySegment ctx) {
        this.ctx = ctx;
    }

    /**
     * A context for {@code tensor}: its encoded descriptor, {@link #ABI_VERSION}, and a
     * {@link Tensor#share()} as the owner (closed when the context is destroyed).
     *
     * @throws IllegalStateException if the tensor is closed
     */
    public static TensorContext of(Tensor tensor) throws HurrayException {
        TensorShare share = tensor.share();
        try {
            return of(ABI_VERSION, tensor.descriptor().encode(), share::close);
        } catch (HurrayException | RuntimeException | Error e) {
            share.close();
            throw e;
        }
    }

    /**
     * A context of {@code descriptor} whose owner is released by {@code ownerRelease}.
     *
     * @param ownerRelease run exactly once when the context is destroyed, or null
     */
    public static TensorContext of(TensorDescriptor descriptor, Runnable ownerRelease) throws HurrayException {
        return of(ABI_VERSION, descriptor.encode(), ownerRelease);
    }

    /**
     * A context from raw parts ({@code hurray_tensor_context_new}).
     *
     * @param abiVersion the producer's ABI version (not 0)
     * @param encodedDescriptor the encoded descriptor (validated natively), or empty
     * @param ownerRelease run exactly once when the context is destroyed (never if this throws), or null
     * @throws HurrayException {@code INVALID_ARGUMENT} for version 0, or the descriptor's decoding error
     */
    public static TensorContext of(int abiVersion, byte[] encodedDescriptor, Runnable ownerRelease) throws HurrayException {
        Objects.requireNonNull(encodedDescriptor, "encodedDescriptor");
        long key = ownerRelease == null ? 0 : Releases.register(ownerRelease);
        try {
            return new TensorContext(NativeBuffers.contextNew(abiVersion, encodedDescriptor, key));
        } catch (HurrayException | RuntimeException | Error e) {
            Releases.forget(key);
            throw e;
        }
    }

    /**
     * Takes ownership of a context native code made ({@code HurrayTensorContext*}); closing the
     * returned object destroys it (and releases its owner, with native code's release function).
     *
     * @throws IllegalArgumentException for a NULL pointer
     */
    public static TensorContext adopt(MemorySegment nativeContext) {
        Objects.requireNonNull(nativeContext, "nativeContext");
        if (nativeContext.equals(MemorySegment.NULL)) {
            throw new IllegalArgumentException("NULL tensor context");
        }
        return new TensorContext(nativeContext);
    }

    /** The producer's ABI version; read it first. @throws IllegalStateException if closed */
    public int abiVersion() {
        requireOpen();
        try {
            return NativeBuffers.contextAbiVersion(ctx);
        } catch (HurrayException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** A copy of the encoded descriptor (empty if the context carries none). @throws IllegalStateException if closed */
    public byte[] descriptorBytes() {
        requireOpen();
        try {
            return NativeBuffers.contextDescriptor(ctx);
        } catch (HurrayException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /**
     * The descriptor, decoded.
     *
     * @throws HurrayException {@code VERSION_MISMATCH} if the producer's ABI version is newer than
     *     {@link #ABI_VERSION}, or {@code NOT_FOUND} if the context carries no descriptor
     * @throws IllegalStateException if closed
     */
    public TensorDescriptor descriptor() throws HurrayException {
        int v = abiVersion();
        if (v > ABI_VERSION) {
            throw new HurrayException(Status.VERSION_MISMATCH, "the producer's C ABI version " + v
                    + " is newer than this library's " + ABI_VERSION, null);
        }
        byte[] b = descriptorBytes();
        if (b.length == 0) {
            throw new HurrayException(Status.NOT_FOUND, "the tensor context carries no descriptor", null);
        }
        return TensorDescriptor.decode(b);
    }

    /** The borrowed {@code HurrayTensorContext*} to pass to native code; valid until closed. */
    public MemorySegment nativeHandle() {
        requireOpen();
        return ctx;
    }

    /**
     * Hands the native context to native code, which must destroy it
     * ({@code hurray_tensor_context_destroy}, releasing the owner there). This object is closed
     * without destroying it.
     *
     * @throws IllegalStateException if closed
     */
    public MemorySegment release() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException("the tensor context is closed");
        }
        return ctx;
    }

    /** True until closed or released. */
    public boolean isOpen() {
        return !closed.get();
    }

    /** Destroys the context, releasing the owner once (its failure is rethrown here). Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            NativeBuffers.contextDestroy(ctx);
        }
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException("the tensor context is closed");
        }
    }
}
