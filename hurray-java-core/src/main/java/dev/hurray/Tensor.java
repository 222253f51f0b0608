package dev.hurray;

import dev.hurray.internal.DescriptorFields;
import dev.hurray.internal.Leaks;
import dev.hurray.internal.NativeDescriptor;
import dev.hurray.internal.NativeLayouts;
import dev.hurray.internal.NativeTensor;
import dev.hurray.internal.PayloadPool;
import dev.hurray.internal.TensorAdopters;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A tensor: a {@link TensorDescriptor} plus the buffers it describes, as native
 * {@link MemorySegment}s, in one object so that bytes never travel without their description
 * (docs/spec/c-abi.md §Reading and writing a stream).
 *
 * <h2>Lifetime</h2>
 * A tensor owns one arena for its buffer segments. {@link #close()} closes that arena first, so
 * every segment obtained from {@link #buffers()} becomes inaccessible (touching it throws
 * {@link IllegalStateException}, never crashes), and then frees the memory: for a tensor read
 * from a stream, the native tensor ({@code hurray_tensor_destroy}); for one made by
 * {@link #allocate}/{@code of}/{@link #copyOf}, the arena's own memory. A small tensor made by
 * {@link #copyOf} or {@code of(array)} makes that arena only when its buffers are first asked
 * for, so one that is only written and closed costs no arena at all. Closing twice is a
 * no-op. A tensor read from a {@link Reader} stays valid after the reader is closed. A small
 * {@link TensorScope#SHARED} tensor from a {@link TensorDecoder} shares its arena with its batch
 * (see there): after its close its accessors throw, but segments taken before stay valid until
 * the batch is freed.
 * {@link #wrap} tensors borrow the caller's segments: their memory belongs to the caller's
 * arena, and closing the tensor only ends the tensor's view ({@link #buffers()} then throws).
 * The descriptor stays usable after close. A tensor read from a {@link HurrayFile} owns its
 * memory like a stream tensor; one read from {@link HurrayFile#map} has <em>read-only</em>
 * buffers that may point into the file's memory map, which stays mapped until the tensor (and
 * the file) are closed.
 *
 * <h2>Threads</h2>
 * The {@link TensorScope} decides which threads may touch the buffers and close the tensor:
 * {@link TensorScope#CONFINED} (the default) limits both to the thread that read or made it
 * (others get {@link WrongThreadException}, and a close attempt from another thread leaves the
 * tensor open); {@link TensorScope#SHARED} allows any thread. A tensor that a {@link Writer} is
 * writing cannot be closed until the write returns ({@link IllegalStateException}).
 *
 * <h2>Units and byte order</h2>
 * Buffer sizes are bytes; shapes and element counts are elements. Element values are
 * little-endian, as the format stores them; the typed copies ({@link #toFloatArray()} …)
 * convert to Java values and read the elements of buffer 0 from {@link
 * TensorDescriptor#byteOffset()} on in row-major order.
 */
public final class Tensor implements AutoCloseable {
    private static final int CLOSED = -1;
    private static final int CLOSING = -2;

    private final TensorDescriptor descriptor;
    /** The buffer segments; null until first asked for on a pooled tensor ({@link #segments()}). */
    private volatile MemorySegment[] buffers;
    /** The segments' arena (null for {@link #wrap}, and for a pooled tensor until its segments are made). */
    private volatile Arena arena;
    /**
     * A pooled tensor ({@link #copyOf} and {@code of(array)} with small buffers): the
     * {@link PayloadPool} blocks it owns, or null for every other tensor. Making an arena per
     * tensor costs more than the rest of a small write, so a pooled tensor makes its arena and
     * segments only when something asks for them ({@link #segments()}); a writer reads the
     * blocks by address while the tensor is pinned ({@link #writeBuffers()}).
     */
    private final long[] pooled;
    /** Global-scope views of {@link #pooled}, never handed out: for filling and for pinned writers. */
    private final MemorySegment[] unscoped;
    /** The thread a pooled tensor is confined to (its creator), or null. */
    private final Thread owner;
    private final MemorySegment nativeTensor;
    private final MemorySegment nativeDescriptor;
    private final TensorScope scope;
    /** Runs once after the memory is released (a mapped file's reference count), or null. */
    private final Runnable onClose;
    /** CLOSED, CLOSING, or the number of writes in progress (0 = open and idle). */
    private final AtomicInteger state = new AtomicInteger();
    /** Frees the native tensor (and runs onClose) on close, or from the cleaner if leaked; null for Java-owned memory. */
    private Leaks.Resource resource;
    /** The arena's close releases the native tensor (a reader's tensor, {@link dev.hurray.internal.TensorLedger}). */
    private boolean ledgered;
    /** A ledgered tensor's native tensor, by address (no segment is made for it unless asked, {@link #nativeDescriptor()}); else 0. */
    private long ledgeredTensor;

    static {
        TensorAdopters.install(new Adopting());
    }

    private Tensor(TensorDescriptor descriptor, MemorySegment[] buffers, Arena arena,
            MemorySegment nativeTensor, MemorySegment nativeDescriptor, TensorScope scope) {
        this(descriptor, buffers, arena, nativeTensor, nativeDescriptor, scope, null);
    }

    private Tensor(TensorDescriptor descriptor, MemorySegment[] buffers, Arena arena,
            MemorySegment nativeTensor, MemorySegment nativeDescriptor, TensorScope scope, Runnable onClose) {
        this.descriptor = descriptor;
        this.buffers = buffers;
        this.arena = arena;
        this.nativeTensor = nativeTensor;
        this.nativeDescriptor = nativeDescriptor;
        this.scope = scope;
        this.onClose = onClose;
        this.pooled = null;
        this.unscoped = null;
        this.owner = null;
    }

    /** A pooled CONFINED tensor over {@code blocks}, owned by the calling thread. */
    private Tensor(TensorDescriptor descriptor, long[] blocks, MemorySegment[] unscoped) {
        this.descriptor = descriptor;
        this.nativeTensor = null;
        this.nativeDescriptor = null;
        this.scope = TensorScope.CONFINED;
        this.onClose = null;
        this.pooled = blocks;
        this.unscoped = unscoped;
        this.owner = Thread.currentThread();
    }

    /**
     * A pooled tensor for {@code descriptor}, whose buffers' bytes are unspecified, or null when
     * the pool does not serve every buffer (the caller then allocates from an arena).
     */
    private static Tensor pooled(TensorDescriptor descriptor) {
        List<BufferSpec> specs = descriptor.buffers();
        int n = specs.size();
        long[] blocks = new long[n];
        MemorySegment[] views = new MemorySegment[n];
        for (int i = 0; i < n; i++) {
            BufferSpec b = specs.get(i);
            long block = PayloadPool.block(b.byteSize(), b.alignment());
            if (block == 0) {
                for (int j = 0; j < i; j++) {
                    PayloadPool.giveBack(blocks[j], specs.get(j).byteSize());
                }
                return null;
            }
            blocks[i] = block;
            views[i] = MemorySegment.ofAddress(block).reinterpret(b.byteSize());
        }
        return new Tensor(descriptor, blocks, views);
    }

    /** The buffer segments, made first for a pooled tensor (see {@link #materialize()}). */
    private MemorySegment[] segments() {
        MemorySegment[] b = buffers;
        return b != null ? b : materialize();
    }

    /**
     * Makes a pooled tensor's arena and segments: a confined arena on the owner thread, as
     * {@link #allocate} would have made. Another thread may only get them while the tensor is
     * pinned (a writer, a {@link TensorShare}), which keeps it from being closed; it gets a
     * shared arena, so that its segments fail after close like any other. Unpinned, another
     * thread gets the {@link WrongThreadException} that touching a confined segment throws.
     */
    private synchronized MemorySegment[] materialize() {
        MemorySegment[] b = buffers;
        if (b != null) {
            return b;
        }
        int s = state.get();
        if (s < 0) {
            throw new IllegalStateException("the tensor is closed");
        }
        boolean mine = Thread.currentThread() == owner;
        if (!mine && s == 0) {
            throw new WrongThreadException("the tensor is confined to thread " + owner.getName()
                    + " (TensorScope.CONFINED)");
        }
        Arena a = mine ? Arena.ofConfined() : Arena.ofShared();
        b = new MemorySegment[pooled.length];
        for (int i = 0; i < b.length; i++) {
            b[i] = PayloadPool.scoped(a, pooled[i], unscoped[i].byteSize());
        }
        arena = a;
        buffers = b;
        return b;
    }

    /**
     * {@link TensorAdopters#fromNative(MemorySegment, TensorScope, TensorDescriptor, boolean, Runnable)},
     * for {@link HurrayFile}.
     */
    static Tensor fromNative(MemorySegment tensor, TensorScope scope, TensorDescriptor previous) throws HurrayException {
        return TensorAdopters.fromNative(tensor, scope, previous);
    }

    /** As {@link #fromNative(MemorySegment, TensorScope, TensorDescriptor)}, read-only and with an action after close. */
    static Tensor fromNative(MemorySegment tensor, TensorScope scope, TensorDescriptor previous,
            boolean readOnly, Runnable onClose) throws HurrayException {
        return TensorAdopters.fromNative(tensor, scope, previous, readOnly, onClose);
    }

    /** The constructor and the descriptor's native form, for the adopters in {@code internal}. */
    private static final class Adopting implements TensorAdopters.Access {
        @Override
        public Tensor tracked(TensorDescriptor descriptor, MemorySegment[] buffers, Arena arena, MemorySegment nativeTensor,
                MemorySegment nativeDescriptor, TensorScope scope, Runnable onClose) {
            return new Tensor(descriptor, buffers, arena, nativeTensor, nativeDescriptor, scope, onClose).tracked();
        }

        @Override
        public Tensor ledgered(TensorDescriptor descriptor, MemorySegment[] buffers, Arena arena, long nativeTensor,
                TensorScope scope) {
            return new Tensor(descriptor, buffers, arena, null, null, scope).ledgered(nativeTensor);
        }

        @Override
        public Tensor view(TensorDescriptor descriptor, MemorySegment[] buffers, Arena arena, MemorySegment nativeDescriptor,
                TensorScope scope, Runnable onClose) {
            return new Tensor(descriptor, buffers, arena, null, nativeDescriptor, scope, onClose);
        }

        @Override
        public MemorySegment[] buffers(Tensor tensor) {
            return tensor.segments();
        }

        @Override
        public TensorDescriptor descriptor(DescriptorFields fields, NativeDescriptor twin, boolean plain) {
            return TensorDescriptor.fromNative(fields, twin, plain);
        }

        @Override
        public TensorDescriptor descriptor(DescriptorFields fields, NativeDescriptor twin) {
            return TensorDescriptor.fromNative(fields, twin);
        }

        @Override
        public boolean hasEncoding(TensorDescriptor descriptor, MemorySegment encodedView) {
            return descriptor.hasEncoding(encodedView);
        }

        @Override
        public DescriptorFields fields(TensorDescriptor descriptor) {
            return descriptor.fields();
        }
    }

    /**
     * Marks a tensor whose native memory its arena's release action gives back (see {@link dev.hurray.internal.TensorLedger}),
     * the native tensor at address {@code nativeTensor}.
     */
    private Tensor ledgered(long nativeTensor) {
        ledgered = true;
        ledgeredTensor = nativeTensor;
        return this;
    }

    /**
     * Registers the native tensor with the leak cleaner. The cleaner watches the scope of the
     * buffer segments (not this object), so memory is freed only once neither the tensor nor
     * any segment taken from it is reachable.
     */
    private Tensor tracked() {
        MemorySegment t = nativeTensor;
        Runnable after = onClose;
        MemorySegment.Scope watched = arena.scope();
        resource = Leaks.track(watched, "Tensor", () -> {
            NativeTensor.destroy(t);
            if (after != null) {
                after.run();
            }
        });
        return this;
    }

    // ---------------------------------------------------------------- factories

    /**
     * A tensor with fresh native buffers for {@code descriptor}: one allocation per buffer-table
     * entry, of its byte size, at its declared alignment, zero-filled; confined to the calling
     * thread.
     *
     * @throws IllegalArgumentException if a buffer's device tag is not {@link DeviceTag#CPU}
     *     (Java allocates host memory only)
     */
    public static Tensor allocate(TensorDescriptor descriptor) {
        return allocate(descriptor, TensorScope.CONFINED);
    }

    /**
     * As {@link #allocate(TensorDescriptor)}, with the given thread scope.
     *
     * @throws IllegalArgumentException if a buffer's device tag is not {@link DeviceTag#CPU}
     */
    public static Tensor allocate(TensorDescriptor descriptor, TensorScope scope) {
        return allocate(descriptor, scope, false);
    }

    /**
     * As {@link #allocate(TensorDescriptor, TensorScope)}; with {@code filledNow}, the caller
     * overwrites every byte of every buffer before the tensor is returned, so small buffers come
     * from {@link PayloadPool} uncleared.
     */
    private static Tensor allocate(TensorDescriptor descriptor, TensorScope scope, boolean filledNow) {
        Objects.requireNonNull(descriptor, "descriptor");
        Objects.requireNonNull(scope, "scope");
        for (BufferSpec b : descriptor.buffers()) {
            if (b.deviceTag() != DeviceTag.CPU) {
                throw new IllegalArgumentException("Tensor.allocate makes host memory; buffer device tag is " + b.deviceTag());
            }
        }
        if (filledNow && scope == TensorScope.CONFINED) {
            Tensor t = pooled(descriptor);
            if (t != null) {
                return t;
            }
        }
        Arena arena = scope == TensorScope.SHARED ? Arena.ofShared() : Arena.ofConfined();
        try {
            MemorySegment[] bufs = new MemorySegment[descriptor.buffers().size()];
            for (int i = 0; i < bufs.length; i++) {
                BufferSpec b = descriptor.buffers().get(i);
                bufs[i] = filledNow ? PayloadPool.filledLater(arena, b.byteSize(), b.alignment())
                        : arena.allocate(b.byteSize(), b.alignment());
            }
            return new Tensor(descriptor, bufs, arena, null, null, scope);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * A tensor of fresh buffers holding copies of {@code contents}: buffer {@code i} is
     * allocated as {@link #allocate} does and filled from {@code contents[i]} (a native or heap
     * segment of exactly the buffer's byte size). Works for every element type and buffer
     * table (packed 4-bit, complex, per-channel quantization with its scale and bias buffers).
     *
     * @throws IllegalArgumentException if the count or a size differs from the buffer table
     */
    public static Tensor copyOf(TensorDescriptor descriptor, MemorySegment... contents) {
        if (contents.length != descriptor.buffers().size()) {
            throw new IllegalArgumentException(contents.length + " contents for a descriptor with "
                    + descriptor.buffers().size() + " buffers");
        }
        for (int i = 0; i < contents.length; i++) {
            long want = descriptor.buffers().get(i).byteSize();
            if (contents[i].byteSize() != want) {
                throw new IllegalArgumentException("contents[" + i + "] has " + contents[i].byteSize()
                        + " bytes, buffer " + i + " declares " + want);
            }
        }
        Tensor t = allocate(descriptor, TensorScope.CONFINED, true);
        try {
            for (int i = 0; i < contents.length; i++) {
                dev.hurray.internal.Native.copy(contents[i], 0, t.fillTarget(i), 0, contents[i].byteSize());
            }
        } catch (RuntimeException | Error e) {
            // A closed or foreign-thread source: the new tensor (and its pooled blocks) go back.
            t.close();
            throw e;
        }
        return t;
    }

    /**
     * A float32 tensor holding a copy of {@code data} in row-major order.
     *
     * @param data the elements, row-major
     * @param shape dimensions in elements; none means one dimension of {@code data.length}
     * @throws IllegalArgumentException if the shape's element count differs from {@code data.length}
     */
    public static Tensor of(float[] data, long... shape) {
        return of((String) null, data, shape);
    }

    /**
     * A named float32 tensor holding a copy of {@code data} in row-major order: the short form
     * of {@code TensorDescriptor.builder(FLOAT32, shape).name(name).build()} plus one copy of the
     * array, and as cheap to write (the descriptor is a plain Java value).
     *
     * @param name the tensor's name (UTF-8 without NUL, at most 4096 bytes), or null for none
     * @param data the elements, row-major
     * @param shape dimensions in elements; none means one dimension of {@code data.length}
     * @throws IllegalArgumentException if the shape's element count differs from
     *     {@code data.length}, or for a name the format refuses
     */
    public static Tensor of(String name, float[] data, long... shape) {
        Tensor t = dense(ElementType.FLOAT32, name, data.length, shape);
        MemorySegment.copy(data, 0, t.fillTarget(0), le(ValueLayout.JAVA_FLOAT), 0, data.length);
        return t;
    }

    /** A float64 tensor holding a copy of {@code data}; see {@link #of(float[], long...)}. */
    public static Tensor of(double[] data, long... shape) {
        return of((String) null, data, shape);
    }

    /** A named float64 tensor holding a copy of {@code data}; see {@link #of(String, float[], long...)}. */
    public static Tensor of(String name, double[] data, long... shape) {
        Tensor t = dense(ElementType.FLOAT64, name, data.length, shape);
        MemorySegment.copy(data, 0, t.fillTarget(0), le(ValueLayout.JAVA_DOUBLE), 0, data.length);
        return t;
    }

    /** An int32 tensor holding a copy of {@code data}; see {@link #of(float[], long...)}. */
    public static Tensor of(int[] data, long... shape) {
        return of(ElementType.INT32, data, shape);
    }

    /** An int64 tensor holding a copy of {@code data}; see {@link #of(float[], long...)}. */
    public static Tensor of(long[] data, long... shape) {
        return of(ElementType.INT64, data, shape);
    }

    /** An int16 tensor holding a copy of {@code data}; see {@link #of(float[], long...)}. */
    public static Tensor of(short[] data, long... shape) {
        return of(ElementType.INT16, data, shape);
    }

    /** An int8 tensor holding a copy of {@code data}; see {@link #of(float[], long...)}. */
    public static Tensor of(byte[] data, long... shape) {
        return of(ElementType.INT8, data, shape);
    }

    /** A named int32 tensor holding a copy of {@code data}; see {@link #of(String, float[], long...)}. */
    public static Tensor of(String name, int[] data, long... shape) {
        return copied(ElementType.INT32, name, data, shape);
    }

    /** A named int64 tensor holding a copy of {@code data}; see {@link #of(String, float[], long...)}. */
    public static Tensor of(String name, long[] data, long... shape) {
        return copied(ElementType.INT64, name, data, shape);
    }

    /** A named int16 tensor holding a copy of {@code data}; see {@link #of(String, float[], long...)}. */
    public static Tensor of(String name, short[] data, long... shape) {
        return copied(ElementType.INT16, name, data, shape);
    }

    /** A named int8 tensor holding a copy of {@code data}; see {@link #of(String, float[], long...)}. */
    public static Tensor of(String name, byte[] data, long... shape) {
        return copied(ElementType.INT8, name, data, shape);
    }

    /**
     * A tensor of a one-byte element type ({@code bool}, {@code int8}, {@code uint8}, the FP8
     * types) holding a copy of {@code data}.
     *
     * @throws IllegalArgumentException for another element type or a count mismatch
     */
    public static Tensor of(ElementType type, byte[] data, long... shape) {
        requireWidth(type, 8);
        return copied(type, null, data, shape);
    }

    private static Tensor copied(ElementType type, String name, byte[] data, long[] shape) {
        Tensor t = dense(type, name, data.length, shape);
        MemorySegment.copy(data, 0, t.fillTarget(0), ValueLayout.JAVA_BYTE, 0, data.length);
        return t;
    }

    /**
     * A tensor of a two-byte element type ({@code int16}, {@code uint16}, {@code float16},
     * {@code bfloat16}: the raw bits) holding a copy of {@code data}.
     *
     * @throws IllegalArgumentException for another element type or a count mismatch
     */
    public static Tensor of(ElementType type, short[] data, long... shape) {
        requireWidth(type, 16);
        return copied(type, null, data, shape);
    }

    private static Tensor copied(ElementType type, String name, short[] data, long[] shape) {
        Tensor t = dense(type, name, data.length, shape);
        MemorySegment.copy(data, 0, t.fillTarget(0), le(ValueLayout.JAVA_SHORT), 0, data.length);
        return t;
    }

    /**
     * A tensor of {@code int32} or {@code uint32} holding a copy of {@code data} (the raw bits).
     *
     * @throws IllegalArgumentException for another element type or a count mismatch
     */
    public static Tensor of(ElementType type, int[] data, long... shape) {
        requireType(type, ElementType.INT32, ElementType.UINT32);
        return copied(type, null, data, shape);
    }

    private static Tensor copied(ElementType type, String name, int[] data, long[] shape) {
        Tensor t = dense(type, name, data.length, shape);
        MemorySegment.copy(data, 0, t.fillTarget(0), le(ValueLayout.JAVA_INT), 0, data.length);
        return t;
    }

    /**
     * A tensor of {@code int64} or {@code uint64} holding a copy of {@code data} (the raw bits).
     *
     * @throws IllegalArgumentException for another element type or a count mismatch
     */
    public static Tensor of(ElementType type, long[] data, long... shape) {
        requireType(type, ElementType.INT64, ElementType.UINT64);
        return copied(type, null, data, shape);
    }

    private static Tensor copied(ElementType type, String name, long[] data, long[] shape) {
        Tensor t = dense(type, name, data.length, shape);
        MemorySegment.copy(data, 0, t.fillTarget(0), le(ValueLayout.JAVA_LONG), 0, data.length);
        return t;
    }

    /**
     * A tensor over the caller's memory, without copying: {@code segment} becomes buffer 0 of a
     * single-buffer {@code descriptor}. The tensor borrows the segment: its memory stays the
     * caller's (freed when the caller's arena closes), and it must stay alive and unchanged while
     * the tensor is used. Closing the tensor ends only its view.
     *
     * @param segment native memory of at least the buffer's byte size (a longer segment is
     *     sliced), whose address is a multiple of the buffer's declared alignment
     * @param descriptor a descriptor with exactly one buffer
     * @throws IllegalArgumentException for a heap segment (native code cannot be handed a
     *     pointer into the Java heap), a segment too small, a misaligned address, or a
     *     descriptor with more than one buffer
     * @throws IllegalStateException if the segment's scope is already closed
     */
    public static Tensor wrap(MemorySegment segment, TensorDescriptor descriptor) {
        if (descriptor.buffers().size() != 1) {
            throw new IllegalArgumentException("wrap(segment, descriptor) needs a descriptor with one buffer, this one has "
                    + descriptor.buffers().size() + "; use wrap(descriptor, segments...)");
        }
        return wrap(descriptor, segment);
    }

    /**
     * A tensor over the caller's memory, one segment per buffer-table entry, without copying;
     * the rules of {@link #wrap(MemorySegment, TensorDescriptor)} apply to each segment.
     *
     * @throws IllegalArgumentException as for {@link #wrap(MemorySegment, TensorDescriptor)}, or
     *     if the segment count differs from the buffer count
     */
    public static Tensor wrap(TensorDescriptor descriptor, MemorySegment... segments) {
        Objects.requireNonNull(descriptor, "descriptor");
        if (segments.length != descriptor.buffers().size()) {
            throw new IllegalArgumentException(segments.length + " segments for a descriptor with "
                    + descriptor.buffers().size() + " buffers");
        }
        MemorySegment[] bufs = new MemorySegment[segments.length];
        for (int i = 0; i < segments.length; i++) {
            MemorySegment s = segments[i];
            BufferSpec b = descriptor.buffers().get(i);
            if (!s.isNative()) {
                throw new IllegalArgumentException("buffer " + i + " is a heap segment; native code needs native memory "
                        + "(use Tensor.of/copyOf to copy it, or allocate the segment from an Arena)");
            }
            if (!s.scope().isAlive()) {
                throw new IllegalStateException("buffer " + i + ": the segment's arena is closed");
            }
            if (s.byteSize() < b.byteSize()) {
                throw new IllegalArgumentException("buffer " + i + " has " + s.byteSize() + " bytes, the descriptor declares "
                        + b.byteSize());
            }
            if (s.address() % b.alignment() != 0) {
                throw new IllegalArgumentException(String.format(
                        "buffer %d at address 0x%x is not aligned to the %d bytes its descriptor declares "
                                + "(allocate it with arena.allocate(size, %d), or use Tensor.copyOf)",
                        i, s.address(), b.alignment(), b.alignment()));
            }
            bufs[i] = s.asSlice(0, b.byteSize());
        }
        // The segments keep the caller's scope (and thread rules); SHARED only says that this
        // tensor adds no confinement of its own.
        return new Tensor(descriptor, bufs, null, null, null, TensorScope.SHARED);
    }

    private static Tensor dense(ElementType type, String name, int length, long[] shape) {
        Shape s = shape.length == 0 ? Shape.of(length) : Shape.of(shape);
        if (s.elementCount() != length) {
            throw new IllegalArgumentException("shape " + s + " has " + s.elementCount() + " elements, the data "
                    + length);
        }
        return allocate(name == null ? TensorDescriptor.of(type, s) : TensorDescriptor.builder(type, s).name(name).build(),
                TensorScope.CONFINED, true);
    }

    private static void requireWidth(ElementType type, int bits) {
        if (type.bitWidth() != bits) {
            throw new IllegalArgumentException(type + " is not a " + bits + "-bit element type");
        }
    }

    private static void requireType(ElementType type, ElementType a, ElementType b) {
        if (type != a && type != b) {
            throw new IllegalArgumentException("expected " + a + " or " + b + ", got " + type);
        }
    }

    /** {@code layout} in little-endian order, the format's. */
    static <L extends ValueLayout> L le(L layout) {
        @SuppressWarnings("unchecked")
        L l = (L) layout.withOrder(ByteOrder.LITTLE_ENDIAN);
        return l;
    }

    // ---------------------------------------------------------------- accessors

    /** The descriptor; usable after close. */
    public TensorDescriptor descriptor() {
        return descriptor;
    }

    /** The thread scope of the buffers. */
    public TensorScope scope() {
        return scope;
    }

    /** True until {@link #close()} succeeded. */
    public boolean isOpen() {
        return state.get() >= 0;
    }

    /**
     * The buffers, in buffer-table order, as a new view whose segments are borrowed from this
     * tensor (valid until it is closed).
     *
     * @throws IllegalStateException if the tensor is closed
     */
    public BufferList buffers() {
        requireOpen();
        return new BufferList(this, segments());
    }

    /**
     * Buffer {@code index} (0 holds the elements) as a segment of exactly its byte size, valid
     * until the tensor is closed.
     *
     * @throws IllegalStateException if the tensor is closed
     * @throws IndexOutOfBoundsException for a bad index
     */
    public MemorySegment buffer(int index) {
        requireOpen();
        return segments()[index];
    }

    /**
     * The values as float32, row-major: see {@link #toIntArray()} for the rule every typed copy
     * follows. A plain float32 tensor is copied bit for bit; every other type (integers,
     * float16, bfloat16, float64, the FP8/FP6/FP4 and E8M0 types, every quantization kind) is
     * converted by the native core, with the values of {@link #dequantize()}.
     *
     * @throws IllegalStateException for a complex type, a layout other than row-major, more
     *     elements than a Java array holds, or after close
     */
    public float[] toFloatArray() {
        return TensorConversions.toFloatArray(this);
    }

    /**
     * A new float32 tensor of the same shape and layout kind (row- or column-major) holding the
     * dequantized elements, computed by the native core (docs/spec/descriptor.md
     * §Dequantization): exact for float16, bfloat16 and the minifloats; affine kinds in float64
     * rounded once; block kinds (NF4, MX, NVFP4, per-group, GGUF) in float32.
     *
     * <p>Ownership: the caller owns and closes the result; this tensor stays open. Threads: as
     * for reading this tensor's buffers.
     *
     * @throws HurrayException with the native status: {@link Status#UNSUPPORTED} (complex
     *     types, strided layouts), {@link Status#INVALID_ARGUMENT} (an E8M0 scale 0xFF, i.e. NaN),
     *     {@link Status#BUFFER_TOO_SMALL}; {@link Status#LIMIT_EXCEEDED} for a sparse or paged
     *     tensor whose dense result is over {@link #DEFAULT_MAX_DENSE_BYTES} (checked before
     *     anything is allocated: call {@link #densify(long)} or {@link #gather(long)} first to
     *     go over it)
     * @throws IllegalStateException after close
     */
    public Tensor dequantize() throws HurrayException {
        return TensorConversions.dequantize(this);
    }

    /**
     * A new tensor of {@code target} with the same shape and layout kind (row- or column-major)
     * holding the dequantized elements, computed by the native core (docs/spec/descriptor.md
     * §Dequantization; C {@code hurray_dequantize_to}). Each value is first computed wide
     * (affine kinds: {@code q × scale + bias} in float64; plain and cast tensors: the stored value
     * as float64; block kinds: their float32 result) and then rounded once: to nearest, ties to
     * even, for {@code float16}, {@code bfloat16}, {@code float32} and {@code float64}; for the 8-,
     * 16-, 32- and 64-bit integer types, halves towards +∞ and the result wrapped modulo
     * 2^bits, NaN and infinities giving 0. This is TensorFlow.js's own arithmetic for its
     * uint8/uint16-quantized weights, bit for bit. A plain integer tensor converted to an
     * integer type is exact (its integer value wrapped modulo 2^bits), so a plain {@code int64}
     * tensor's {@code dequantize(dequantizedType())} is a copy. With {@code FLOAT32} the values
     * equal {@link #dequantize()}'s.
     *
     * <p>Ownership: the caller owns and closes the result; this tensor stays open. Threads: as
     * for reading this tensor's buffers; the call runs on the calling thread.
     *
     * @param target the element type to write, usually {@link #dequantizedType()}
     * @throws HurrayException with the native status: {@link Status#UNSUPPORTED} for a target
     *     other than the ones above (bool, int4, uint4, complex, the FP8/FP6/FP4/E8M0 types), a
     *     complex source or a strided layout; {@link Status#INVALID_ARGUMENT} (an E8M0 scale 0xFF,
     *     i.e. NaN); {@link Status#BUFFER_TOO_SMALL}; {@link Status#LIMIT_EXCEEDED} as for
     *     {@link #dequantize()}
     * @throws IllegalStateException after close
     */
    public Tensor dequantize(ElementType target) throws HurrayException {
        return TensorConversions.dequantize(this, target);
    }

    /**
     * The element type this tensor's values have once dequantized: the quantization's
     * {@link Quantization#dequantized()}, or the element type itself when it is not quantized.
     * Usable after close (it reads only the immutable descriptor).
     */
    public ElementType dequantizedType() {
        return descriptor.quantization().map(Quantization::dequantized).orElse(descriptor.elementType());
    }

    /**
     * This float32 row-major tensor cast to the floating-point type {@code target} (float16,
     * bfloat16, an FP8, FP6 or FP4 type; float32 copies), each value rounded to the nearest
     * representable one, ties to even, by the native core (docs/spec/descriptor.md
     * §Low-precision element formats); what {@code quantize(target, null)} computes. The usual
     * use: {@code t.cast(ElementType.BFLOAT16)}.
     *
     * <p>Ownership: the caller owns and closes the result; this tensor stays open.
     *
     * @throws IllegalArgumentException for a target the core cannot cast float32 to (an integer
     *     or complex type, float64); the {@link HurrayException} is the cause
     * @throws IllegalStateException if this tensor is not plain float32 row-major, or after close
     */
    public Tensor cast(ElementType target) {
        return TensorConversions.cast(this, target);
    }

    /**
     * Quantizes this float32 row-major tensor into a new tensor of {@code storedType} with
     * {@code quantization} (or a plain float type when {@code quantization} is null), computed
     * by the native core: MX per OCP v1.0 §6.3, NF4 as the nearest level of {@code v / absmax},
     * NVFP4, per-group affine, GGUF Q8_0/Q4_0, symmetric int8 {@link Quantization.PerChannelAffine},
     * or round-to-nearest-even casts (docs/spec/descriptor.md §Quantization).
     *
     * <p>Ownership: the caller owns and closes the result; this tensor stays open.
     *
     * @throws HurrayException with the native status: {@link Status#INVALID_TYPE} (stored type
     *     not allowed for the kind), {@link Status#INVALID_ARGUMENT} (axis ≥ rank, block not
     *     dividing the axis, non-finite input), {@link Status#UNSUPPORTED}
     * @throws IllegalStateException if this tensor is not plain float32 row-major, or after close
     */
    public Tensor quantize(ElementType storedType, Quantization quantization) throws HurrayException {
        return TensorConversions.quantize(this, storedType, quantization);
    }

    /**
     * The values as float64, row-major: see {@link #toIntArray()} for the rule. A plain float64
     * tensor is copied bit for bit; every other type is converted by the native core as
     * {@link #dequantize(ElementType) dequantize(FLOAT64)} does (exactly, for every plain type).
     *
     * @throws IllegalStateException for a complex type, a layout other than row-major, more
     *     elements than a Java array holds, or after close
     */
    public double[] toDoubleArray() {
        return TensorConversions.toDoubleArray(this);
    }

    /**
     * The values as Java {@code int}s, row-major. The rule of every typed copy
     * ({@code toByteArray}, {@code toShortArray}, {@code toIntArray}, {@code toLongArray},
     * {@code toFloatArray}, {@code toDoubleArray}): it gives the tensor's values as that Java
     * type, whatever the element type. The element type of exactly that Java type, and the
     * types of the same width that Java has no type for (unsigned integers, {@code bool},
     * float16, bfloat16, the FP8 and E8M0 types: their bits, as Java reads an unsigned value),
     * are copied bit for bit when not quantized; every other tensor, quantized ones included, is converted
     * by the native core as {@link #dequantize(ElementType)} does to int8, int16, int32, int64,
     * float32 or float64 (integers: rounded once, halves towards +∞, wrapped modulo 2^bits; NaN
     * and infinities give 0). So an int8 tensor's {@code toIntArray()} is its values widened,
     * and a float32 tensor's is its values rounded.
     *
     * @throws IllegalStateException for a complex type, a layout other than row-major, more
     *     elements than a Java array holds, or after close
     */
    public int[] toIntArray() {
        return TensorConversions.toIntArray(this);
    }

    /**
     * The values as Java {@code long}s, row-major (int64 and uint64 bit for bit; every other
     * type converted: the rule of {@link #toIntArray()}).
     *
     * @throws IllegalStateException as for {@link #toIntArray()}
     */
    public long[] toLongArray() {
        return TensorConversions.toLongArray(this);
    }

    /**
     * The values as Java {@code short}s, row-major (int16, uint16, float16 and bfloat16 bit for
     * bit; every other type converted to int16: the rule of {@link #toIntArray()}).
     *
     * @throws IllegalStateException as for {@link #toIntArray()}
     */
    public short[] toShortArray() {
        return TensorConversions.toShortArray(this);
    }

    /**
     * The values as Java {@code byte}s, row-major (every one-byte type bit for bit: bool, int8,
     * uint8, the FP8 types and E8M0; every other type converted to int8: the rule of
     * {@link #toIntArray()}).
     *
     * @throws IllegalStateException as for {@link #toIntArray()}
     */
    public byte[] toByteArray() {
        return TensorConversions.toByteArray(this);
    }

    /**
     * The dense row-major form of a sparse tensor (COO, CSR, CSC or BSR) as a new tensor of the
     * same element type and shape, in confined host memory the caller owns and closes. Zeros
     * where nothing is stored; duplicates of a non-canonical tensor are summed (as scipy's
     * {@code toarray}). The indices are checked by the native library first.
     *
     * <p>Ownership: the result is independent of this tensor. Threads: as for any read of
     * this tensor.
     *
     * @throws IllegalStateException if this tensor is closed or its layout is not sparse
     * @throws HurrayException {@link Status#CORRUPT} for an index out of range or a bad indptr,
     *     {@link Status#UNSUPPORTED} for summing float16/bfloat16/fp8 duplicates,
     *     {@link Status#INVALID_ARGUMENT} for buffers in device memory,
     *     {@link Status#LIMIT_EXCEEDED} for a result over {@link #DEFAULT_MAX_DENSE_BYTES}
     *     (checked before anything is allocated; see {@link #densify(long)})
     */
    public Tensor densify() throws HurrayException {
        return densify(DEFAULT_MAX_DENSE_BYTES);
    }

    /**
     * The largest dense result {@link #densify()} and {@link #gather()} make without being
     * asked for more: 1 GiB. A sparse or paged tensor of a few hundred bytes can describe
     * terabytes of zeros or repeated pages, so the dense byte count (from the descriptor, before
     * anything is allocated) is checked against a limit; {@link #densify(long)} and
     * {@link #gather(long)} take another.
     */
    public static final long DEFAULT_MAX_DENSE_BYTES = 1L << 30;

    /**
     * As {@link #densify()}, refusing a result of more than {@code maxBytes} bytes before
     * allocating anything.
     *
     * @throws HurrayException {@link Status#LIMIT_EXCEEDED} when the dense form of the shape
     *     needs more than {@code maxBytes} (the message says how much and how to raise the
     *     limit), and the failures of {@link #densify()}
     * @throws IllegalArgumentException for a negative {@code maxBytes}
     */
    public Tensor densify(long maxBytes) throws HurrayException {
        return TensorConversions.densify(this, maxBytes);
    }

    /**
     * The contiguous row-major form of a block-paged tensor (pages gathered through the page
     * table) as a new tensor of the same element type and logical shape; see
     * {@link #densify()} for ownership.
     *
     * @throws IllegalStateException if this tensor is closed or its layout is not paged
     * @throws HurrayException {@link Status#CORRUPT} for a page-table entry past the page
     *     buffer, {@link Status#INVALID_ARGUMENT} for device memory, {@link Status#LIMIT_EXCEEDED}
     *     for a result over {@link #DEFAULT_MAX_DENSE_BYTES} (see {@link #gather(long)})
     */
    public Tensor gather() throws HurrayException {
        return gather(DEFAULT_MAX_DENSE_BYTES);
    }

    /**
     * As {@link #gather()}, refusing a result of more than {@code maxBytes} bytes before
     * allocating anything.
     *
     * @throws HurrayException {@link Status#LIMIT_EXCEEDED} when the contiguous form needs more
     *     than {@code maxBytes}, and the failures of {@link #gather()}
     * @throws IllegalArgumentException for a negative {@code maxBytes}
     */
    public Tensor gather(long maxBytes) throws HurrayException {
        return TensorConversions.gather(this, maxBytes);
    }

    /**
     * Checks what this tensor's descriptor cannot vouch for, with the native library's checks
     * ({@code hurray_layout_check_contents}): every sparse index and indptr entry, every
     * page-table entry. Nothing to check, and no error, for the other layouts. The readers and
     * the container writer apply the same checks; call this before moving a tensor built from
     * foreign bytes elsewhere without densifying it.
     *
     * @throws HurrayException {@link Status#CORRUPT} naming the first offending position,
     *     {@link Status#INVALID_ARGUMENT} for buffers in device memory
     * @throws IllegalStateException if this tensor is closed
     */
    public void checkContents() throws HurrayException {
        pin();
        try {
            NativeLayouts.checkContents(descriptor.nativeHandle(), writeBuffers());
        } finally {
            unpin();
        }
    }

    /** Throws {@link IllegalStateException} once this tensor is closed. */
    void requireOpen() {
        if (state.get() < 0) {
            throw new IllegalStateException("the tensor is closed");
        }
    }

    // ---------------------------------------------------------------- writer support

    /** Marks a write in progress so that {@link #close()} is refused until {@link #unpin()}. */
    void pin() {
        while (true) {
            int s = state.get();
            if (s < 0) {
                throw new IllegalStateException("the tensor is closed");
            }
            if (state.compareAndSet(s, s + 1)) {
                return;
            }
        }
    }

    void unpin() {
        state.decrementAndGet();
    }

    /** True for {@link #wrap} tensors, whose memory belongs to the caller's arena. */
    boolean borrowsMemory() {
        return pooled == null && arena == null;
    }

    /** The buffer segments, as {@link #buffer} returns them (made first for a pooled tensor). */
    MemorySegment[] rawBuffers() {
        return segments();
    }

    /**
     * The buffers for code that reads them by address while the tensor is pinned (a writer, a
     * native call): a pooled tensor's unscoped views, else its segments. Never hand these out.
     */
    MemorySegment[] writeBuffers() {
        return pooled != null ? unscoped : segments();
    }

    /** Buffer {@code i} for a factory filling it before the tensor is returned. */
    private MemorySegment fillTarget(int i) {
        return pooled != null ? unscoped[i] : buffers[i];
    }

    /**
     * The native descriptor to write this tensor with: its own (borrowed) one for a tensor read
     * from a stream or file, else null (the writer then uses the descriptor's cached handle).
     */
    MemorySegment nativeDescriptor() throws HurrayException {
        if (nativeDescriptor == null && nativeTensor != null) {
            return NativeTensor.descriptor(nativeTensor);
        }
        if (nativeDescriptor == null && ledgeredTensor != 0) {
            return NativeTensor.descriptor(MemorySegment.ofAddress(ledgeredTensor));
        }
        return nativeDescriptor;
    }

    // ---------------------------------------------------------------- interop
    // Zero-copy interop: rank-0 factories, java.nio views, the keep-alive share, and a factory
    // for tensors over memory whose release is someone else's (ExternalBuffer, DLPack import).

    /**
     * A rank-0 (scalar) float32 tensor: shape {@code []}, one element, as
     * {@code TensorDescriptor.of(ElementType.FLOAT32)} describes. Note that {@code
     * Tensor.of(new float[] {x})} is rank 1 (shape {@code [1]}): {@code of} always takes the shape
     * from its {@code shape} argument or, when none is given, makes one dimension of the data's
     * length.
     */
    public static Tensor scalar(float value) {
        Tensor t = allocate(TensorDescriptor.of(ElementType.FLOAT32));
        t.fillTarget(0).set(le(ValueLayout.JAVA_FLOAT), 0, value);
        return t;
    }

    /** A rank-0 float64 tensor; see {@link #scalar(float)}. */
    public static Tensor scalar(double value) {
        Tensor t = allocate(TensorDescriptor.of(ElementType.FLOAT64));
        t.fillTarget(0).set(le(ValueLayout.JAVA_DOUBLE), 0, value);
        return t;
    }

    /** A rank-0 int32 tensor; see {@link #scalar(float)}. */
    public static Tensor scalar(int value) {
        Tensor t = allocate(TensorDescriptor.of(ElementType.INT32));
        t.fillTarget(0).set(le(ValueLayout.JAVA_INT), 0, value);
        return t;
    }

    /** A rank-0 int64 tensor; see {@link #scalar(float)}. */
    public static Tensor scalar(long value) {
        Tensor t = allocate(TensorDescriptor.of(ElementType.INT64));
        t.fillTarget(0).set(le(ValueLayout.JAVA_LONG), 0, value);
        return t;
    }

    /**
     * A keep-alive for handing this tensor's memory to another library without copying (ONNX
     * Runtime, a DLPack consumer, native code). While any share is open, {@link #close()} is
     * refused with {@link IllegalStateException} and the tensor stays open, so its memory is never
     * freed or given back to a reader's buffer pool (where the next tensor read would reuse it)
     * while the other library may still read it. Close the share when the other library is done
     * (for ONNX Runtime: after closing the {@code OnnxTensor} and the results of every run that
     * used it); then close the tensor. Shares may be opened and closed from any thread.
     *
     * @throws IllegalStateException if the tensor is closed
     */
    public TensorShare share() {
        return new TensorShare(this);
    }

    /**
     * Buffer 0, whole, as a little-endian {@link java.nio.ByteBuffer} aliasing the tensor's memory
     * (read-only for read-only buffers, such as those of {@link HurrayFile#map}); valid until the
     * tensor is closed. For handing the memory to another library, take a {@link #share()}.
     *
     * @throws IllegalStateException after close, or above 2 GiB
     */
    public java.nio.ByteBuffer asByteBuffer() {
        requireOpen();
        return TensorViews.bytes(descriptor, segments()[0]);
    }

    /**
     * The float32 elements (row-major, from the byte offset) as a {@link java.nio.FloatBuffer}
     * aliasing the tensor's memory; valid until the tensor is closed. Java access through the
     * view fails after close, but a library that kept the address (ONNX Runtime, native code)
     * cannot be stopped: hand such libraries the views of a {@link #share()}, which keeps the
     * memory theirs until the share is closed.
     *
     * @throws IllegalStateException for another dtype or layout, after close, or above 2 GiB
     */
    public java.nio.FloatBuffer asFloatBuffer() {
        requireOpen();
        return TensorViews.elements(descriptor, segments()[0], 4, ElementType.FLOAT32).asFloatBuffer();
    }

    /** As {@link #asFloatBuffer()} for float64. */
    public java.nio.DoubleBuffer asDoubleBuffer() {
        requireOpen();
        return TensorViews.elements(descriptor, segments()[0], 8, ElementType.FLOAT64).asDoubleBuffer();
    }

    /** As {@link #asFloatBuffer()} for int32 and uint32 (raw bits). */
    public java.nio.IntBuffer asIntBuffer() {
        requireOpen();
        return TensorViews.elements(descriptor, segments()[0], 4, ElementType.INT32, ElementType.UINT32).asIntBuffer();
    }

    /** As {@link #asFloatBuffer()} for int64 and uint64 (raw bits). */
    public java.nio.LongBuffer asLongBuffer() {
        requireOpen();
        return TensorViews.elements(descriptor, segments()[0], 8, ElementType.INT64, ElementType.UINT64).asLongBuffer();
    }

    /** As {@link #asFloatBuffer()} for the 16-bit types (int16, uint16, float16, bfloat16; raw bits). */
    public java.nio.ShortBuffer asShortBuffer() {
        requireOpen();
        return TensorViews.elements(descriptor, segments()[0], 2, ElementType.INT16, ElementType.UINT16,
                ElementType.FLOAT16, ElementType.BFLOAT16).asShortBuffer();
    }

    // ---------------------------------------------------------------- close

    /**
     * Ends the buffers' scope, then frees them. A no-op if already closed.
     *
     * @throws WrongThreadException for a {@link TensorScope#CONFINED} tensor closed from a thread
     *     other than its owner (the tensor stays open)
     * @throws IllegalStateException while a {@link Writer} is writing this tensor (the tensor
     *     stays open)
     */
    @Override
    public void close() {
        while (true) {
            int s = state.get();
            if (s == CLOSED || s == CLOSING) {
                return;
            }
            if (s > 0) {
                throw new IllegalStateException("the tensor is being written or shared (Tensor.share()); "
                        + "close it after the write returns and every share is closed");
            }
            if (state.compareAndSet(0, CLOSING)) {
                break;
            }
        }
        try {
            if (pooled != null) {
                closePooled();
            } else if (arena != null) {
                arena.close();
            }
        } catch (RuntimeException | Error e) {
            state.set(0);
            throw e;
        }
        state.set(CLOSED);
        if (ledgered) {
            return;
        }
        if (resource != null) {
            resource.close();
        } else {
            if (nativeTensor != null) {
                NativeTensor.destroy(nativeTensor);
            }
            if (onClose != null) {
                onClose.run();
            }
        }
    }

    /**
     * Ends a pooled tensor: its arena's close gives the blocks back once segments were made,
     * else they go back at once. Under the lock that {@link #materialize()} holds, so that no
     * segments are made over blocks already given back.
     */
    private synchronized void closePooled() {
        if (Thread.currentThread() != owner) {
            throw new WrongThreadException("the tensor is confined to thread " + owner.getName()
                    + " (TensorScope.CONFINED): close it there");
        }
        Arena a = arena;
        if (a != null) {
            a.close();
        } else {
            for (int i = 0; i < pooled.length; i++) {
                PayloadPool.giveBack(pooled[i], unscoped[i].byteSize());
            }
        }
    }

    /** The descriptor's {@code toString}, plus {@code (closed)} after close. */
    @Override
    public String toString() {
        return "Tensor " + descriptor + (isOpen() ? "" : " (closed)");
    }
}
