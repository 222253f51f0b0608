package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One tensor read from (or to be written to) a foreign format: name, element type, shape,
 * element order, payload and optional quantization.
 *
 * <p><b>Payload.</b> {@link #data()} holds exactly {@link #payloadSize payloadSize(dtype, shape,
 * quantization)} bytes of the stored values, little-endian, dense, in {@link #layout()} order:
 * {@code dtype.byteSizeOf(elementCount())}, except for the GGUF block kinds
 * ({@link Quantization.Block}), whose one buffer holds llama.cpp's interleaved blocks. Its size is a
 * {@code long}: payloads over 2 GiB are fine.
 *
 * <p><b>Lazy payloads.</b> A tensor the readers of this module return holds no payload when it
 * is opened: the first {@link #data()}, {@link #scaleBuffers()}, {@link #load()} or
 * {@link #toTensor(Arena)} reads it from the file with positional reads (chunks of at most
 * 1 MiB; never a mapping, which a file shortened by another process would turn into SIGBUS) into
 * 64-byte aligned native memory owned by this tensor, in a shared arena so that any thread may
 * read it. {@link #release()} frees that memory (segments handed out before throw
 * {@link IllegalStateException} from then on; the next use reads the file again);
 * {@link #isLoaded()} and {@link #residentBytes()} tell whether it is in memory. Everything
 * else ({@link #byteSize()}, {@link #descriptor()}, the shape and type) is known without reading
 * the payload. A tensor built from segments (the public constructors, {@link #of(Tensor)}) is
 * always loaded: its memory is owned by whoever made the segments, and {@link #release()} does
 * nothing. Closing the {@link ForeignModel} releases every payload it read; a lazy tensor of a
 * closed model throws {@link IllegalStateException} when its payload is asked for.
 *
 * <p><b>Errors.</b> Reading a payload can fail: the file was shortened after it was opened (a
 * {@link ForeignFormatException} naming the file, its size now, the bytes its data needs and
 * its size when opened), an npz member is corrupt or inflates past its declared size, or the
 * read fails ({@link IOException}). A failed read leaves the tensor unloaded.
 *
 * <p><b>Hurray types.</b> The element type, the layout kind (row- or column-major only) and the
 * quantization are Hurray's own ({@link ElementType}, {@link Layout.Kind}, {@link Quantization}).
 * {@link #descriptor()} gives the Hurray {@link TensorDescriptor} (one dense CPU buffer at
 * 64-byte alignment, named after the tensor) and {@link #toTensor(Arena)} a Hurray
 * {@link Tensor} over the payload; {@link #of(TensorDescriptor, MemorySegment)} goes the other
 * way.
 *
 * <p><b>Quantization.</b> When present, {@link #dtype()} is the <em>stored</em> type and
 * {@link Quantization#dequantized()} the logical one (e.g. uint8 stored, float32 logical).
 *
 * <p><b>Threads.</b> The name, type, shape and sizes are immutable (the shape is copied in
 * and out). Loading and releasing are synchronized on the tensor, so concurrent first uses read
 * the file once; a payload may be read from any thread while it is loaded. Releasing it while
 * another thread reads it fails that read with {@link IllegalStateException}, never the JVM.
 */
public final class ForeignTensor {
    /**
     * The largest rank a foreign tensor may have: Hurray's ({@link dev.hurray.Shape#MAX_RANK}),
     * so every tensor a reader accepts can be converted. The readers refuse a larger rank with a
     * {@link ForeignFormatException} when the file is opened; a tensor built in memory may have
     * one (a writer may take it), but {@link #descriptor()} refuses it.
     */
    public static final int MAX_RANK = dev.hurray.Shape.MAX_RANK;

    private final String name;
    private final ElementType dtype;
    private final long[] shape;
    private final Layout.Kind layout;
    private final Quantization quantization;
    private final long sourceOffset;
    private final long byteSize;
    private final long[] scaleSizes;
    /** Reads a lazy tensor's payload; {@code null} for a tensor built from segments. */
    private final Loader loader;
    /** The payload (buffer 0, then the scale buffers) while in memory; always set without a loader. */
    private volatile Payload payload;
    private boolean modelClosed; // guarded by this
    /** Bytes of this tensor's payload read for one use only ({@link #readOnce}), while that use runs. */
    private final java.util.concurrent.atomic.AtomicLong inUse = new java.util.concurrent.atomic.AtomicLong();

    /** The payload segments of a tensor and the arena that owns them ({@code null}: owned elsewhere). */
    private record Payload(MemorySegment data, List<MemorySegment> scales, Arena arena) {
    }

    /**
     * How a reader of this package fills a lazy tensor's payload: {@code buffers} are buffer 0
     * and then the scale buffers, allocated at their sizes (zeroed, 64-byte aligned); the loader
     * fills every byte or throws.
     */
    @FunctionalInterface
    interface Loader {
        void load(MemorySegment[] buffers) throws IOException;
    }

    /**
     * @param name         tensor name, non-empty
     * @param dtype        stored element type
     * @param shape        dimensions, each {@code >= 0}; empty for a scalar (rank 0)
     * @param layout       element order of {@code data}
     * @param data         payload, exactly {@link #payloadSize payloadSize(dtype, shape, quantization)}
     *                     bytes; its owner keeps it valid while the tensor is used (the tensor
     *                     is always {@link #isLoaded() loaded} and never frees it)
     * @param quantization how stored values map to logical ones, or {@code null}
     * @param sourceOffset byte offset of the payload in the source file, or {@code -1} when it
     *                     has none (compressed, computed, or built in memory)
     * @throws IllegalArgumentException on a negative dimension, an element count or byte size
     *                                  that overflows {@code long}, a payload of the wrong size,
     *                                  or GGUF blocks on a scalar or a last dimension that is not
     *                                  a multiple of 32
     */
    public ForeignTensor(String name, ElementType dtype, long[] shape, Layout.Kind layout, MemorySegment data,
                         Quantization quantization, long sourceOffset) {
        this(name, dtype, shape, layout, data, quantization, List.of(), sourceOffset);
    }

    /**
     * A tensor whose quantization keeps its parameters in further buffers (e.g. the E8M0 scales
     * of {@link Quantization.Mx}, paired from a safetensors scale tensor): {@code scaleBuffers}
     * are buffers 1, 2, … of the Hurray buffer table, in its order
     * (docs/spec/descriptor.md §Block quantization kinds). The native library checks their
     * sizes when {@link #descriptor()} builds the descriptor.
     *
     * @param scaleBuffers the quantization's further buffers, owned like {@code data}; empty for
     *                     none
     * @throws IllegalArgumentException as the other constructor, or for scale buffers without a
     *                                  quantization
     */
    public ForeignTensor(String name, ElementType dtype, long[] shape, Layout.Kind layout, MemorySegment data,
                         Quantization quantization, List<MemorySegment> scaleBuffers, long sourceOffset) {
        this(name, dtype, shape, layout, quantization, sizes(scaleBuffers), sourceOffset, null,
                new Payload(Objects.requireNonNull(data, "data"), List.copyOf(scaleBuffers), null));
        if (data.byteSize() != byteSize) {
            throw new IllegalArgumentException("tensor '" + dev.hurray.TensorNames.forMessage(name) + "': payload is " + data.byteSize()
                    + " bytes, " + dtype + Arrays.toString(shape)
                    + (quantization instanceof Quantization.Block b ? " in " + b.kindName() + " blocks" : "")
                    + " needs " + byteSize);
        }
    }

    /**
     * A tensor whose payload {@code loader} reads on first use (the readers of this package).
     *
     * @param scaleSizes the byte sizes of the scale buffers (buffers 1, 2, …)
     * @throws IllegalArgumentException as the public constructors
     */
    static ForeignTensor lazy(String name, ElementType dtype, long[] shape, Layout.Kind layout,
                              Quantization quantization, long[] scaleSizes, long sourceOffset, Loader loader) {
        return new ForeignTensor(name, dtype, shape, layout, quantization, scaleSizes.clone(), sourceOffset,
                Objects.requireNonNull(loader, "loader"), null);
    }

    private ForeignTensor(String name, ElementType dtype, long[] shape, Layout.Kind layout, Quantization quantization,
                          long[] scaleSizes, long sourceOffset, Loader loader, Payload payload) {
        if (scaleSizes.length > 0 && quantization == null) {
            throw new IllegalArgumentException("tensor '" + dev.hurray.TensorNames.forMessage(name) + "': scale buffers without a quantization");
        }
        this.name = Objects.requireNonNull(name, "name");
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        this.shape = Objects.requireNonNull(shape, "shape").clone();
        this.layout = Objects.requireNonNull(layout, "layout");
        this.quantization = quantization;
        this.sourceOffset = sourceOffset;
        this.scaleSizes = scaleSizes;
        this.loader = loader;
        this.payload = payload;
        if (layout == Layout.Kind.STRIDED) {
            throw new IllegalArgumentException("tensor '" + dev.hurray.TensorNames.forMessage(name) + "': foreign formats hold row- or column-major data only");
        }
        if (name.isEmpty()) {
            throw new IllegalArgumentException("tensor name is empty");
        }
        try {
            // The core's one rule for names (docs/spec/descriptor.md §Names), so inspect,
            // verify and convert refuse the same foreign names.
            dev.hurray.TensorNames.check(name);
        } catch (dev.hurray.HurrayException e) {
            throw new IllegalArgumentException("tensor name \"" + printable(name) + "\": " + e.nativeMessage());
        }
        try {
            byteSize = payloadSize(dtype, this.shape, quantization);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("tensor '" + dev.hurray.TensorNames.forMessage(name) + "': size of shape "
                    + Arrays.toString(shape) + " overflows");
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("tensor '" + dev.hurray.TensorNames.forMessage(name) + "': " + e.getMessage());
        }
    }

    private static long[] sizes(List<MemorySegment> segments) {
        long[] out = new long[Objects.requireNonNull(segments, "scaleBuffers").size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Objects.requireNonNull(segments.get(i), "scale buffer").byteSize();
        }
        return out;
    }

    /**
     * The byte size of buffer 0 of a dense tensor: {@code dtype.byteSizeOf(elementCount(shape))},
     * except for a GGUF block quantization ({@link Quantization.Block}), whose buffer holds
     * llama.cpp's blocks of 32 elements along the last axis, each a float16 scale and the
     * elements: {@code elementCount / 32 × 34} bytes for {@code Q8_0}, {@code × 18} for
     * {@code Q4_0} (docs/spec/descriptor.md §Block quantization kinds). Scale buffers of other
     * kinds are not counted.
     *
     * @param quantization the tensor's quantization, or {@code null}
     * @throws IllegalArgumentException on a negative dimension, or GGUF blocks on a scalar or a
     *                                  last dimension that is not a multiple of 32
     * @throws ArithmeticException      on {@code long} overflow
     */
    public static long payloadSize(ElementType dtype, long[] shape, Quantization quantization) {
        long n = elementCount(shape);
        if (!(quantization instanceof Quantization.Block b)) {
            return dtype.byteSizeOf(n);
        }
        if (shape.length == 0 || shape[shape.length - 1] % b.block() != 0) {
            throw new IllegalArgumentException(b.kindName() + " stores blocks of " + b.block()
                    + " elements along the last axis; shape " + Arrays.toString(shape)
                    + (shape.length == 0 ? " has none" : "'s last dimension is not a multiple of " + b.block()));
        }
        return Math.multiplyExact(n / b.block(), (long) Gguf.GgmlType.of(b.format()).blockBytes());
    }

    /**
     * Product of {@code shape}'s dimensions (1 for rank 0).
     *
     * @throws IllegalArgumentException on a negative dimension
     * @throws ArithmeticException      on {@code long} overflow
     */
    public static long elementCount(long[] shape) {
        long n = 1;
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension " + d);
            }
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    public String name() {
        return name;
    }

    /** The stored element type. */
    public ElementType dtype() {
        return dtype;
    }

    /** A copy of the shape. */
    public long[] shape() {
        return shape.clone();
    }

    public int rank() {
        return shape.length;
    }

    public long elementCount() {
        return elementCount(shape);
    }

    public Layout.Kind layout() {
        return layout;
    }

    /**
     * The payload, read from the file first when this tensor is lazy and not loaded; see the
     * class documentation for ownership, byte order and threads.
     *
     * @throws ForeignFormatException if the file changed since it was opened (shortened, or an
     *     npz member corrupt or inflating past its declared size), naming the file
     * @throws IOException if reading the file fails
     * @throws IllegalStateException if this tensor's model is closed
     */
    public MemorySegment data() throws IOException {
        return payload().data();
    }

    /**
     * The quantization's further buffers (buffer-table entries 1, 2, …), empty for a plain
     * tensor or a single-buffer quantization; loaded and owned like {@link #data()}.
     *
     * @throws IOException as {@link #data()}
     */
    public List<MemorySegment> scaleBuffers() throws IOException {
        return payload().scales();
    }

    /** The byte sizes of the {@link #scaleBuffers()}, known without reading them. */
    public long[] scaleBufferSizes() {
        return scaleSizes.clone();
    }

    /** Payload size in bytes ({@link #data()} only, not the {@link #scaleBuffers()}); reads nothing. */
    public long byteSize() {
        return byteSize;
    }

    /** {@link #byteSize()} plus the scale buffers' sizes. */
    public long totalBytes() {
        long n = byteSize;
        for (long s : scaleSizes) {
            n += s;
        }
        return n;
    }

    /**
     * Whether the payload is in memory: always for a tensor built from segments; for a lazy
     * one, from its first use until {@link #release()}.
     */
    public boolean isLoaded() {
        return payload != null;
    }

    /**
     * Payload bytes of this tensor in memory now: {@link #totalBytes()} when it is
     * {@link #isLoaded() loaded}, plus what {@link ForeignModel#forEachTensor} and the writers of
     * this module have read for the tensor they are writing; else 0.
     */
    public long residentBytes() {
        return (payload != null ? totalBytes() : 0) + inUse.get();
    }

    /**
     * Reads the payload now if this tensor is lazy and not loaded; otherwise does nothing.
     *
     * @throws IOException as {@link #data()}
     */
    public void load() throws IOException {
        payload();
    }

    /**
     * Frees a lazy tensor's payload memory: segments from {@link #data()}, {@link #scaleBuffers()}
     * and tensors from {@link #toTensor(Arena)} throw {@link IllegalStateException} when touched
     * afterwards, and the next use reads the file again. Does nothing for a tensor built from
     * segments (their owner frees them) or one not loaded.
     *
     * @throws IllegalStateException if another thread is passing the payload to a native call
     *     right now (the payload then stays loaded)
     */
    public synchronized void release() {
        Payload p = payload;
        if (loader == null || p == null) {
            return;
        }
        if (p.arena() != null) {
            p.arena().close();
        }
        payload = null;
    }

    /**
     * Runs {@code body} on the payload: this tensor's own when it is loaded, else one read for
     * this use into a confined arena freed when {@code body} returns (the tensor stays unloaded;
     * {@link #residentBytes()} counts the bytes meanwhile). Writing a model this way holds one
     * payload at a time, and a confined arena costs far less to free than a shared one, which
     * matters for models of many small tensors.
     */
    void withPayload(PayloadBody body) throws IOException {
        Payload p = payload;
        if (p != null) {
            body.accept(p.data(), p.scales());
            return;
        }
        try (Arena once = Arena.ofConfined()) {
            MemorySegment[] bufs = readOnce(once);
            try {
                body.accept(bufs[0], List.of(bufs).subList(1, bufs.length));
            } finally {
                inUse.addAndGet(-totalBytes());
            }
        }
    }

    /** {@link #withPayload} for buffer 0 alone. */
    void withData(DataBody body) throws IOException {
        withPayload((data, scales) -> body.accept(data));
    }

    /** Reads the payload into {@code arena} without loading this tensor; counts it in {@link #inUse}. */
    private MemorySegment[] readOnce(Arena arena) throws IOException {
        synchronized (this) {
            if (modelClosed) {
                throw new IllegalStateException("tensor '" + printable(name) + "': its model is closed");
            }
        }
        MemorySegment[] bufs = new MemorySegment[1 + scaleSizes.length];
        bufs[0] = Payloads.allocate(arena, byteSize);
        for (int i = 0; i < scaleSizes.length; i++) {
            bufs[i + 1] = Payloads.allocate(arena, scaleSizes[i]);
        }
        inUse.addAndGet(totalBytes());
        try {
            loader.load(bufs);
        } catch (Throwable t) {
            inUse.addAndGet(-totalBytes());
            throw t;
        }
        return bufs;
    }

    /** What {@link #withPayload} runs: buffer 0 and the scale buffers. */
    @FunctionalInterface
    interface PayloadBody {
        void accept(MemorySegment data, List<MemorySegment> scales) throws IOException;
    }

    /** What {@link #withData} runs. */
    @FunctionalInterface
    interface DataBody {
        void accept(MemorySegment data) throws IOException;
    }

    /** Called by the owning model's close: releases the payload and refuses to read it again. */
    synchronized void closeFromModel() {
        release();
        if (loader != null) {
            modelClosed = true;
        }
    }

    private Payload payload() throws IOException {
        Payload p = payload;
        return p != null ? p : loadNow();
    }

    private synchronized Payload loadNow() throws IOException {
        if (payload != null) {
            return payload;
        }
        if (modelClosed) {
            throw new IllegalStateException("tensor '" + printable(name) + "': its model is closed");
        }
        Arena arena = Arena.ofShared();
        try {
            MemorySegment[] bufs = new MemorySegment[1 + scaleSizes.length];
            bufs[0] = Payloads.allocate(arena, byteSize);
            for (int i = 0; i < scaleSizes.length; i++) {
                bufs[i + 1] = Payloads.allocate(arena, scaleSizes[i]);
            }
            loader.load(bufs);
            Payload p = new Payload(bufs[0], List.of(bufs).subList(1, bufs.length), arena);
            payload = p;
            return p;
        } catch (Throwable t) {
            arena.close();
            throw t;
        }
    }

    public Optional<Quantization> quantization() {
        return Optional.ofNullable(quantization);
    }

    /** Byte offset of the payload in the source file, or {@code -1} when it has none. */
    public long sourceOffset() {
        return sourceOffset;
    }

    /**
     * The Hurray descriptor of this tensor: element type, shape, layout, quantization and name,
     * one dense CPU buffer of {@link #byteSize()} bytes at 64-byte alignment, then one per
     * {@link #scaleBuffers() scale buffer}. Built by the native
     * library on each call (cheap; cache it if you call it in a loop).
     *
     * @throws ForeignFormatException if Hurray cannot describe the tensor (rank above 32, or a
     *     field the format rules refuse; the message says which)
     */
    public TensorDescriptor descriptor() throws ForeignFormatException {
        return Bridge.descriptor(this);
    }

    /**
     * This tensor as a Hurray {@link Tensor}, its payload read first when it is lazy and not
     * loaded ({@link #load()}). Zero copy when the payload is native memory at a 64-byte aligned
     * address (every payload this module's readers make is); otherwise the payload is copied
     * into memory allocated from {@code scratch}.
     *
     * <p>Ownership: the tensor borrows its memory from this tensor (or from {@code scratch});
     * close it before {@link #release()}, the model's close or {@code scratch}'s, and do not
     * use it after any of them. Closing the returned tensor frees nothing.
     *
     * @param scratch arena for the aligned copy when one is needed
     * @throws ForeignFormatException as for {@link #descriptor()}, or when the file changed since
     *     it was opened (see {@link #data()})
     * @throws IOException as {@link #data()}
     */
    public Tensor toTensor(Arena scratch) throws IOException {
        TensorDescriptor d = descriptor();
        Payload p = payload();
        return wrap(d, p.data(), p.scales(), scratch);
    }

    /** A Hurray tensor of {@code d} over these buffers, copied aligned into {@code scratch} where they are not. */
    static Tensor wrap(TensorDescriptor d, MemorySegment data, List<MemorySegment> scales, Arena scratch) {
        MemorySegment[] bufs = new MemorySegment[1 + scales.size()];
        bufs[0] = Bridge.aligned(data, scratch);
        for (int i = 0; i < scales.size(); i++) {
            bufs[i + 1] = Bridge.aligned(scales.get(i), scratch);
        }
        return Tensor.wrap(d, bufs);
    }

    /**
     * The foreign-format view of a Hurray tensor: one dense buffer at byte offset 0, row- or
     * column-major, named. The payload is used as is (not copied): it stays owned by whoever
     * owns {@code payload}.
     *
     * @param descriptor a named, single-buffer, dense descriptor
     * @param payload    its buffer 0
     * @throws ForeignFormatException naming what a foreign format cannot express (no name, a
     *     strided layout, several buffers, a byte offset or padding)
     */
    public static ForeignTensor of(TensorDescriptor descriptor, MemorySegment payload) throws ForeignFormatException {
        return Bridge.foreign(descriptor, List.of(payload), -1);
    }

    /**
     * {@link #of(TensorDescriptor, List)} for a Hurray tensor's descriptor and all its buffers;
     * the payloads stay owned by {@code tensor}. Foreign formats key tensors by name, so an
     * unnamed tensor (for example one {@link Tensor#quantize} returned) is refused: name it first
     * with {@code ForeignTensor.of(t.descriptor().withName("w"), List.copyOf(t.buffers()))}.
     *
     * @throws ForeignFormatException as {@link #of(TensorDescriptor, List)}
     */
    public static ForeignTensor of(Tensor tensor) throws ForeignFormatException {
        return Bridge.foreign(tensor.descriptor(), List.copyOf(tensor.buffers()), -1);
    }

    /**
     * {@link #of(TensorDescriptor, MemorySegment)} for a descriptor with several buffers: a
     * quantized tensor whose parameters live in buffers 1, 2, … (e.g. MX scales). The payloads
     * are used as they are; each writer refuses what it cannot record.
     *
     * @param payloads the buffers in buffer-table order
     * @throws ForeignFormatException as {@link #of(TensorDescriptor, MemorySegment)}, or for
     *     several buffers without a quantization
     */
    public static ForeignTensor of(TensorDescriptor descriptor, List<MemorySegment> payloads) throws ForeignFormatException {
        return Bridge.foreign(descriptor, payloads, -1);
    }

    /** Shape as {@code [2, 3]} ({@code []} for a scalar). */
    public String shapeString() {
        return Arrays.toString(shape);
    }

    @Override
    public String toString() {
        return name + ": " + dtype + shapeString() + " " + layout
                + (quantization == null ? "" : " " + Payloads.describe(quantization));
    }

    /** {@code name} for one-line messages ({@link dev.hurray.TensorNames#forMessage}: clipped, control characters escaped). */
    static String printable(String name) {
        return dev.hurray.TensorNames.forMessage(name);
    }
}
