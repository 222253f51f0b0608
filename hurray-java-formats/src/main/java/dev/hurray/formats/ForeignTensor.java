package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
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
 * {@code long}: payloads over 2 GiB are fine. The readers of this module allocate it 64-byte aligned
 * and read the file's bytes into it (never a mapping, which a file shortened by another process
 * would turn into SIGBUS). It is owned
 * by the {@link ForeignModel}'s arena: it stays valid until that model is closed, and touching it
 * afterwards throws {@link IllegalStateException}.
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
 * <p>Instances are immutable (the shape is copied in and out) and may be shared between
 * threads; the payload's thread rules are those of the owning model's arena (shared).
 */
public final class ForeignTensor {
    private final String name;
    private final ElementType dtype;
    private final long[] shape;
    private final Layout.Kind layout;
    private final MemorySegment data;
    private final Quantization quantization;
    private final List<MemorySegment> scaleBuffers;
    private final long sourceOffset;

    /**
     * @param name         tensor name, non-empty
     * @param dtype        stored element type
     * @param shape        dimensions, each {@code >= 0}; empty for a scalar (rank 0)
     * @param layout       element order of {@code data}
     * @param data         payload, exactly {@link #payloadSize payloadSize(dtype, shape, quantization)}
     *                     bytes
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
        this.scaleBuffers = List.copyOf(Objects.requireNonNull(scaleBuffers, "scaleBuffers"));
        if (!this.scaleBuffers.isEmpty() && quantization == null) {
            throw new IllegalArgumentException("tensor '" + name + "': scale buffers without a quantization");
        }
        this.name = Objects.requireNonNull(name, "name");
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        this.shape = Objects.requireNonNull(shape, "shape").clone();
        this.layout = Objects.requireNonNull(layout, "layout");
        this.data = Objects.requireNonNull(data, "data");
        this.quantization = quantization;
        this.sourceOffset = sourceOffset;
        if (layout == Layout.Kind.STRIDED) {
            throw new IllegalArgumentException("tensor '" + name + "': foreign formats hold row- or column-major data only");
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
        long bytes;
        try {
            bytes = payloadSize(dtype, this.shape, quantization);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("tensor '" + name + "': size of shape "
                    + Arrays.toString(shape) + " overflows");
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("tensor '" + name + "': " + e.getMessage());
        }
        if (data.byteSize() != bytes) {
            throw new IllegalArgumentException("tensor '" + name + "': payload is " + data.byteSize()
                    + " bytes, " + dtype + Arrays.toString(shape)
                    + (quantization instanceof Quantization.Block b ? " in " + b.kindName() + " blocks" : "")
                    + " needs " + bytes);
        }
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

    /** The payload; see the class documentation for ownership and byte order. */
    public MemorySegment data() {
        return data;
    }

    /**
     * The quantization's further buffers (buffer-table entries 1, 2, …), empty for a plain
     * tensor or a single-buffer quantization. Owned like {@link #data()}.
     */
    public List<MemorySegment> scaleBuffers() {
        return scaleBuffers;
    }

    /** Payload size in bytes ({@link #data()} only, not the {@link #scaleBuffers()}). */
    public long byteSize() {
        return data.byteSize();
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
     * This tensor as a Hurray {@link Tensor}. Zero copy when the payload is native memory at a
     * 64-byte aligned address (every payload this module's readers make is); otherwise the payload is copied
     * into memory allocated from {@code scratch}.
     *
     * <p>Ownership: the tensor borrows its memory from this tensor's model (or from
     * {@code scratch}); close it before the model or {@code scratch}, and do not use it after
     * either is closed. Closing the returned tensor frees nothing.
     *
     * @param scratch arena for the aligned copy when one is needed
     * @throws ForeignFormatException as for {@link #descriptor()}
     */
    public Tensor toTensor(Arena scratch) throws ForeignFormatException {
        MemorySegment[] bufs = new MemorySegment[1 + scaleBuffers.size()];
        bufs[0] = Bridge.aligned(data, scratch);
        for (int i = 0; i < scaleBuffers.size(); i++) {
            bufs[i + 1] = Bridge.aligned(scaleBuffers.get(i), scratch);
        }
        return Tensor.wrap(descriptor(), bufs);
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

    /** {@code name} with control characters as {@code \\uXXXX}, for one-line messages. */
    static String printable(String name) {
        StringBuilder b = new StringBuilder(name.length());
        name.codePoints().forEach(c -> {
            if (c < 0x20 || c == 0x7f) {
                b.append(String.format("\\u%04x", c));
            } else {
                b.appendCodePoint(c);
            }
        });
        return b.toString();
    }
}
