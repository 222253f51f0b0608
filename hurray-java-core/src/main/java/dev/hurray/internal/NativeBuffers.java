package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.ffm.HurraySyncPayload;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Downcalls over the C ABI's external buffers, buffer lists and tensor contexts
 * ({@code hurray_buffer_from_ptr}, {@code hurray_buffer_handoff}, {@code hurray_buffer_clone},
 * {@code hurray_buffer_list_*}, {@code hurray_tensor_context_*}; docs/spec/c-abi.md "Buffers
 * and buffer lists", "Tensor context", "Buffer handoff and sync modes").
 *
 * <p>Calls that can run a release upcall (buffer, list and context destroy) take their out
 * and in-out slots from a confined arena of their own, never a scratch area, since the release
 * action is arbitrary Java code that may run for as long as it likes. The others borrow one
 * from {@link ScratchPool} around their downcalls. The release
 * upcall's failure, if any, is rethrown after the downcall returns
 * ({@link Releases#rethrowFailure()}).
 */
public final class NativeBuffers {
    private NativeBuffers() {
    }

    /** {@code hurray_buffer_from_ptr}; the release context is {@code releaseKey} (0 = no release). */
    public static MemorySegment fromPtr(MemorySegment data, long byteSize, int alignment, int deviceTag, long releaseKey)
            throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            int rc = hurray_h.hurray_buffer_from_ptr(data, byteSize, alignment, (byte) deviceTag,
                    releaseKey == 0 ? MemorySegment.NULL : Releases.BUFFER_RELEASE, Releases.keyPointer(releaseKey), out);
            Native.check(rc);
            return out.get(ADDRESS, 0);
        }
    }

    /**
     * {@code hurray_buffer_handoff} with the 16-byte binary handle {@code handle} and an
     * optional payload (null sends a NULL payload pointer).
     */
    public static MemorySegment handoff(byte[] handle, MemorySegment data, Payload sync, long releaseKey)
            throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment hb = a.allocate(handle.length);
            MemorySegment.copy(handle, 0, hb, JAVA_BYTE, 0, handle.length);
            MemorySegment p = MemorySegment.NULL;
            if (sync != null) {
                p = HurraySyncPayload.allocate(a);
                HurraySyncPayload.sync_handle(p, sync.syncHandle);
                HurraySyncPayload.sync_handle_device_tag(p, (byte) sync.syncHandleDeviceTag);
                HurraySyncPayload.consumer_stream(p, sync.consumerStream);
                HurraySyncPayload.consumer_stream_device_tag(p, (byte) sync.consumerStreamDeviceTag);
                HurraySyncPayload.event_release_fn(p, sync.eventReleaseFn);
                HurraySyncPayload.event_release_context(p, sync.eventReleaseContext);
            }
            MemorySegment out = a.allocate(ADDRESS);
            int rc = hurray_h.hurray_buffer_handoff(hb, data, p,
                    releaseKey == 0 ? MemorySegment.NULL : Releases.BUFFER_RELEASE, Releases.keyPointer(releaseKey), out);
            Native.check(rc);
            return out.get(ADDRESS, 0);
        }
    }

    /** The raw fields of a {@code HurraySyncPayload}. */
    public record Payload(MemorySegment syncHandle, int syncHandleDeviceTag, MemorySegment consumerStream,
            int consumerStreamDeviceTag, MemorySegment eventReleaseFn, MemorySegment eventReleaseContext) {
    }

    /** {@code hurray_buffer_sync_payload}. */
    public static Payload syncPayload(MemorySegment buffer) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = HurraySyncPayload.allocate(a);
            Native.check(hurray_h.hurray_buffer_sync_payload(buffer, p));
            return new Payload(HurraySyncPayload.sync_handle(p), HurraySyncPayload.sync_handle_device_tag(p) & 0xFF,
                    HurraySyncPayload.consumer_stream(p), HurraySyncPayload.consumer_stream_device_tag(p) & 0xFF,
                    HurraySyncPayload.event_release_fn(p), HurraySyncPayload.event_release_context(p));
        }
    }

    /** {@code hurray_buffer_clone}. */
    public static MemorySegment clone(MemorySegment buffer) throws HurrayException {
        return ScratchPool.outAddress(s -> hurray_h.hurray_buffer_clone(buffer, s));
    }

    /**
     * {@code hurray_buffer_destroy}; may run the release upcall on this thread, whose failure it
     * rethrows.
     */
    public static void destroy(MemorySegment buffer) {
        destroyReleasing(buffer, hurray_h::hurray_buffer_destroy, "hurray_buffer_destroy");
    }

    /** {@code hurray_buffer_data_ptr}, {@code _byte_size}, {@code _alignment}, {@code _device_tag}, {@code _sync_mode}. */
    public static long[] info(MemorySegment buffer) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            long[] out = new long[5];
            Native.check(hurray_h.hurray_buffer_data_ptr(buffer, s));
            out[0] = s.get(ADDRESS, 0).address();
            Native.check(hurray_h.hurray_buffer_byte_size(buffer, s));
            out[1] = s.get(JAVA_LONG, 0);
            Native.check(hurray_h.hurray_buffer_alignment(buffer, s));
            out[2] = s.get(JAVA_INT, 0) & 0xFFFFFFFFL;
            Native.check(hurray_h.hurray_buffer_device_tag(buffer, s));
            out[3] = s.get(JAVA_BYTE, 0) & 0xFF;
            Native.check(hurray_h.hurray_buffer_sync_mode(buffer, s));
            out[4] = s.get(JAVA_BYTE, 0) & 0xFF;
            return out;
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /** {@code hurray_buffer_list_create}. */
    public static MemorySegment listCreate() throws HurrayException {
        return ScratchPool.outAddress(hurray_h::hurray_buffer_list_create);
    }

    /** {@code hurray_buffer_list_push} (ownership of {@code buffer} moves to the list on success). */
    public static void listPush(MemorySegment list, MemorySegment buffer) throws HurrayException {
        Native.check(hurray_h.hurray_buffer_list_push(list, buffer));
    }

    /** {@code hurray_buffer_list_destroy}: releases every buffer it owns; rethrows a release failure. */
    public static void listDestroy(MemorySegment list) {
        destroyReleasing(list, hurray_h::hurray_buffer_list_destroy, "hurray_buffer_list_destroy");
    }

    /** {@code hurray_tensor_context_new}; the owner is {@code ownerKey} (0 = none). */
    public static MemorySegment contextNew(int abiVersion, byte[] descriptor, long ownerKey) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bytes = descriptor.length == 0 ? MemorySegment.NULL : a.allocate(descriptor.length);
            if (descriptor.length > 0) {
                MemorySegment.copy(descriptor, 0, bytes, JAVA_BYTE, 0, descriptor.length);
            }
            MemorySegment out = a.allocate(ADDRESS);
            Native.check(hurray_h.hurray_tensor_context_new(abiVersion, bytes, descriptor.length,
                    Releases.keyPointer(ownerKey), ownerKey == 0 ? MemorySegment.NULL : Releases.OWNER_RELEASE, out));
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code hurray_tensor_context_abi_version}. */
    public static int contextAbiVersion(MemorySegment ctx) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            Native.check(hurray_h.hurray_tensor_context_abi_version(ctx, s));
            return s.get(JAVA_INT, 0);
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /** {@code hurray_tensor_context_descriptor}, copied (an empty array when the context has none). */
    public static byte[] contextDescriptor(MemorySegment ctx) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            Native.check(hurray_h.hurray_tensor_context_descriptor(ctx, s, s.asSlice(8)));
            MemorySegment p = s.get(ADDRESS, 0);
            long len = s.get(JAVA_LONG, 8);
            if (p.equals(MemorySegment.NULL) || len == 0) {
                return new byte[0];
            }
            return p.reinterpret(len).toArray(JAVA_BYTE);
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /** {@code hurray_tensor_context_destroy}: runs the owner release; rethrows its failure. */
    public static void contextDestroy(MemorySegment ctx) {
        destroyReleasing(ctx, hurray_h::hurray_tensor_context_destroy, "hurray_tensor_context_destroy");
    }

    /**
     * Calls a {@code hurray_*_destroy(T **)} that may run release upcalls on this thread: the
     * slot lives in its own arena (not a lent area: the upcall may run for as long as it
     * likes), a release failure is rethrown, and a failing status becomes an
     * {@link IllegalStateException}.
     */
    private static void destroyReleasing(MemorySegment h, java.util.function.ToIntFunction<MemorySegment> destroy,
            String name) {
        int rc;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment slot = a.allocate(ADDRESS);
            slot.set(ADDRESS, 0, h);
            Releases.enter();
            try {
                rc = destroy.applyAsInt(slot);
            } finally {
                Releases.exit();
            }
        }
        Releases.rethrowFailure();
        if (rc < 0) {
            throw new IllegalStateException(name + " failed: " + Native.error(rc, null).getMessage());
        }
    }
}
