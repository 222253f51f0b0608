package dev.hurray.internal;

import dev.hurray.HurrayException;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.TensorScope;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Makes {@link Tensor}s over native memory: a tensor read from a stream, a container or a
 * decoder takes ownership of the native tensor; a composite member is a borrowed view; an
 * external buffer or a DLPack import adopts memory someone else releases.
 *
 * <p>The tensor's constructor and the descriptor's native form are not public API, so they are
 * reached through {@link Access}, which {@code Tensor} installs once when its class is
 * initialized (the pattern of the JDK's shared secrets).
 */
public final class TensorAdopters {

    /** What the adopters need of {@code Tensor} and {@code TensorDescriptor}; implemented by {@code Tensor}. */
    public interface Access {
        /** A tensor that owns {@code nativeTensor} and is registered with the leak cleaner. */
        Tensor tracked(TensorDescriptor descriptor, MemorySegment[] buffers, Arena arena, MemorySegment nativeTensor,
                MemorySegment nativeDescriptor, TensorScope scope, Runnable onClose);

        /** A tensor whose native tensor (at address {@code nativeTensor}) {@code arena}'s close releases ({@link TensorLedger}). */
        Tensor ledgered(TensorDescriptor descriptor, MemorySegment[] buffers, Arena arena, long nativeTensor,
                TensorScope scope);

        /** A tensor that owns no native tensor: closing it closes {@code arena}, then runs {@code onClose} (or null). */
        Tensor view(TensorDescriptor descriptor, MemorySegment[] buffers, Arena arena, MemorySegment nativeDescriptor,
                TensorScope scope, Runnable onClose);

        /** The tensor's own buffer segments (not a copy). */
        MemorySegment[] buffers(Tensor tensor);

        /** {@code TensorDescriptor.fromNative(fields, twin, plain)}. */
        TensorDescriptor descriptor(DescriptorFields fields, NativeDescriptor twin, boolean plain);

        /** {@code TensorDescriptor.fromNative(fields, twin)}. */
        TensorDescriptor descriptor(DescriptorFields fields, NativeDescriptor twin);

        /** True if {@code descriptor} was read with exactly these encoded bytes. */
        boolean hasEncoding(TensorDescriptor descriptor, MemorySegment encodedView);

        /** The descriptor's fields (shared, never changed). */
        DescriptorFields fields(TensorDescriptor descriptor);
    }

    private static volatile Access installed;

    /** Called once, by {@code Tensor}'s static initializer. */
    public static void install(Access access) {
        if (installed != null) {
            throw new IllegalStateException("already installed");
        }
        installed = access;
    }

    /** The installed access, constant once loaded (the holder idiom). */
    private static final class Holder {
        static final Access ACCESS = load();

        private static Access load() {
            try {
                // Initializing Tensor installs its Access; another thread initializing it is waited for.
                Class.forName(Tensor.class.getName(), true, Tensor.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new AssertionError(e);
            }
            Access a = installed;
            if (a == null) {
                throw new AssertionError("Tensor did not install its access");
            }
            return a;
        }
    }

    private TensorAdopters() {
    }

    /**
     * Takes ownership of a native tensor read from a stream. On failure the native tensor is
     * destroyed.
     *
     * @param previous the descriptor of the reader's previous tensor, or null: when the new
     *     tensor's encoded descriptor is byte-identical (a stream of same-shaped tensors), that
     *     immutable descriptor is shared instead of being read again field by field
     */
    public static Tensor fromNative(MemorySegment tensor, TensorScope scope, TensorDescriptor previous) throws HurrayException {
        return fromNative(tensor, scope, previous, false, null);
    }

    /**
     * As {@link #fromNative(MemorySegment, TensorScope, TensorDescriptor)}, for a tensor read
     * from a container ({@code HurrayFile}).
     *
     * @param readOnly expose the buffers as read-only segments (they may point into a
     *     read-only memory map, where a write would crash the process)
     * @param onClose run once after the native tensor is destroyed (also when this method
     *     fails), or null
     */
    public static Tensor fromNative(MemorySegment tensor, TensorScope scope, TensorDescriptor previous,
            boolean readOnly, Runnable onClose) throws HurrayException {
        Access access = Holder.ACCESS;
        Arena arena = scope == TensorScope.SHARED ? Arena.ofShared() : Arena.ofConfined();
        MemorySegment s = ScratchPool.borrow(); // one lent area for every out-parameter below
        try {
            MemorySegment d = NativeTensor.descriptor(tensor, s);
            TensorDescriptor desc = descriptor(d, previous, s);
            MemorySegment[] bufs = NativeTensor.buffers(tensor, desc.buffers(), arena, s);
            ScratchPool.giveBack(s);
            s = null;
            if (readOnly) {
                for (int i = 0; i < bufs.length; i++) {
                    bufs[i] = bufs[i].asReadOnly();
                }
            }
            return access.tracked(desc, bufs, arena, tensor, d, scope, onClose);
        } catch (HurrayException | RuntimeException | Error e) {
            if (s != null) {
                ScratchPool.giveBack(s);
            }
            arena.close();
            NativeTensor.destroy(tensor);
            if (onClose != null) {
                onClose.run();
            }
            throw e;
        }
    }

    /**
     * The Java descriptor of live native descriptor {@code d} (a tensor's or a container
     * entry's), with a lazily decoded twin holding a copy of its encoding: {@code previous}
     * itself when its encoding is byte-identical (nothing else is read), else its fields read
     * with one {@code hurray_descriptor_fields} call and the entry accessors, all in one area
     * lent by {@link ScratchPool}.
     *
     * @param previous a descriptor to share when it has the same encoding, or null
     */
    public static TensorDescriptor descriptor(MemorySegment d, TensorDescriptor previous) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            return descriptor(d, previous, s);
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /** As {@link #descriptor(MemorySegment, TensorDescriptor)}, in the caller's lent {@code area}. */
    private static TensorDescriptor descriptor(MemorySegment d, TensorDescriptor previous, MemorySegment area)
            throws HurrayException {
        Access access = Holder.ACCESS;
        MemorySegment fields = NativeDescriptor.fields(d, area);
        MemorySegment encoded = NativeDescriptor.encodedView(d, fields);
        if (previous != null && access.hasEncoding(previous, encoded)) {
            return previous;
        }
        DescriptorFields f = NativeDescriptor.read(d, fields, area);
        return access.descriptor(f, NativeDescriptor.copyOf(encoded));
    }

    /**
     * Takes ownership of the tensor a reader's decoder just returned: its descriptor, fields
     * and buffer pointers come with the result, so this makes no downcall. On failure the
     * native tensor is destroyed.
     *
     * @param previous the descriptor of the reader's previous tensor, or null: shared when the
     *     new tensor's encoded descriptor is byte-identical
     */
    public static Tensor fromDecoded(NativeReader reader, TensorScope scope, TensorDescriptor previous, TensorLedger ledger)
            throws HurrayException {
        Arena arena = scope == TensorScope.SHARED ? Arena.ofShared() : Arena.ofConfined();
        return fromDecoded(reader, arena, scope, previous, ledger, reader.payloadBytes());
    }

    /**
     * As {@link #fromDecoded}, for a small {@link TensorScope#SHARED} tensor whose segments live
     * in {@code batch}'s shared arena (the caller checked {@link SharedBatch#fits}): closing the
     * tensor ends the tensor (its accessors throw) and the memory is freed once every tensor of
     * the batch is closed and the decoder has let go of it.
     */
    public static Tensor fromDecodedShared(NativeReader reader, SharedBatch batch, long payloadBytes,
            TensorDescriptor previous, TensorLedger ledger) throws HurrayException {
        return fromDecoded(reader, batch.member(payloadBytes), TensorScope.SHARED, previous, ledger, payloadBytes);
    }

    private static Tensor fromDecoded(NativeReader reader, Arena arena, TensorScope scope, TensorDescriptor previous,
            TensorLedger ledger, long payloadBytes) throws HurrayException {
        Access access = Holder.ACCESS;
        long tensor = reader.tensorAddress();
        MemorySegment[] bufs;
        try {
            bufs = reader.buffers(arena, ledger.add(tensor, payloadBytes));
        } catch (RuntimeException | Error e) {
            arena.close();
            NativeTensor.destroy(MemorySegment.ofAddress(tensor));
            throw e;
        }
        try {
            TensorDescriptor desc;
            if (reader.descriptorVersion() == 1) {
                // Version 1: the fields say everything, so no copy of the encoding is kept.
                DescriptorFields f = reader.readFields();
                desc = previous != null && access.fields(previous) == f ? previous : access.descriptor(f, null, true);
            } else {
                MemorySegment encoded = reader.encodedView();
                if (previous != null && access.hasEncoding(previous, encoded)) {
                    desc = previous;
                    reader.remember(access.fields(previous));
                } else {
                    desc = access.descriptor(reader.readFields(), NativeDescriptor.copyOf(encoded));
                }
            }
            return access.ledgered(desc, bufs, arena, tensor, scope);
        } catch (HurrayException | RuntimeException | Error e) {
            arena.close(); // releases the native tensor through the ledger
            throw e;
        }
    }

    /**
     * A view of a tensor borrowed from a native composite: its buffers are mapped into a new
     * arena; closing the view closes that arena and destroys nothing (the composite owns the
     * memory and closes its views before freeing it).
     */
    public static Tensor fromBorrowed(MemorySegment tensor, TensorScope scope) throws HurrayException {
        Access access = Holder.ACCESS;
        Arena arena = scope == TensorScope.SHARED ? Arena.ofShared() : Arena.ofConfined();
        try {
            MemorySegment d = NativeTensor.descriptor(tensor);
            TensorDescriptor desc = descriptor(d, null);
            MemorySegment[] bufs = NativeTensor.buffers(tensor, desc.buffers(), arena);
            return access.view(desc, bufs, arena, d, scope, null);
        } catch (HurrayException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * A tensor over memory released by {@code onClose}: {@code raw[i]} (global-scope segments
     * of at least buffer {@code i}'s size and aligned for it, as {@link Tensor#wrap} checks) are
     * reinterpreted onto a new arena of {@code scope}, so that the views die when the tensor
     * closes, before {@code onClose} runs (exactly once, on the closing thread). If this method
     * throws, {@code onClose} has not run and the caller cleans up.
     */
    public static Tensor adoptViews(TensorDescriptor descriptor, MemorySegment[] raw, TensorScope scope, Runnable onClose) {
        Access access = Holder.ACCESS;
        Tensor checked = Tensor.wrap(descriptor, raw);
        MemorySegment[] wrapped = access.buffers(checked);
        Arena arena = scope == TensorScope.SHARED ? Arena.ofShared() : Arena.ofConfined();
        MemorySegment[] views = new MemorySegment[raw.length];
        for (int i = 0; i < raw.length; i++) {
            MemorySegment b = wrapped[i];
            views[i] = MemorySegment.ofAddress(b.address()).reinterpret(b.byteSize(), arena, null);
            if (b.isReadOnly()) {
                views[i] = views[i].asReadOnly();
            }
        }
        return access.view(descriptor, views, arena, null, scope, onClose);
    }
}
