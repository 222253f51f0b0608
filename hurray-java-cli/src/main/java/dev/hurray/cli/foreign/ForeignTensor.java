package dev.hurray.cli.foreign;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * One tensor read from (or to be written to) a foreign format: name, element type, shape,
 * element order, payload and optional quantization.
 *
 * <p><b>Payload.</b> {@link #data()} holds exactly {@code dtype.bytesFor(elementCount())}
 * bytes of the stored values, little-endian, dense, in {@link #layout()} order. Its size is a
 * {@code long}: payloads over 2 GiB are fine. The segment is either a slice of a read-only file
 * mapping (safetensors, little-endian npy) or memory allocated 64-byte aligned (tfjs tensors,
 * which start at arbitrary offsets in their shards; byte-swapped npy; npz entries). It is owned
 * by the {@link ForeignModel}'s arena: it stays valid until that model is closed, and touching it
 * afterwards throws {@link IllegalStateException}. A mapped payload is read-only.
 *
 * <p><b>Quantization.</b> When present, {@link #dtype()} is the <em>stored</em> type and
 * {@link Quantization#dequantized()} the logical one (e.g. uint8 stored, float32 logical).
 *
 * <p>Instances are immutable (the shape is copied in and out) and may be shared between
 * threads; the payload's thread rules are those of the owning model's arena (shared).
 */
public final class ForeignTensor {
    private final String name;
    private final DType dtype;
    private final long[] shape;
    private final Layout layout;
    private final MemorySegment data;
    private final Quantization quantization;
    private final long sourceOffset;

    /**
     * @param name         tensor name, non-empty
     * @param dtype        stored element type
     * @param shape        dimensions, each {@code >= 0}; empty for a scalar (rank 0)
     * @param layout       element order of {@code data}
     * @param data         payload, exactly {@code dtype.bytesFor(product(shape))} bytes
     * @param quantization how stored values map to logical ones, or {@code null}
     * @param sourceOffset byte offset of the payload in the source file, or {@code -1} when it
     *                     has none (compressed, computed, or built in memory)
     * @throws IllegalArgumentException on a negative dimension, an element count or byte size
     *                                  that overflows {@code long}, or a payload of the wrong size
     */
    public ForeignTensor(String name, DType dtype, long[] shape, Layout layout, MemorySegment data,
                         Quantization quantization, long sourceOffset) {
        this.name = Objects.requireNonNull(name, "name");
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        this.shape = Objects.requireNonNull(shape, "shape").clone();
        this.layout = Objects.requireNonNull(layout, "layout");
        this.data = Objects.requireNonNull(data, "data");
        this.quantization = quantization;
        this.sourceOffset = sourceOffset;
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
            bytes = dtype.bytesFor(elementCount(this.shape));
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("tensor '" + name + "': size of shape "
                    + Arrays.toString(shape) + " overflows");
        }
        if (data.byteSize() != bytes) {
            throw new IllegalArgumentException("tensor '" + name + "': payload is " + data.byteSize()
                    + " bytes, " + dtype + Arrays.toString(shape) + " needs " + bytes);
        }
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
    public DType dtype() {
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

    public Layout layout() {
        return layout;
    }

    /** The payload; see the class documentation for ownership and byte order. */
    public MemorySegment data() {
        return data;
    }

    /** Payload size in bytes. */
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

    /** Shape as {@code [2, 3]} ({@code []} for a scalar). */
    public String shapeString() {
        return Arrays.toString(shape);
    }

    @Override
    public String toString() {
        return name + ": " + dtype + shapeString() + " " + layout
                + (quantization == null ? "" : " " + quantization.describe());
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
