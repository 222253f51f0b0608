package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.BufferSpec;
import dev.hurray.DeviceTag;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Shape;
import dev.hurray.Status;
import dev.hurray.SyncMode;
import dev.hurray.ffm.HurrayBlockQuant;
import dev.hurray.ffm.HurrayBufferSpec;
import dev.hurray.ffm.HurrayDescriptorFields;
import dev.hurray.ffm.HurrayQuantization;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A native descriptor handle owned by a Java {@link dev.hurray.TensorDescriptor}, and the
 * conversions between native descriptors and {@link DescriptorFields}.
 *
 * <p><b>Ownership.</b> An owned {@code HurrayDescriptor*} is bound to its own
 * {@link Arena#ofAuto() automatic arena} with {@code reinterpret(arena, cleanup)}: when the
 * Java object holding the segment becomes unreachable, the garbage collector's cleaner calls
 * {@code hurray_descriptor_destroy} exactly once (on the cleaner thread; descriptors are
 * plain immutable data on the native side, so any thread may destroy them). A downcall that
 * takes the segment keeps its arena alive for the duration of the call, so a descriptor
 * cannot be freed while it is being written. Descriptors read from a stream keep a copy of
 * their encoded bytes instead and decode them into an owned handle on first use.
 *
 * <p>Thread-safe: the handle is created at most once ({@code synchronized}) and then only read.
 */
public final class NativeDescriptor {
    private final byte[] encoded;
    private volatile MemorySegment handle;

    private NativeDescriptor(MemorySegment handle, byte[] encoded) {
        this.handle = handle;
        this.encoded = encoded;
    }

    /** The owned handle, decoding the stored encoding on first use. */
    public MemorySegment handle() throws HurrayException {
        MemorySegment h = handle;
        if (h != null) {
            return h;
        }
        synchronized (this) {
            if (handle == null) {
                handle = decode(encoded);
            }
            return handle;
        }
    }

    /** Decodes {@code bytes} into an owned descriptor handle. */
    private static MemorySegment decode(byte[] bytes) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment src = a.allocate(Math.max(1, bytes.length));
            MemorySegment.copy(bytes, 0, src, JAVA_BYTE, 0, bytes.length);
            MemorySegment out = a.allocate(ADDRESS);
            Native.check(hurray_h.hurray_descriptor_decode(src, bytes.length, out));
            return own(out.get(ADDRESS, 0));
        }
    }

    /** Binds an owned descriptor pointer to an automatic arena whose cleanup destroys it. */
    private static MemorySegment own(MemorySegment raw) {
        return raw.reinterpret(Arena.ofAuto(), NativeDescriptor::destroyQuietly);
    }

    private static void destroyQuietly(MemorySegment h) {
        hurray_h.hurray_descriptor_destroy(h);
    }

    /**
     * The encoding of a live descriptor ({@code hurray_descriptor_encoded}) as a view of the
     * native bytes; valid only while the descriptor lives, so callers copy what they keep.
     */
    public static MemorySegment encodedView(MemorySegment descriptor) throws HurrayException {
        MemorySegment s = Native.scratch();
        Native.check(hurray_h.hurray_descriptor_encoded(descriptor, s, s.asSlice(8)));
        return s.get(ADDRESS, 0).reinterpret(s.get(JAVA_LONG, 8));
    }

    /**
     * Every fixed-size field of a live descriptor in one call ({@code hurray_descriptor_fields}),
     * as a {@code HurrayDescriptorFields} in this thread's scratch area: valid until the next
     * call that uses the scratch area's fields slot, and its pointers only while the descriptor
     * lives.
     */
    public static MemorySegment fields(MemorySegment descriptor) throws HurrayException {
        MemorySegment f = Native.scratch().asSlice(Native.FIELDS_OFFSET, HurrayDescriptorFields.layout().byteSize());
        Native.check(hurray_h.hurray_descriptor_fields(descriptor, f));
        return f;
    }

    /** The encoding view (as {@link #encodedView}) taken from {@link #fields}' result. */
    public static MemorySegment encodedView(MemorySegment descriptor, MemorySegment fields) {
        return HurrayDescriptorFields.encoded(fields).reinterpret(HurrayDescriptorFields.encoded_len(fields));
    }

    /**
     * A lazily-decoded native twin of a descriptor read from a stream, holding a copy of its
     * encoding (from {@link #encodedView}).
     */
    public static NativeDescriptor copyOf(MemorySegment encodedView) {
        return new NativeDescriptor(null, encodedView.toArray(JAVA_BYTE));
    }

    /** True if this twin's stored encoding equals {@code encodedView} byte for byte. */
    public boolean hasEncoding(MemorySegment encodedView) {
        return encoded != null && encoded.length == encodedView.byteSize()
                && MemorySegment.mismatch(encodedView, 0, encoded.length, MemorySegment.ofArray(encoded), 0, encoded.length) == -1;
    }

    /** Decodes an encoded descriptor now (validating it) into an owned twin. */
    public static NativeDescriptor decodeNow(byte[] bytes) throws HurrayException {
        byte[] copy = bytes.clone();
        return new NativeDescriptor(decode(copy), copy);
    }

    /** A copy of the encoded descriptor bytes (docs/spec/descriptor.md), from the native library. */
    public byte[] encoded() throws HurrayException {
        if (encoded != null) {
            return encoded.clone();
        }
        MemorySegment s = Native.scratch();
        Native.check(hurray_h.hurray_descriptor_encoded(handle(), s, s.asSlice(8)));
        return s.get(ADDRESS, 0).reinterpret(s.get(JAVA_LONG, 8)).toArray(JAVA_BYTE);
    }

    /**
     * Builds a descriptor through the native builder ({@code hurray_descriptor_builder_*}),
     * which validates every field; the result owns the new handle.
     *
     * @throws HurrayException with the native status and message of the first failing call
     */
    public static NativeDescriptor build(DescriptorFields f) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment slot = a.allocate(ADDRESS);
            long[] dims = f.shape().dims();
            MemorySegment dimSeg = dims.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_LONG, dims);
            Native.check(hurray_h.hurray_descriptor_builder_new((byte) f.elementType().code(), dimSeg, dims.length, slot));
            MemorySegment builder = slot.get(ADDRESS, 0);
            try {
                Layout layout = f.layout();
                long[] strides = layout.strides();
                MemorySegment strideSeg = strides.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_LONG, strides);
                Native.check(hurray_h.hurray_descriptor_builder_set_layout(builder, (byte) layout.kind().code(), strideSeg, strides.length));
                if (f.byteOffset() != 0) {
                    Native.check(hurray_h.hurray_descriptor_builder_set_byte_offset(builder, f.byteOffset()));
                }
                if (f.name() != null) {
                    byte[] name = f.name().getBytes(StandardCharsets.UTF_8);
                    Native.check(hurray_h.hurray_descriptor_builder_set_name(builder, bytes(a, name), name.length));
                }
                for (BufferSpec b : f.buffers()) {
                    MemorySegment spec = HurrayBufferSpec.allocate(a);
                    HurrayBufferSpec.byte_size(spec, b.byteSize());
                    HurrayBufferSpec.alignment(spec, b.alignment());
                    HurrayBufferSpec.device_tag(spec, (byte) b.deviceTag().code());
                    HurrayBufferSpec.sync_mode(spec, (byte) b.syncMode().code());
                    Native.check(hurray_h.hurray_descriptor_builder_add_buffer(builder, spec));
                }
                if (f.quantization() instanceof Quantization.BlockScaled b) {
                    MemorySegment q = HurrayBlockQuant.allocate(a);
                    HurrayBlockQuant.kind(q, (byte) b.code());
                    HurrayBlockQuant.dequantized_type(q, (byte) b.dequantized().code());
                    HurrayBlockQuant.scale_type(q, (byte) b.scaleType().code());
                    HurrayBlockQuant.axis(q, b.axis());
                    HurrayBlockQuant.block(q, b.block());
                    HurrayBlockQuant.block2(q, b.block2());
                    Native.check(hurray_h.hurray_descriptor_builder_set_block_quant(builder, q));
                } else if (f.quantization() != null) {
                    MemorySegment q = HurrayQuantization.allocate(a);
                    toNative(f.quantization(), q);
                    Native.check(hurray_h.hurray_descriptor_builder_set_quantization(builder, q));
                }
                for (Map.Entry<String, byte[]> e : f.metadata().entrySet()) {
                    byte[] key = e.getKey().getBytes(StandardCharsets.UTF_8);
                    byte[] value = e.getValue();
                    Native.check(hurray_h.hurray_descriptor_builder_add_metadata(
                            builder, bytes(a, key), key.length, bytes(a, value), value.length));
                }
                Native.check(hurray_h.hurray_descriptor_builder_build(builder, slot));
                return new NativeDescriptor(own(slot.get(ADDRESS, 0)), null);
            } finally {
                slot.set(ADDRESS, 0, builder);
                hurray_h.hurray_descriptor_builder_destroy(slot);
            }
        }
    }

    private static MemorySegment bytes(Arena a, byte[] b) {
        if (b.length == 0) {
            return MemorySegment.NULL;
        }
        return a.allocateFrom(JAVA_BYTE, b);
    }

    private static void toNative(Quantization q, MemorySegment s) {
        HurrayQuantization.kind(s, (byte) q.code());
        HurrayQuantization.dequantized_type(s, (byte) q.dequantized().code());
        switch (q) {
            case Quantization.PerTensorAffine p -> {
                HurrayQuantization.scale(s, p.scale());
                HurrayQuantization.bias(s, p.bias());
            }
            case Quantization.PerChannelAffine p -> HurrayQuantization.axis(s, p.axis());
            case Quantization.Cast c -> {
                // kind and dequantized type only
            }
            case Quantization.BlockScaled b -> throw new IllegalStateException("block kinds use HurrayBlockQuant");
        }
    }

    /** Reads the fields of this descriptor from its native handle. */
    public DescriptorFields read() throws HurrayException {
        return read(handle());
    }

    /**
     * Reads the fields of a live (owned or borrowed) native descriptor: the fixed ones with one
     * {@code hurray_descriptor_fields} call, then each buffer-table and metadata entry. Uses the
     * thread's scratch area (no upcalls).
     *
     * @throws HurrayException for a status the accessors report, or {@link Status#LIMIT_EXCEEDED}
     *     when a dimension or the element count exceeds what a Java {@link Shape} holds
     *     ({@code Long.MAX_VALUE})
     */
    public static DescriptorFields read(MemorySegment d) throws HurrayException {
        return read(d, fields(d));
    }

    /**
     * As {@link #read(MemorySegment)}, with {@code f} the result of {@link #fields(MemorySegment)}
     * for {@code d}, taken just before (it lives in the scratch area).
     */
    public static DescriptorFields read(MemorySegment d, MemorySegment f) throws HurrayException {
        MemorySegment s = Native.scratch();
        int typeCode = Byte.toUnsignedInt(HurrayDescriptorFields.element_type(f));
        int rank = (int) HurrayDescriptorFields.rank(f);
        long[] dims = new long[rank];
        if (rank > 0) {
            MemorySegment p = HurrayDescriptorFields.dims(f).reinterpret(8L * rank);
            for (int i = 0; i < rank; i++) {
                dims[i] = p.getAtIndex(JAVA_LONG, i);
            }
        }
        int layoutCode = Byte.toUnsignedInt(HurrayDescriptorFields.layout(f));
        Layout.Kind kind = Layout.Kind.fromCode(layoutCode);
        Layout layout;
        if (kind == Layout.Kind.STRIDED) {
            long[] strides = new long[rank];
            if (rank > 0) {
                MemorySegment p = HurrayDescriptorFields.strides(f).reinterpret(8L * rank);
                for (int i = 0; i < rank; i++) {
                    strides[i] = p.getAtIndex(JAVA_LONG, i);
                }
            }
            layout = Layout.strided(strides);
        } else {
            layout = kind == Layout.Kind.ROW_MAJOR ? Layout.rowMajor() : Layout.columnMajor();
        }
        long byteOffset = HurrayDescriptorFields.byte_offset(f);
        int count = (int) HurrayDescriptorFields.buffer_count(f);
        Quantization quantization = fromNative(d, HurrayDescriptorFields.quantization(f));
        String name = null;
        MemorySegment namePtr = HurrayDescriptorFields.name(f);
        if (!namePtr.equals(MemorySegment.NULL)) {
            long len = HurrayDescriptorFields.name_len(f);
            name = new String(namePtr.reinterpret(len).toArray(JAVA_BYTE), StandardCharsets.UTF_8);
        }
        int entries = (int) HurrayDescriptorFields.metadata_count(f);
        List<BufferSpec> buffers = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            Native.check(hurray_h.hurray_descriptor_buffer_spec(d, i, s));
            long size = HurrayBufferSpec.byte_size(s);
            if (size < 0) {
                throw tooLarge("buffer " + i + " declares " + Long.toUnsignedString(size) + " bytes");
            }
            buffers.add(new BufferSpec(size, HurrayBufferSpec.alignment(s),
                    DeviceTag.fromCode(Byte.toUnsignedInt(HurrayBufferSpec.device_tag(s))),
                    SyncMode.fromCode(Byte.toUnsignedInt(HurrayBufferSpec.sync_mode(s)))));
        }
        Map<String, byte[]> metadata = entries == 0 ? Collections.emptyMap() : new LinkedHashMap<>();
        for (int i = 0; i < entries; i++) {
            Native.check(hurray_h.hurray_descriptor_metadata_get(d, i, s, s.asSlice(8), s.asSlice(16), s.asSlice(24)));
            String key = new String(s.get(ADDRESS, 0).reinterpret(s.get(JAVA_LONG, 8)).toArray(JAVA_BYTE), StandardCharsets.UTF_8);
            byte[] value = s.get(ADDRESS, 16).reinterpret(s.get(JAVA_LONG, 24)).toArray(JAVA_BYTE);
            metadata.put(key, value);
        }
        Shape shape;
        try {
            shape = Shape.of(dims);
        } catch (IllegalArgumentException e) {
            throw tooLarge("shape " + unsignedDims(dims) + " is beyond what a Java Shape holds (Long.MAX_VALUE)");
        }
        return new DescriptorFields(ElementType.fromCode(typeCode), shape, layout, byteOffset,
                List.copyOf(buffers), quantization, name, metadata);
    }

    private static Quantization fromNative(MemorySegment d, MemorySegment s) throws HurrayException {
        int kind = Byte.toUnsignedInt(HurrayQuantization.kind(s));
        if (kind == hurray_h.HURRAY_QUANT_NONE()) {
            return null;
        }
        if (kind >= hurray_h.HURRAY_QUANT_NF4() && kind <= hurray_h.HURRAY_QUANT_GGUF_Q4_0()) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment b = HurrayBlockQuant.allocate(a);
                Native.check(hurray_h.hurray_descriptor_block_quant(d, b));
                return Quantization.ofBlock(kind,
                        ElementType.fromCode(Byte.toUnsignedInt(HurrayBlockQuant.dequantized_type(b))),
                        ElementType.fromCode(Byte.toUnsignedInt(HurrayBlockQuant.scale_type(b))),
                        HurrayBlockQuant.axis(b), HurrayBlockQuant.block(b), HurrayBlockQuant.block2(b));
            }
        }
        ElementType deq = ElementType.fromCode(Byte.toUnsignedInt(HurrayQuantization.dequantized_type(s)));
        if (kind == hurray_h.HURRAY_QUANT_PER_TENSOR_AFFINE()) {
            return new Quantization.PerTensorAffine(HurrayQuantization.scale(s), HurrayQuantization.bias(s), deq);
        }
        if (kind == hurray_h.HURRAY_QUANT_PER_CHANNEL_AFFINE()) {
            return new Quantization.PerChannelAffine(HurrayQuantization.axis(s), deq);
        }
        if (kind == hurray_h.HURRAY_QUANT_CAST()) {
            return new Quantization.Cast(deq);
        }
        throw new HurrayException(Status.UNSUPPORTED, "quantization kind " + kind + " is not known to this Java API", null);
    }

    private static HurrayException tooLarge(String what) {
        return new HurrayException(Status.LIMIT_EXCEEDED, what, null);
    }

    private static String unsignedDims(long[] dims) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < dims.length; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(Long.toUnsignedString(dims[i]));
        }
        return b.append(']').toString();
    }
}
