package dev.hurray;

import dev.hurray.internal.DescriptorFields;
import dev.hurray.internal.NativeDescriptor;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a tensor's bytes mean: element type, shape, layout, byte offset, buffer table, and the
 * optional quantization block, name and key/value metadata (docs/spec/descriptor.md).
 *
 * <h2>Validation and encoding are native</h2>
 * A descriptor is made by a {@link Builder} whose {@link Builder#build()} hands every field to
 * the native library ({@code hurray_descriptor_builder_*}); the library validates them and
 * encodes the descriptor, and a failure surfaces there as a {@link HurrayException}. The Java
 * fields are then read back from the native descriptor ({@code hurray_descriptor_*}
 * accessors), so what this object reports is exactly what goes on the wire, including
 * defaults the library fills in (a dense layout given no buffer gets one CPU buffer of the
 * exact size at 64-byte alignment). Descriptors of tensors read from a stream are made from
 * the same accessors. Java never encodes or decodes descriptor bytes itself.
 *
 * <h2>Native handle caching</h2>
 * Each descriptor keeps its native twin so that writing the same descriptor again costs no
 * validation or encoding: a built descriptor owns the handle {@code build()} returned; a
 * descriptor read from a stream keeps a copy of its encoded bytes and decodes them into an
 * owned handle the first time it is written. The owned handle is bound to an automatic arena
 * ({@code Arena.ofAuto()} plus {@code reinterpret(arena, cleanup)}): the garbage collector's
 * cleaner calls {@code hurray_descriptor_destroy} once this object is unreachable, and a
 * downcall using the handle keeps it alive for its duration. Nothing needs closing.
 *
 * <h2>Values</h2>
 * Immutable and thread-safe. {@code equals}/{@code hashCode} compare all fields (metadata as a
 * map: order-insensitive, values by content). {@link #toString()} is readable, e.g.
 * {@code float32[2,3] row-major}.
 */
public final class TensorDescriptor {
    private final DescriptorFields fields;
    private final NativeDescriptor nativeDescriptor;

    private TensorDescriptor(DescriptorFields fields, NativeDescriptor nativeDescriptor) {
        this.fields = fields;
        this.nativeDescriptor = nativeDescriptor;
    }

    /** The fields (internal; shared, never changed). */
    DescriptorFields fields() {
        return fields;
    }

    /** Wraps fields read from a native descriptor and its native twin. */
    static TensorDescriptor fromNative(DescriptorFields fields, NativeDescriptor nativeDescriptor) {
        return new TensorDescriptor(fields, nativeDescriptor);
    }

    /**
     * A new builder for a row-major descriptor of {@code elementType} and {@code shape}.
     *
     * @throws NullPointerException for null arguments
     */
    public static Builder builder(ElementType elementType, Shape shape) {
        return new Builder(elementType, shape);
    }

    /**
     * A new builder for a row-major descriptor of {@code elementType} and dimensions
     * {@code dims} (elements, outermost first; none for a scalar).
     *
     * @throws IllegalArgumentException for an invalid shape (see {@link Shape#of})
     */
    public static Builder builder(ElementType elementType, long... dims) {
        return new Builder(elementType, Shape.of(dims));
    }

    /**
     * A dense row-major CPU descriptor: one buffer of exactly the needed size at 64-byte
     * alignment. A convenience over {@link #builder(ElementType, long...)} for the common case.
     *
     * @param elementType the element type
     * @param dims dimensions in elements, outermost first; none for a scalar
     * @throws IllegalArgumentException for an invalid shape or a byte count that overflows; the
     *     native {@link HurrayException}, if any, is the cause
     */
    public static TensorDescriptor of(ElementType elementType, long... dims) {
        return of(elementType, Shape.of(dims));
    }

    /**
     * As {@link #of(ElementType, long...)} with a {@link Shape}.
     *
     * @throws IllegalArgumentException if the native library rejects the descriptor (the
     *     {@link HurrayException} is the cause)
     */
    public static TensorDescriptor of(ElementType elementType, Shape shape) {
        try {
            return builder(elementType, shape).build();
        } catch (HurrayException e) {
            throw new IllegalArgumentException(elementType + shape.toString() + ": " + e.getMessage(), e);
        }
    }

    /**
     * Decodes and validates an encoded descriptor (docs/spec/descriptor.md) with the native
     * library ({@code hurray_descriptor_decode}). The bytes are copied.
     *
     * @throws HurrayException for bytes that are not a valid descriptor ({@link Status#INVALID_MAGIC},
     *     {@link Status#CORRUPT}, validation statuses, …)
     */
    public static TensorDescriptor decode(byte[] encoded) throws HurrayException {
        NativeDescriptor n = NativeDescriptor.decodeNow(encoded);
        return new TensorDescriptor(n.read(), n);
    }

    /** The descriptor's encoding as produced by the native library (a copy; bytes). */
    public byte[] encode() {
        try {
            return nativeDescriptor.encoded();
        } catch (HurrayException e) {
            throw new IllegalStateException("the native descriptor could not be encoded", e);
        }
    }

    /** True if this descriptor was read from a stream with exactly these encoded bytes. */
    boolean hasEncoding(MemorySegment encodedView) {
        return nativeDescriptor.hasEncoding(encodedView);
    }

    /** The native twin (handle and/or encoding); for the writer. */
    NativeDescriptor nativeTwin() {
        return nativeDescriptor;
    }

    /** The native descriptor handle (owned, cached); for the reader and writer. */
    MemorySegment nativeHandle() throws HurrayException {
        return nativeDescriptor.handle();
    }

    /**
     * This descriptor with another name: everything else is kept (no builder, one native call).
     * The cheap way to send many tensors that differ only in name, such as embeddings: build a
     * template once, then {@code template.withName(id)} per tensor.
     *
     * @param name the new name: UTF-8 without NUL, at most 4096 bytes ("" is the empty name);
     *     a Java string with an unpaired UTF-16 surrogate has no UTF-8 form and is refused
     * @throws IllegalArgumentException for a name the format refuses (the native
     *     {@link HurrayException} is the cause)
     */
    public TensorDescriptor withName(String name) {
        Objects.requireNonNull(name, "name");
        try {
            NativeDescriptor n = nativeDescriptor.withName(dev.hurray.internal.Utf8.encode(name, "name"));
            DescriptorFields f = fields;
            return new TensorDescriptor(new DescriptorFields(f.elementType(), f.shape(), f.layout(), f.byteOffset(),
                    f.buffers(), f.quantization(), name, f.metadata()), n);
        } catch (HurrayException e) {
            String shown = name.length() <= 64 ? name : name.substring(0, 64) + "… (" + name.length() + " chars)";
            throw new IllegalArgumentException("name " + shown + ": " + e.getMessage(), e);
        }
    }

    /**
     * The composite membership (descriptor version 2): present on a composite head and on each
     * of its members, empty on a tensor outside any composite.
     *
     * @throws HurrayException if the native descriptor cannot be read
     */
    public Optional<CompositeMembership> compositeMembership() throws HurrayException {
        return Optional.ofNullable(NativeDescriptor.membership(nativeHandle()));
    }

    /** The stored element type. */
    public ElementType elementType() {
        return fields.elementType();
    }

    /** The logical shape (elements per dimension). */
    public Shape shape() {
        return fields.shape();
    }

    /** Number of elements, the product of the shape's dimensions. */
    public long elementCount() {
        return fields.shape().elementCount();
    }

    /** How the elements map onto buffer 0. */
    public Layout layout() {
        return fields.layout();
    }

    /** Offset of element 0 inside buffer 0, in bytes. */
    public long byteOffset() {
        return fields.byteOffset();
    }

    /** The buffer table, in order (buffer 0 holds the elements); unmodifiable. */
    public List<BufferSpec> buffers() {
        return fields.buffers();
    }

    /** Sum of the buffer sizes, in bytes: what a tensor of this descriptor moves as payload. */
    public long totalBufferBytes() {
        long sum = 0;
        for (BufferSpec b : fields.buffers()) {
            sum = Math.addExact(sum, b.byteSize());
        }
        return sum;
    }

    /** The quantization block, if any. */
    public Optional<Quantization> quantization() {
        return Optional.ofNullable(fields.quantization());
    }

    /** The tensor's name, if any. */
    public Optional<String> name() {
        return Optional.ofNullable(fields.name());
    }

    /** The key/value metadata in insertion order: an unmodifiable map of copies of the values. */
    public Map<String, byte[]> metadata() {
        if (fields.metadata().isEmpty()) {
            return Collections.emptyMap();
        }
        Map<String, byte[]> copy = new LinkedHashMap<>();
        fields.metadata().forEach((k, v) -> copy.put(k, v.clone()));
        return Collections.unmodifiableMap(copy);
    }

    /** The metadata value of {@code key} decoded as UTF-8, if present. */
    public Optional<String> metadataString(String key) {
        byte[] v = fields.metadata().get(key);
        return v == null ? Optional.empty() : Optional.of(new String(v, StandardCharsets.UTF_8));
    }

    /** A builder holding this descriptor's fields, to derive a changed copy. */
    public Builder toBuilder() {
        Builder b = new Builder(elementType(), shape());
        b.layout = layout();
        b.byteOffset = byteOffset();
        b.buffers.addAll(buffers());
        b.quantization = fields.quantization();
        b.name = fields.name();
        fields.metadata().forEach((k, v) -> b.metadata.put(k, v.clone()));
        return b;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof TensorDescriptor d)) {
            return false;
        }
        DescriptorFields a = fields;
        DescriptorFields b = d.fields;
        return a.elementType() == b.elementType()
                && a.shape().equals(b.shape())
                && a.layout().equals(b.layout())
                && a.byteOffset() == b.byteOffset()
                && a.buffers().equals(b.buffers())
                && Objects.equals(a.quantization(), b.quantization())
                && Objects.equals(a.name(), b.name())
                && metadataEquals(a.metadata(), b.metadata());
    }

    private static boolean metadataEquals(Map<String, byte[]> a, Map<String, byte[]> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (Map.Entry<String, byte[]> e : a.entrySet()) {
            byte[] other = b.get(e.getKey());
            if (other == null || !Arrays.equals(e.getValue(), other)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int hashCode() {
        int h = Objects.hash(fields.elementType(), fields.shape(), fields.layout(), fields.byteOffset(),
                fields.buffers(), fields.quantization(), fields.name());
        int m = 0;
        for (Map.Entry<String, byte[]> e : fields.metadata().entrySet()) {
            m += e.getKey().hashCode() ^ Arrays.hashCode(e.getValue());
        }
        return 31 * h + m;
    }

    /**
     * {@code float32[2,3] row-major}, followed by what differs from a plain dense tensor: the
     * name, byte offset, buffer table, quantization and metadata keys.
     */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        b.append(elementType()).append(shape()).append(' ').append(layout());
        if (fields.name() != null) {
            b.append(" name=\"").append(fields.name()).append('"');
        }
        if (byteOffset() != 0) {
            b.append(" offset=").append(byteOffset());
        }
        List<BufferSpec> bufs = buffers();
        boolean plain = bufs.size() == 1 && bufs.get(0).alignment() == DeviceTag.MIN_ALIGNMENT
                && bufs.get(0).deviceTag() == DeviceTag.CPU && bufs.get(0).syncMode() == SyncMode.PRODUCER_SYNCED
                && fitsDense(bufs.get(0));
        if (!plain) {
            b.append(" buffers=").append(bufs);
        }
        if (fields.quantization() != null) {
            b.append(" quantization=").append(fields.quantization());
        }
        if (!fields.metadata().isEmpty()) {
            b.append(" metadata=").append(fields.metadata().keySet());
        }
        return b.toString();
    }

    private boolean fitsDense(BufferSpec b) {
        try {
            return b.byteSize() == elementType().byteSizeOf(elementCount());
        } catch (ArithmeticException e) {
            return false;
        }
    }

    /**
     * Collects the fields of a new descriptor; {@link #build()} has the native library validate
     * and encode them. Not thread-safe; reusable (each {@code build()} makes a new descriptor).
     */
    public static final class Builder {
        private final ElementType elementType;
        private final Shape shape;
        private Layout layout = Layout.rowMajor();
        private long byteOffset;
        private final List<BufferSpec> buffers = new ArrayList<>();
        private Quantization quantization;
        private String name;
        private final Map<String, byte[]> metadata = new LinkedHashMap<>();

        private Builder(ElementType elementType, Shape shape) {
            this.elementType = Objects.requireNonNull(elementType, "elementType");
            this.shape = Objects.requireNonNull(shape, "shape");
        }

        /** Sets the layout (default {@link Layout#rowMajor()}). */
        public Builder layout(Layout layout) {
            this.layout = Objects.requireNonNull(layout, "layout");
            return this;
        }

        /**
         * Sets where element 0 starts inside buffer 0, in bytes (default 0).
         *
         * @throws IllegalArgumentException if negative
         */
        public Builder byteOffset(long byteOffset) {
            if (byteOffset < 0) {
                throw new IllegalArgumentException("negative byte offset " + byteOffset);
            }
            this.byteOffset = byteOffset;
            return this;
        }

        /**
         * Appends a buffer-table entry. With none, a dense layout gets one CPU buffer of exactly
         * the needed size at 64-byte alignment.
         */
        public Builder buffer(BufferSpec spec) {
            buffers.add(Objects.requireNonNull(spec, "spec"));
            return this;
        }

        /** Replaces the buffer table. */
        public Builder buffers(List<BufferSpec> specs) {
            buffers.clear();
            for (BufferSpec s : specs) {
                buffer(s);
            }
            return this;
        }

        /** Sets the quantization block; {@code null} clears it. */
        public Builder quantization(Quantization quantization) {
            this.quantization = quantization;
            return this;
        }

        /** Sets the name (UTF-8, at most 4096 bytes, no NUL; checked by {@link #build()}); {@code null} clears it. */
        public Builder name(String name) {
            this.name = name;
            return this;
        }

        /**
         * Adds or replaces a metadata entry (key: 1–256 UTF-8 bytes; value: at most 64 KiB; at
         * most 256 entries; checked by {@link #build()}). The value is copied.
         */
        public Builder metadata(String key, byte[] value) {
            metadata.put(Objects.requireNonNull(key, "key"), value.clone());
            return this;
        }

        /**
         * Adds or replaces a metadata entry whose value is {@code value} in UTF-8.
         *
         * @throws IllegalArgumentException if {@code value} has an unpaired UTF-16 surrogate
         *     (it has no UTF-8 form)
         */
        public Builder metadata(String key, String value) {
            try {
                return metadata(key, dev.hurray.internal.Utf8.encode(value, "metadata value"));
            } catch (HurrayException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
        }

        /**
         * Validates and encodes the descriptor in the native library.
         *
         * @throws HurrayException with the native status and message, e.g.
         *     {@link Status#INVALID_LAYOUT} (stride count differs from the rank, wrong buffer
         *     count), {@link Status#BUFFER_TOO_SMALL} (elements reach past buffer 0),
         *     {@link Status#INVALID_ALIGNMENT}, {@link Status#INVALID_SHAPE} (byte count
         *     overflow), {@link Status#INVALID_ARGUMENT}, {@link Status#DUPLICATE_NAME},
         *     {@link Status#LIMIT_EXCEEDED}, {@link Status#UNSUPPORTED}
         */
        public TensorDescriptor build() throws HurrayException {
            DescriptorFields f = new DescriptorFields(elementType, shape, layout, byteOffset,
                    List.copyOf(buffers), quantization, name, metadata);
            NativeDescriptor.Built b = NativeDescriptor.build(f);
            return new TensorDescriptor(b.fields(), b.descriptor());
        }
    }
}
