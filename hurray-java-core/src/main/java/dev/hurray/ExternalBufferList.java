package dev.hurray;

import dev.hurray.internal.NativeBuffers;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A native buffer list ({@code HurrayBufferList*}; docs/spec/c-abi.md §Buffers and buffer lists)
 * built from {@link ExternalBuffer}s, for handing a tensor's memory to native code (with a
 * {@link TensorContext} that says what the bytes are). The list holds its own reference to each
 * buffer; {@link #close()} drops them, running each release action whose last reference that was.
 *
 * <p>Threads: any thread may close it (once; racing closes destroy it once). A list handed to
 * native code with {@link #release()} is destroyed there, and the release actions then run on
 * that code's thread.
 */
public final class ExternalBufferList implements AutoCloseable {
    private final MemorySegment list;
    private final int size;
    private final AtomicBoolean closed = new AtomicBoolean();

    private ExternalBufferList(MemorySegment list, int size) {
        this.list = list;
        this.size = size;
    }

    /**
     * A list of {@code buffers}, in order (element {@code i} is buffer {@code i} of the
     * descriptor's buffer table). The caller keeps its handles (close them as usual).
     *
     * @throws IllegalArgumentException above 64 buffers (the cause is the
     *     {@link HurrayException} with {@link Status#LIMIT_EXCEEDED})
     * @throws IllegalStateException if a handle is closed
     */
    public static ExternalBufferList of(ExternalBuffer... buffers) {
        try {
            return make(buffers);
        } catch (HurrayException e) {
            throw e.asCallerMistake();
        }
    }

    private static ExternalBufferList make(ExternalBuffer... buffers) throws HurrayException {
        MemorySegment list = NativeBuffers.listCreate();
        try {
            for (ExternalBuffer b : buffers) {
                ExternalBuffer ref = b.retain();
                MemorySegment h = ref.detach();
                try {
                    NativeBuffers.listPush(list, h);
                } catch (HurrayException | RuntimeException e) {
                    NativeBuffers.destroy(h);
                    throw e;
                }
            }
            return new ExternalBufferList(list, buffers.length);
        } catch (HurrayException | RuntimeException | Error e) {
            NativeBuffers.listDestroy(list);
            throw e;
        }
    }

    /** True until closed or released. */
    public boolean isOpen() {
        return !closed.get();
    }

    /** Number of buffers. */
    public int size() {
        return size;
    }

    /** The borrowed {@code HurrayBufferList*}, valid until this list is closed. @throws IllegalStateException if closed */
    public MemorySegment nativeHandle() {
        if (closed.get()) {
            throw new IllegalStateException("the buffer list is closed");
        }
        return list;
    }

    /**
     * Gives the native list to the caller's native code, which must destroy it
     * ({@code hurray_buffer_list_destroy}); this object is closed without destroying it.
     *
     * @throws IllegalStateException if closed
     */
    public MemorySegment release() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException("the buffer list is closed");
        }
        return list;
    }

    /** Destroys the list, dropping its references (see the class comment). Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            NativeBuffers.listDestroy(list);
        }
    }
}
