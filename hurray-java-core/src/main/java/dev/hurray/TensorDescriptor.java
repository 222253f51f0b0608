package dev.hurray;

import dev.hurray.internal.DescriptorFields;
import dev.hurray.internal.DescriptorLimits;
import dev.hurray.internal.NativeDescriptor;
import dev.hurray.internal.Utf8;
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
 * Java never encodes or decodes descriptor bytes. A dense, strided or per-tensor/per-channel
 * quantized descriptor is a plain Java value: {@link Builder#build()} checks the name and
 * metadata against the format's published limits ({@code HURRAY_MAX_NAME_BYTES} and friends in
 * {@code hurray.h}; a name and metadata long enough to bring the encoding near
 * {@code HURRAY_MAX_DESCRIPTOR_BYTES} are measured by the library, which encodes them) and has the native library validate the rest (element type, shape, layout,
 * byte offset, buffer table, quantization) once per distinct combination of them, which it
 * remembers; the default buffer table (one CPU buffer of exactly the needed size at 64-byte
 * alignment) is the one the library chose. A writer hands the fields to the native encoder,
 * which validates and encodes them as it writes: no native descriptor is made. Sparse, paged
 * and block-quantized descriptors are built natively at once ({@code hurray_descriptor_builder_*}).
 * A native twin (handle or encoding) is made only when something needs one ({@link #encode()},
 * dequantizing, a container writer).
 *
 * <h2>Native twin</h2>
 * The twin, once made, is kept: a built descriptor owns the handle or the encoding the library
 * returned; a descriptor read from a container keeps a copy of its encoded bytes. An owned
 * handle is bound to an automatic arena, so the garbage collector frees it once this object is
 * unreachable. Nothing needs closing.
 *
 * <h2>Values</h2>
 * Immutable and thread-safe. {@code equals}/{@code hashCode} compare all fields (metadata as a
 * map: order-insensitive, values by content). {@link #toString()} is readable, e.g.
 * {@code float32[2,3] row-major}.
 */
public final class TensorDescriptor {
    private final DescriptorFields fields;
    /** The native twin, made on first need when null. */
    private volatile NativeDescriptor nativeDescriptor;
    /** True when {@link #fields} say everything (no sparse, paging, composite or block quantization). */
    private final boolean plain;
    /** The name and metadata keys in UTF-8, for the writer (made on first need). */
    private byte[] nameUtf8;
    private byte[][] keysUtf8;

    private TensorDescriptor(DescriptorFields fields, NativeDescriptor nativeDescriptor, boolean plain) {
        this.fields = fields;
        this.nativeDescriptor = nativeDescriptor;
        this.plain = plain;
    }

    /** The fields (internal; shared, never changed). */
    DescriptorFields fields() {
        return fields;
    }

    /**
     * Wraps fields read from a native descriptor and its native twin (null: made from the
     * fields when needed, allowed only when {@code plain}).
     *
     * @param plain the fields describe the descriptor completely: a version-1 descriptor
     */
    static TensorDescriptor fromNative(DescriptorFields fields, NativeDescriptor nativeDescriptor, boolean plain) {
        return new TensorDescriptor(fields, nativeDescriptor, plain && isPlain(fields));
    }

    /** Wraps fields and the native twin of a descriptor of any kind. */
    static TensorDescriptor fromNative(DescriptorFields fields, NativeDescriptor nativeDescriptor) {
        return new TensorDescriptor(fields, nativeDescriptor, false);
    }

    /** Dense or strided, unquantized or quantized per tensor or per channel, or cast. */
    private static boolean isPlain(DescriptorFields f) {
        Layout.Kind k = f.layout().kind();
        Quantization q = f.quantization();
        return (k == Layout.Kind.ROW_MAJOR || k == Layout.Kind.COLUMN_MAJOR || k == Layout.Kind.STRIDED)
                && (q == null || q instanceof Quantization.PerTensorAffine || q instanceof Quantization.PerChannelAffine
                        || q instanceof Quantization.Cast);
    }

    /** True when a writer can hand this descriptor's fields to the encoder (no twin needed). */
    boolean isPlain() {
        return plain;
    }

    /** The name's UTF-8 bytes, or null (for the writer). */
    byte[] nameUtf8() {
        byte[] b = nameUtf8;
        if (b == null && fields.name() != null) {
            b = Utf8.encodeOrNull(fields.name());
            nameUtf8 = b;
        }
        return b;
    }

    /** The metadata keys' UTF-8 bytes in order (for the writer). */
    byte[][] keysUtf8() {
        byte[][] k = keysUtf8;
        if (k == null) {
            k = new byte[fields.metadata().size()][];
            int i = 0;
            for (String key : fields.metadata().keySet()) {
                k[i++] = Utf8.encodeOrNull(key);
            }
            keysUtf8 = k;
        }
        return k;
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
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(elementType + shape.toString() + ": " + e.getMessage(), e.getCause());
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
        return new TensorDescriptor(n.read(), n, false);
    }

    /**
     * The descriptor's encoding as produced by the native library (a copy; bytes).
     *
     * @throws IllegalArgumentException if the native library refuses the fields (a rule not
     *     checked by {@link Builder#build()}; the {@link HurrayException} is the cause)
     */
    public byte[] encode() {
        try {
            return nativeTwin().encoded();
        } catch (HurrayException e) {
            throw new IllegalArgumentException("the descriptor cannot be encoded: " + e.getMessage(), e);
        }
    }

    /** True if this descriptor was read from a stream with exactly these encoded bytes. */
    boolean hasEncoding(MemorySegment encodedView) {
        NativeDescriptor n = nativeDescriptor;
        return n != null && n.hasEncoding(encodedView);
    }

    /** The native twin (handle and/or encoding), made from the fields on first need. */
    NativeDescriptor nativeTwin() throws HurrayException {
        NativeDescriptor n = nativeDescriptor;
        if (n == null) {
            n = NativeDescriptor.build(fields).descriptor();
            nativeDescriptor = n;
        }
        return n;
    }

    /** The native descriptor handle (owned, cached); for the reader and writer. */
    MemorySegment nativeHandle() throws HurrayException {
        return nativeTwin().handle();
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
            DescriptorFields f = fields;
            DescriptorFields renamed = new DescriptorFields(f.elementType(), f.shape(), f.layout(), f.byteOffset(),
                    f.buffers(), f.quantization(), name, f.metadata());
            if (plain) {
                byte[] utf8 = DescriptorLimits.checkName(name);
                NativeDescriptor measured = DescriptorLimits.checkEncodedSize(renamed, utf8, keysUtf8());
                TensorDescriptor d = new TensorDescriptor(renamed, measured, true);
                d.nameUtf8 = utf8;
                d.keysUtf8 = keysUtf8;
                return d;
            }
            return new TensorDescriptor(renamed, nativeTwin().withName(Utf8.encode(name, "name")), false);
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
        if (plain) {
            return Optional.empty();
        }
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

    /**
     * The metadata value of {@code key} decoded as UTF-8, if present.
     *
     * @throws NullPointerException if {@code key} is null
     */
    public Optional<String> metadataString(String key) {
        byte[] v = fields.metadata().get(Objects.requireNonNull(key, "key"));
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
        if (!fields.metadata().isEmpty()) {
            // The descriptor's values are never changed: the builder shares them until it is
            // changed itself.
            b.metadata = fields.metadata();
            b.metadataShared = true;
        }
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
            b.append(" name=\"").append(TensorNames.forMessage(fields.name())).append('"');
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
     * Collects the fields of a new descriptor; {@link #build()} validates them (see the class
     * documentation). Not thread-safe; reusable (each {@code build()} makes a new descriptor).
     */
    public static final class Builder {
        private final ElementType elementType;
        private final Shape shape;
        private Layout layout = Layout.rowMajor();
        private long byteOffset;
        private final List<BufferSpec> buffers = new ArrayList<>();
        private Quantization quantization;
        private String name;
        // Null until the first entry; after build() (or toBuilder()) the map belongs to a
        // descriptor too, and the next change copies it first.
        private Map<String, byte[]> metadata;
        private boolean metadataShared;

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
         * Adds a metadata entry at the end (key: 1–256 UTF-8 bytes, unique; value: at most
         * 64 KiB; at most 256 entries; the limits are checked by {@link #build()}). The value is
         * copied. A key is given once, as the C ABI requires; {@link #replaceMetadata(String, byte[])}
         * changes the value of a key already present.
         *
         * @throws IllegalArgumentException if the builder already has an entry for {@code key};
         *     its cause is a {@link HurrayException} with {@link Status#DUPLICATE_NAME}
         */
        public Builder metadata(String key, byte[] value) {
            Objects.requireNonNull(key, "key");
            byte[] copy = value.clone();
            if (metadata == null) {
                // The common single entry as an immutable one-entry map (no hash table); the
                // next change copies it into an ordered map, as for a map shared with a build.
                metadata = Map.of(key, copy);
                metadataShared = true;
                return this;
            }
            if (metadata.containsKey(key)) {
                HurrayException e = new HurrayException(Status.DUPLICATE_NAME, "metadata key '" + key
                        + "' is already set (replaceMetadata changes its value)", null);
                throw new IllegalArgumentException(e.getMessage(), e);
            }
            entries().put(key, copy);
            return this;
        }

        /**
         * Adds a metadata entry whose value is {@code value} in UTF-8, as {@link #metadata(String, byte[])}.
         *
         * @throws IllegalArgumentException if {@code value} has an unpaired UTF-16 surrogate
         *     (it has no UTF-8 form), or the builder already has an entry for {@code key}
         */
        public Builder metadata(String key, String value) {
            return metadata(key, utf8Value(value));
        }

        /**
         * Sets the value of metadata entry {@code key}: replaces the value in place (the entry
         * keeps its position) or, when there is none, adds the entry at the end. The value is
         * copied; the limits are those of {@link #metadata(String, byte[])}.
         */
        public Builder replaceMetadata(String key, byte[] value) {
            Objects.requireNonNull(key, "key");
            byte[] copy = value.clone();
            entries().put(key, copy);
            return this;
        }

        /**
         * Sets the value of metadata entry {@code key} to {@code value} in UTF-8, as
         * {@link #replaceMetadata(String, byte[])}.
         *
         * @throws IllegalArgumentException if {@code value} has an unpaired UTF-16 surrogate
         */
        public Builder replaceMetadata(String key, String value) {
            return replaceMetadata(key, utf8Value(value));
        }

        private static byte[] utf8Value(String value) {
            try {
                return Utf8.encode(value, "metadata value");
            } catch (HurrayException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
        }

        /** The entries, ready for a change (a map shared with a built descriptor is copied first). */
        private Map<String, byte[]> entries() {
            if (metadata == null) {
                metadata = new LinkedHashMap<>(4);
            } else if (metadataShared) {
                metadata = new LinkedHashMap<>(metadata);
                metadataShared = false;
            }
            return metadata;
        }

        /**
         * Validates the fields (see the class documentation) and makes the descriptor. A field
         * the format refuses is a caller mistake, so it is unchecked (hurray-java-core/README.md
         * §Exceptions).
         *
         * @throws IllegalArgumentException for fields the format refuses; its cause is the
         *     {@link HurrayException} with the status and message, e.g.
         *     {@link Status#INVALID_LAYOUT} (stride count differs from the rank, wrong buffer
         *     count), {@link Status#BUFFER_TOO_SMALL} (elements reach past buffer 0),
         *     {@link Status#INVALID_ALIGNMENT}, {@link Status#INVALID_SHAPE} (byte count
         *     overflow), {@link Status#INVALID_ARGUMENT}, {@link Status#DUPLICATE_NAME},
         *     {@link Status#LIMIT_EXCEEDED}, {@link Status#UNSUPPORTED}
         * @throws IllegalStateException if the native library fails for another reason
         *     ({@link Status#OUT_OF_MEMORY}, {@link Status#INTERNAL_PANIC}); the
         *     {@link HurrayException} is the cause
         */
        public TensorDescriptor build() {
            try {
                return buildChecked();
            } catch (HurrayException e) {
                throw e.asCallerMistake();
            }
        }

        /**
         * As {@link #build()}, reporting a refusal as the checked {@link HurrayException}: for
         * the I/O and input-data calls (a writer's name, a DLPack import) whose contract is a
         * checked error.
         */
        TensorDescriptor buildChecked() throws HurrayException {
            Map<String, byte[]> md = metadata == null ? Collections.emptyMap() : metadata;
            DescriptorFields f = new DescriptorFields(elementType, shape, layout, byteOffset,
                    buffers.isEmpty() ? List.of() : List.copyOf(buffers), quantization, name, md);
            metadataShared = metadata != null;
            if (!isPlain(f)) {
                NativeDescriptor.Built b = NativeDescriptor.build(f);
                return new TensorDescriptor(b.fields(), b.descriptor(), false);
            }
            byte[] nameBytes = name == null ? null : DescriptorLimits.checkName(name);
            byte[][] keys = DescriptorLimits.checkMetadata(md);
            List<BufferSpec> table = DescriptorLimits.validatedTable(f);
            NativeDescriptor measured = DescriptorLimits.checkEncodedSize(f, nameBytes, keys);
            TensorDescriptor d = new TensorDescriptor(new DescriptorFields(elementType, shape, layout, byteOffset,
                    table, quantization, name, md), measured, true);
            d.nameUtf8 = nameBytes;
            d.keysUtf8 = keys;
            return d;
        }
    }
}
