package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.BufferSpec;
import dev.hurray.CompositeMembership;
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
import dev.hurray.ffm.HurrayDecodedBuffer;
import dev.hurray.ffm.HurrayMetadataView;
import dev.hurray.ffm.HurrayDescriptorFields;
import dev.hurray.ffm.HurrayDescriptorSpec;
import dev.hurray.ffm.HurrayCompositeMembership;
import dev.hurray.ffm.HurrayPaging;
import dev.hurray.ffm.HurrayQuantization;
import dev.hurray.ffm.HurraySparse;
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
        MemorySegment s = ScratchPool.borrow();
        try {
            Native.check(hurray_h.hurray_descriptor_encoded(descriptor, s, s.asSlice(8)));
            return Native.view(s.get(ADDRESS, 0), s.get(JAVA_LONG, 8));
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /**
     * Every fixed-size field of a live descriptor in one call ({@code hurray_descriptor_fields}),
     * as a {@code HurrayDescriptorFields} in the {@code fields} part of {@code area} (an area
     * the caller borrowed from {@link ScratchPool}): valid while the caller holds the area, and
     * its pointers only while the descriptor lives.
     */
    public static MemorySegment fields(MemorySegment descriptor, MemorySegment area) throws HurrayException {
        MemorySegment f = Native.fieldsIn(area);
        Native.check(hurray_h.hurray_descriptor_fields(descriptor, f));
        return f;
    }

    /** The encoding view (as {@link #encodedView}) taken from {@link #fields}' result. */
    public static MemorySegment encodedView(MemorySegment descriptor, MemorySegment fields) {
        return Native.view(HurrayDescriptorFields.encoded(fields), HurrayDescriptorFields.encoded_len(fields));
    }

    /**
     * A lazily-decoded native twin of a descriptor read from a stream, holding a copy of its
     * encoding (from {@link #encodedView}).
     */
    public static NativeDescriptor copyOf(MemorySegment encodedView) {
        return new NativeDescriptor(null, Native.bytes(encodedView, 0, encodedView.byteSize()));
    }

    /** True if this twin's stored encoding equals {@code encodedView} byte for byte. */
    public boolean hasEncoding(MemorySegment encodedView) {
        if (encoded == null || encoded.length != encodedView.byteSize()) {
            return false;
        }
        MemorySegment mine = encodedSegment;
        if (mine == null) {
            encodedSegment = mine = MemorySegment.ofArray(encoded);
        }
        return MemorySegment.mismatch(encodedView, 0, encoded.length, mine, 0, encoded.length) == -1;
    }

    /** {@link #encoded} as a heap segment, made on the first {@link #hasEncoding} (a reader compares every tensor's). */
    private MemorySegment encodedSegment;

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
        MemorySegment v = encodedView(handle());
        return Native.bytes(v, 0, v.byteSize());
    }

    /** Bytes of the area {@link #build} lays a {@code HurrayDescriptorSpec} out in ({@link ScratchPool#BUILD}). */
    private static final long BUILD_AREA_BYTES = ScratchPool.BUILD_BYTES;

    /**
     * Builds, validates and encodes a descriptor with one {@code hurray_descriptor_new} call
     * (the builder's rules, one downcall instead of one per field), and returns it with the
     * fields it was built from (buffer 0 read back when the native library chose the default
     * buffer). The spec is laid out in an area borrowed from {@link ScratchPool#BUILD} (an arena
     * for descriptors whose dimensions, names and metadata exceed 16 KiB).
     *
     * @throws HurrayException with the native status and message of the failing rule
     */
    public static Built build(DescriptorFields f) throws HurrayException {
        Layout.Kind kind = f.layout().kind();
        boolean plainLayout = kind == Layout.Kind.ROW_MAJOR || kind == Layout.Kind.COLUMN_MAJOR || kind == Layout.Kind.STRIDED;
        // The one-call spec carries the version-1 fields; sparse and paged layouts and block
        // quantization go through the builder's own setters.
        if (!plainLayout || f.quantization() != null && !(f.quantization() instanceof Quantization.PerTensorAffine
                || f.quantization() instanceof Quantization.PerChannelAffine || f.quantization() instanceof Quantization.Cast)) {
            NativeDescriptor n = buildStepwise(f);
            return new Built(n, n.read());
        }
        byte[] name = f.name() == null ? null : Utf8.encode(f.name(), "name");
        int entries = f.metadata().size();
        byte[][] keys = new byte[entries][];
        byte[][] values = new byte[entries][];
        long need = HurrayDescriptorSpec.sizeof() + 8L * f.shape().rank() + 8L * f.layout().strides().length + HurrayBufferSpec.sizeof() * f.buffers().size()
                + HurrayMetadataView.sizeof() * entries + (name == null ? 0 : name.length) + 64;
        int i = 0;
        for (Map.Entry<String, byte[]> e : f.metadata().entrySet()) {
            keys[i] = Utf8.encode(e.getKey(), "metadata key");
            values[i] = e.getValue();
            need += keys[i].length + values[i].length;
            i++;
        }
        if (need <= BUILD_AREA_BYTES) {
            MemorySegment area = ScratchPool.BUILD.lend();
            try {
                return build(f, name, keys, values, area);
            } finally {
                ScratchPool.BUILD.takeBack(area);
            }
        }
        try (Arena a = Arena.ofConfined()) {
            return build(f, name, keys, values, a.allocate(need, 64));
        }
    }

    /** The most buffers a descriptor has ({@code HurrayTensorSpec.payload_count}'s limit). */
    private static final int MAX_TABLE = 64;

    /**
     * The buffer table of a descriptor with these fields (its default one when {@code f} has
     * none), after the native library checked every rule of {@code hurray_descriptor_new} with
     * one {@code hurray_descriptor_check} call; no descriptor is made. Only for fields a
     * {@code HurrayDescriptorSpec} expresses (row-major, column-major and strided layouts,
     * per-tensor or per-channel affine and cast quantization), without name or metadata.
     *
     * @throws HurrayException the library's refusal
     */
    public static List<BufferSpec> checkedTable(DescriptorFields f) throws HurrayException {
        long need = HurrayDescriptorSpec.sizeof() + 8L * f.shape().rank() + 8L * f.layout().strides().length
                + HurrayBufferSpec.sizeof() * (f.buffers().size() + MAX_TABLE) + 8 + 64;
        if (need > BUILD_AREA_BYTES) {
            try (Arena a = Arena.ofConfined()) {
                return checkedTable(f, a.allocate(need, 64));
            }
        }
        MemorySegment area = ScratchPool.BUILD.lend();
        try {
            return checkedTable(f, area);
        } finally {
            ScratchPool.BUILD.takeBack(area);
        }
    }

    private static List<BufferSpec> checkedTable(DescriptorFields f, MemorySegment area) throws HurrayException {
        byte[][] none = new byte[0][];
        long at = layOut(f, null, none, none, area);
        at = (at + 7) & ~7L;
        MemorySegment count = area.asSlice(at, 8);
        MemorySegment table = area.asSlice(at + 8, HurrayBufferSpec.sizeof() * MAX_TABLE);
        count.set(JAVA_LONG, 0, MAX_TABLE);
        Native.check(hurray_h.hurray_descriptor_check$raw(area.address(), table.address(), count.address()));
        java.lang.ref.Reference.reachabilityFence(area); // passed by address
        int n = (int) count.get(JAVA_LONG, 0);
        BufferSpec[] out = new BufferSpec[n];
        for (int i = 0; i < n; i++) {
            MemorySegment s = table.asSlice(i * HurrayBufferSpec.sizeof(), HurrayBufferSpec.sizeof());
            out[i] = new BufferSpec(HurrayBufferSpec.byte_size(s), HurrayBufferSpec.alignment(s),
                    DeviceTag.fromCode(Byte.toUnsignedInt(HurrayBufferSpec.device_tag(s))),
                    SyncMode.fromCode(Byte.toUnsignedInt(HurrayBufferSpec.sync_mode(s))));
        }
        return List.of(out);
    }

    /**
     * Lays a {@code HurrayDescriptorSpec} for {@code f} out at the start of {@code area}, its
     * arrays and bytes after it; returns the offset after the last byte written.
     */
    private static long layOut(DescriptorFields f, byte[] name, byte[][] keys, byte[][] values, MemorySegment area) {
        MemorySegment spec = area.asSlice(0, HurrayDescriptorSpec.sizeof());
        spec.fill((byte) 0);
        long at = HurrayDescriptorSpec.sizeof();
        HurrayDescriptorSpec.element_type(spec, (byte) f.elementType().code());
        HurrayDescriptorSpec.layout(spec, (byte) f.layout().kind().code());
        long[] dims = f.shape().dims();
        HurrayDescriptorSpec.rank(spec, dims.length);
        if (dims.length > 0) {
            MemorySegment.copy(dims, 0, area, JAVA_LONG, at, dims.length);
            Native.setPointer(spec, HurrayDescriptorSpec.dims$offset(), area.address() + at);
            at += 8L * dims.length;
        }
        long[] strides = f.layout().strides();
        if (strides.length > 0) {
            MemorySegment.copy(strides, 0, area, JAVA_LONG, at, strides.length);
            Native.setPointer(spec, HurrayDescriptorSpec.strides$offset(), area.address() + at);
            HurrayDescriptorSpec.stride_count(spec, strides.length);
            at += 8L * strides.length;
        }
        HurrayDescriptorSpec.byte_offset(spec, f.byteOffset());
        List<BufferSpec> buffers = f.buffers();
        if (!buffers.isEmpty()) {
            HurrayDescriptorSpec.buffer_count(spec, buffers.size());
            Native.setPointer(spec, HurrayDescriptorSpec.buffers$offset(), area.address() + at);
            for (BufferSpec b : buffers) {
                MemorySegment s = area.asSlice(at, HurrayBufferSpec.sizeof());
                HurrayBufferSpec.byte_size(s, b.byteSize());
                HurrayBufferSpec.alignment(s, b.alignment());
                HurrayBufferSpec.device_tag(s, (byte) b.deviceTag().code());
                HurrayBufferSpec.sync_mode(s, (byte) b.syncMode().code());
                HurrayBufferSpec.reserved(s, (short) 0);
                at += HurrayBufferSpec.sizeof();
            }
        }
        if (f.quantization() != null) {
            toNative(f.quantization(), HurrayDescriptorSpec.quantization(spec));
        }
        long views = at;
        at += HurrayMetadataView.sizeof() * keys.length;
        if (keys.length > 0) {
            HurrayDescriptorSpec.metadata_count(spec, keys.length);
            Native.setPointer(spec, HurrayDescriptorSpec.metadata$offset(), area.address() + views);
        }
        for (int i = 0; i < keys.length; i++) {
            MemorySegment v = area.asSlice(views + i * HurrayMetadataView.sizeof(), HurrayMetadataView.sizeof());
            at = put(area, at, keys[i]);
            Native.setPointer(v, HurrayMetadataView.key$offset(), area.address() + at - keys[i].length);
            HurrayMetadataView.key_len(v, keys[i].length);
            at = put(area, at, values[i]);
            Native.setPointer(v, HurrayMetadataView.value$offset(), area.address() + at - values[i].length);
            HurrayMetadataView.value_len(v, values[i].length);
        }
        if (name != null) {
            at = put(area, at, name);
            Native.setPointer(spec, HurrayDescriptorSpec.name$offset(), area.address() + at - name.length);
            HurrayDescriptorSpec.name_len(spec, name.length);
        }
        return at;
    }

    private static Built build(DescriptorFields f, byte[] name, byte[][] keys, byte[][] values, MemorySegment area)
            throws HurrayException {
        MemorySegment spec = area.asSlice(0, HurrayDescriptorSpec.sizeof());
        layOut(f, name, keys, values, area);
        List<BufferSpec> buffers = f.buffers();
        // The out-parameters go in an area of the out-parameter pool, lent around the downcalls
        // only (the build area holds the spec).
        MemorySegment slot = ScratchPool.borrow();
        MemorySegment raw;
        List<BufferSpec> table = buffers;
        try {
            Native.check(hurray_h.hurray_descriptor_new(spec, slot));
            raw = slot.get(ADDRESS, 0);
            if (buffers.isEmpty()) {
                MemorySegment s = slot;
                int rc = hurray_h.hurray_descriptor_buffer_spec(raw, 0, s);
                if (rc < 0) {
                    destroyQuietly(raw);
                    throw Native.error(rc, null);
                }
                table = List.of(new BufferSpec(HurrayBufferSpec.byte_size(s), HurrayBufferSpec.alignment(s),
                        DeviceTag.fromCode(Byte.toUnsignedInt(HurrayBufferSpec.device_tag(s))),
                        SyncMode.fromCode(Byte.toUnsignedInt(HurrayBufferSpec.sync_mode(s)))));
            }
        } finally {
            ScratchPool.giveBack(slot);
        }
        NativeDescriptor n = takeEncoding(raw);
        Map<String, byte[]> metadata = keys.length == 0 ? Collections.emptyMap() : new LinkedHashMap<>();
        for (Map.Entry<String, byte[]> e : f.metadata().entrySet()) {
            metadata.put(e.getKey(), e.getValue().clone());
        }
        return new Built(n, new DescriptorFields(f.elementType(), f.shape(), f.layout(), f.byteOffset(), table,
                f.quantization(), f.name(), metadata));
    }

    /**
     * Copies the encoding of a new owned descriptor into a Java array and destroys the native
     * descriptor at once: a descriptor made per tensor then costs no native handle, automatic
     * arena or cleaner. The handle is decoded again only if something needs one
     * ({@link #handle()}); the stream writer takes the bytes.
     */
    private static NativeDescriptor takeEncoding(MemorySegment raw) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            Native.check(hurray_h.hurray_descriptor_encoded(raw, s, s.asSlice(8)));
            byte[] bytes = s.get(ADDRESS, 0).reinterpret(s.get(JAVA_LONG, 8)).toArray(JAVA_BYTE);
            return new NativeDescriptor(null, bytes);
        } finally {
            ScratchPool.giveBack(s);
            destroyQuietly(raw);
        }
    }

    /** The native handle if one was made (owned, cached), else null; never decodes. */
    public MemorySegment handleIfPresent() {
        return handle;
    }

    /** The stored encoding (not a copy: callers must not change it), or null for a handle-only twin. */
    public byte[] encodedBytes() {
        return encoded;
    }

    /** Copies {@code bytes} to {@code area} at {@code at}; returns the offset after them. */
    private static long put(MemorySegment area, long at, byte[] bytes) {
        MemorySegment.copy(bytes, 0, area, JAVA_BYTE, at, bytes.length);
        return at + bytes.length;
    }

    /** A descriptor {@link #build} made and the fields it holds. */
    public record Built(NativeDescriptor descriptor, DescriptorFields fields) {
    }

    /**
     * Builds a descriptor through the native builder ({@code hurray_descriptor_builder_*}),
     * which validates every field; the result owns the new handle.
     *
     * @throws HurrayException with the native status and message of the first failing call
     */
    public static NativeDescriptor buildStepwise(DescriptorFields f) throws HurrayException {
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
                if (layout.kind().isSparse()) {
                    MemorySegment sp = HurraySparse.allocate(a);
                    HurraySparse.index_type(sp, (byte) layout.indexType().orElseThrow().code());
                    HurraySparse.canonical(sp, (byte) (layout.isCanonical() ? 1 : 0));
                    HurraySparse.block_rows(sp, layout.blockShape()[0]);
                    HurraySparse.block_cols(sp, layout.blockShape()[1]);
                    HurraySparse.nnz(sp, layout.nnz());
                    Native.check(hurray_h.hurray_descriptor_builder_set_sparse(builder, sp));
                } else if (layout.kind() == Layout.Kind.PAGED) {
                    MemorySegment pg = HurrayPaging.allocate(a);
                    HurrayPaging.index_type(pg, (byte) layout.indexType().orElseThrow().code());
                    HurrayPaging.page_size(pg, layout.pageSize());
                    HurrayPaging.block_count(pg, layout.blockCount());
                    HurrayPaging.page_count(pg, layout.pageCount());
                    Native.check(hurray_h.hurray_descriptor_builder_set_paging(builder, pg));
                }
                if (f.byteOffset() != 0) {
                    Native.check(hurray_h.hurray_descriptor_builder_set_byte_offset(builder, f.byteOffset()));
                }
                if (f.name() != null) {
                    byte[] name = Utf8.encode(f.name(), "name");
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
                    byte[] key = Utf8.encode(e.getKey(), "metadata key");
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

    static void toNative(Quantization q, MemorySegment s) {
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

    /**
     * A renamed copy: one downcall ({@code hurray_descriptor_encode_with_name}) that writes the
     * renamed encoding into the {@code text} part of a lent scratch area, no native descriptor
     * made. Names up to 256 UTF-8 bytes pass through the area's {@code name} part; longer
     * names, and encodings that do not fit the {@code text} part, go through a short-lived
     * arena.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (a NUL in the name),
     *     {@link Status#LIMIT_EXCEEDED} (over 4096 bytes)
     */
    public NativeDescriptor withName(byte[] utf8) throws HurrayException {
        MemorySegment h = handle();
        long needed = -1;
        if (utf8.length <= Native.NAME_BYTES) {
            MemorySegment s = ScratchPool.borrow();
            try {
                MemorySegment name = Native.nameIn(s);
                MemorySegment text = Native.textIn(s);
                MemorySegment.copy(utf8, 0, name, JAVA_BYTE, 0, utf8.length);
                int rc = hurray_h.hurray_descriptor_encode_with_name(h, name, utf8.length, text, text.byteSize(), s);
                if (rc == Native.OK) {
                    return new NativeDescriptor(null, Native.bytes(text, 0, s.get(JAVA_LONG, 0)));
                }
                if (rc != Native.ERR_BUFFER_TOO_SMALL) {
                    throw Native.error(rc, null);
                }
                needed = s.get(JAVA_LONG, 0); // the size the text part lacked
            } finally {
                ScratchPool.giveBack(s);
            }
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment name = a.allocateFrom(JAVA_BYTE, utf8);
            MemorySegment len = a.allocate(JAVA_LONG);
            if (needed >= 0) {
                len.set(JAVA_LONG, 0, needed);
            } else {
                int rc = hurray_h.hurray_descriptor_encode_with_name(h, name, utf8.length, MemorySegment.NULL, 0, len);
                if (rc != Native.ERR_BUFFER_TOO_SMALL) {
                    Native.check(rc);
                }
            }
            MemorySegment out = a.allocate(Math.max(1, len.get(JAVA_LONG, 0)));
            Native.check(hurray_h.hurray_descriptor_encode_with_name(h, name, utf8.length, out, out.byteSize(), len));
            return new NativeDescriptor(null, Native.bytes(out, 0, len.get(JAVA_LONG, 0)));
        }
    }

    /**
     * The composite membership of a live descriptor ({@code hurray_descriptor_composite} and
     * {@code hurray_descriptor_composite_role}), or null when it has none.
     */
    public static CompositeMembership membership(MemorySegment d) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = HurrayCompositeMembership.allocate(a);
            Native.check(hurray_h.hurray_descriptor_composite(d, m));
            if (HurrayCompositeMembership.present(m) == 0) {
                return null;
            }
            int count = HurrayCompositeMembership.member_count(m);
            List<String> roles = new ArrayList<>(count);
            MemorySegment p = a.allocate(ADDRESS);
            MemorySegment len = a.allocate(JAVA_LONG);
            for (int i = 0; i < count; i++) {
                Native.check(hurray_h.hurray_descriptor_composite_role(d, i, p, len));
                roles.add(new String(p.get(ADDRESS, 0).reinterpret(len.get(JAVA_LONG, 0)).toArray(JAVA_BYTE),
                        StandardCharsets.UTF_8));
            }
            return new CompositeMembership(Short.toUnsignedInt(HurrayCompositeMembership.depth(m)),
                    Integer.toUnsignedLong(HurrayCompositeMembership.index(m)), roles);
        }
    }

    /** Reads the fields of this descriptor from its native handle. */
    public DescriptorFields read() throws HurrayException {
        return read(handle());
    }

    /** The name a {@code HurrayDescriptorFields} points at, or null when the descriptor has none. */
    static String name(MemorySegment fields) {
        return name(Native.pointer(fields, HurrayDescriptorFields.name$offset()), HurrayDescriptorFields.name_len(fields));
    }

    /** The name at {@code address} ({@code length} UTF-8 bytes), or null when the address is 0 (unnamed). */
    static String name(long address, long length) {
        return address == 0 ? null : new String(Native.bytes(address, length), StandardCharsets.UTF_8);
    }

    /**
     * Reads the fields of a live (owned or borrowed) native descriptor: the fixed ones with one
     * {@code hurray_descriptor_fields} call, then each buffer-table and metadata entry, in one
     * area lent by {@link ScratchPool} (no upcalls).
     *
     * @throws HurrayException for a status the accessors report, or {@link Status#LIMIT_EXCEEDED}
     *     when a dimension or the element count exceeds what a Java {@link Shape} holds
     *     ({@code Long.MAX_VALUE})
     */
    public static DescriptorFields read(MemorySegment d) throws HurrayException {
        MemorySegment s = ScratchPool.borrow();
        try {
            return read(d, fields(d, s), s);
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /**
     * As {@link #read(MemorySegment)}, with {@code f} the result of
     * {@link #fields(MemorySegment, MemorySegment) fields(d, area)}, taken just before in the
     * same lent {@code area}, whose {@code slots} the accessors' out-values then use.
     */
    public static DescriptorFields read(MemorySegment d, MemorySegment f, MemorySegment area) throws HurrayException {
        MemorySegment s = area;
        return read(f, () -> d, i -> {
            Native.check(hurray_h.hurray_descriptor_buffer_spec(d, i, s));
            return s;
        }, i -> {
            Native.check(hurray_h.hurray_descriptor_metadata_get(d, i, s, s.asSlice(8), s.asSlice(16), s.asSlice(24)));
            return s;
        }, s);
    }

    /**
     * Reads the fields of a tensor a decoder returned, with no downcall: {@code f} is its
     * {@code HurrayDescriptorFields}, {@code buffers} its {@code HurrayDecodedBuffer} table and
     * {@code metadata} its {@code HurrayMetadataView} table (the metadata view's layout is the
     * four out-values {@code hurray_descriptor_metadata_get} writes: key, key length, value,
     * value length).
     */
    public static DescriptorFields readDecoded(MemorySegment f, MemorySegment buffers, MemorySegment metadata,
            MemorySegment tensor) throws HurrayException {
        long specOffset = HurrayDecodedBuffer.spec$offset();
        long stride = HurrayDecodedBuffer.sizeof();
        long mdStride = HurrayMetadataView.sizeof();
        return read(f, () -> NativeTensor.descriptor(tensor), i -> buffers.asSlice(i * stride + specOffset, HurrayBufferSpec.sizeof()),
                i -> metadata.asSlice(i * mdStride, mdStride), null);
    }

    /** Reads buffer-table entry {@code i} as a {@code HurrayBufferSpec}, or metadata entry {@code i} as four words. */
    @FunctionalInterface
    private interface Entry {
        MemorySegment at(int i) throws HurrayException;
    }

    /** The descriptor handle, fetched only for the fields the fixed struct lacks (sparse and paged layouts). */
    @FunctionalInterface
    private interface Handle {
        MemorySegment get() throws HurrayException;
    }

    /**
     * The fields of {@code f} with the rest from {@code handle}'s accessors; {@code area} is the
     * caller's lent scratch area whose {@code slots} the sparse, paging and block-quantization
     * accessors write, or null to borrow one for those (a decoder's result needs none otherwise).
     */
    private static DescriptorFields read(MemorySegment f, Handle handle, Entry bufferAt, Entry metadataAt, MemorySegment area)
            throws HurrayException {
        int typeCode = Byte.toUnsignedInt(HurrayDescriptorFields.element_type(f));
        int rank = (int) HurrayDescriptorFields.rank(f);
        long[] dims = new long[rank];
        if (rank > 0) {
            MemorySegment p = Native.view(Native.pointer(f, HurrayDescriptorFields.dims$offset()), 8L * rank);
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
                MemorySegment p = Native.view(Native.pointer(f, HurrayDescriptorFields.strides$offset()), 8L * rank);
                for (int i = 0; i < rank; i++) {
                    strides[i] = p.getAtIndex(JAVA_LONG, i);
                }
            }
            layout = Layout.strided(strides);
        } else if (kind.isSparse()) {
            layout = sparseLayout(kind, handle, area);
        } else if (kind == Layout.Kind.PAGED) {
            layout = pagedLayout(handle, area);
        } else {
            layout = kind == Layout.Kind.ROW_MAJOR ? Layout.rowMajor() : Layout.columnMajor();
        }
        long byteOffset = HurrayDescriptorFields.byte_offset(f);
        int count = (int) HurrayDescriptorFields.buffer_count(f);
        Quantization quantization = fromNative(handle, HurrayDescriptorFields.quantization(f), area);
        String name = name(f);
        int entries = (int) HurrayDescriptorFields.metadata_count(f);
        List<BufferSpec> buffers = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            MemorySegment s = bufferAt.at(i);
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
            putEntry(metadata, metadataAt.at(i));
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

    /** {@code area} when the caller lent one, else an area borrowed for one accessor call. */
    private static MemorySegment slots(MemorySegment area) {
        return area != null ? area : ScratchPool.borrow();
    }

    /** Gives {@code s} back if {@link #slots} borrowed it. */
    private static void done(MemorySegment s, MemorySegment area) {
        if (s != area) {
            ScratchPool.giveBack(s);
        }
    }

    /** The sparse layout of kind {@code kind} ({@code hurray_descriptor_sparse}, a {@code HurraySparse} in the slots). */
    private static Layout sparseLayout(Layout.Kind kind, Handle handle, MemorySegment area) throws HurrayException {
        MemorySegment s = slots(area);
        try {
            Native.check(hurray_h.hurray_descriptor_sparse(handle.get(), s));
            ElementType it = ElementType.fromCode(Byte.toUnsignedInt(HurraySparse.index_type(s)));
            boolean canonical = HurraySparse.canonical(s) == 1;
            long nnz = HurraySparse.nnz(s);
            if (nnz < 0) {
                throw tooLarge("nnz " + Long.toUnsignedString(nnz));
            }
            return switch (kind) {
                case COO -> Layout.coo(it, nnz, canonical);
                case CSR -> Layout.csr(it, nnz, canonical);
                case CSC -> Layout.csc(it, nnz, canonical);
                default -> Layout.bsr(it, nnz, HurraySparse.block_rows(s), HurraySparse.block_cols(s), canonical);
            };
        } finally {
            done(s, area);
        }
    }

    /** The paged layout ({@code hurray_descriptor_paging}, a {@code HurrayPaging} in the slots). */
    private static Layout pagedLayout(Handle handle, MemorySegment area) throws HurrayException {
        MemorySegment s = slots(area);
        try {
            Native.check(hurray_h.hurray_descriptor_paging(handle.get(), s));
            long blocks = HurrayPaging.block_count(s);
            long pages = HurrayPaging.page_count(s);
            if (blocks < 0 || pages < 0) {
                throw tooLarge("page table of " + Long.toUnsignedString(blocks) + " entries, "
                        + Long.toUnsignedString(pages) + " pages");
            }
            return Layout.paged(ElementType.fromCode(Byte.toUnsignedInt(HurrayPaging.index_type(s))),
                    HurrayPaging.page_size(s), blocks, pages);
        } finally {
            done(s, area);
        }
    }

    /**
     * The quantization block {@code s} ({@code HurrayQuantization}) of the descriptor
     * {@code handle} supplies. Block kinds (4–9) carry more than {@code HurrayQuantization}
     * holds: their parameters come from {@code hurray_descriptor_block_quant} on that descriptor
     * (one extra downcall, only for those kinds), written to the slots of {@code area} or of an
     * area borrowed for the call (it never reaches Java).
     */
    /**
     * A u32 wire field as the Java API's {@code int}: values of 2^31 and more, which the core
     * accepts (e.g. an NF4 block of 2^31 elements), are refused with a {@link HurrayException}
     * instead of turning negative and failing later with an unchecked exception.
     */
    private static int u32AsInt(int raw, String what) throws HurrayException {
        if (raw < 0) {
            throw new HurrayException(Status.UNSUPPORTED, "quantization " + what + " " + Integer.toUnsignedString(raw)
                    + " is 2^31 or more, beyond what the Java API represents", null);
        }
        return raw;
    }

    private static Quantization fromNative(Handle handle, MemorySegment s, MemorySegment area) throws HurrayException {
        int kind = Byte.toUnsignedInt(HurrayQuantization.kind(s));
        if (kind == hurray_h.HURRAY_QUANT_NONE()) {
            return null;
        }
        if (kind >= hurray_h.HURRAY_QUANT_NF4() && kind <= hurray_h.HURRAY_QUANT_GGUF_Q4_0()) {
            MemorySegment slots = slots(area);
            try {
                MemorySegment b = slots.asSlice(0, HurrayBlockQuant.sizeof());
                Native.check(hurray_h.hurray_descriptor_block_quant(handle.get(), b));
                int axis = u32AsInt(HurrayBlockQuant.axis(b), "axis");
                int block = u32AsInt(HurrayBlockQuant.block(b), "block size");
                int block2 = u32AsInt(HurrayBlockQuant.block2(b), "second block size");
                return Quantization.ofBlock(kind,
                        ElementType.fromCode(Byte.toUnsignedInt(HurrayBlockQuant.dequantized_type(b))),
                        ElementType.fromCode(Byte.toUnsignedInt(HurrayBlockQuant.scale_type(b))), axis, block, block2);
            } catch (IllegalArgumentException e) {
                throw new HurrayException(Status.UNSUPPORTED, "block quantization: " + e.getMessage(), e);
            } finally {
                done(slots, area);
            }
        }
        ElementType deq = ElementType.fromCode(Byte.toUnsignedInt(HurrayQuantization.dequantized_type(s)));
        if (kind == hurray_h.HURRAY_QUANT_PER_TENSOR_AFFINE()) {
            return new Quantization.PerTensorAffine(HurrayQuantization.scale(s), HurrayQuantization.bias(s), deq);
        }
        if (kind == hurray_h.HURRAY_QUANT_PER_CHANNEL_AFFINE()) {
            return new Quantization.PerChannelAffine(u32AsInt(HurrayQuantization.axis(s), "axis"), deq);
        }
        if (kind == hurray_h.HURRAY_QUANT_CAST()) {
            return new Quantization.Cast(deq);
        }
        throw new HurrayException(Status.UNSUPPORTED, "quantization kind " + kind + " is not known to this Java API", null);
    }

    /**
     * Copies {@code count} {@code HurrayMetadataView}s (key, key length, value, value length:
     * the four out-values of {@code hurray_descriptor_metadata_get}) into a new ordered map.
     */
    public static Map<String, byte[]> metadataOf(MemorySegment views, int count) {
        Map<String, byte[]> out = new LinkedHashMap<>();
        long stride = HurrayMetadataView.sizeof();
        for (int i = 0; i < count; i++) {
            putEntry(out, views.asSlice(i * stride, stride));
        }
        return out;
    }

    private static void putEntry(Map<String, byte[]> into, MemorySegment s) {
        String key = new String(Native.bytes(Native.pointer(s, 0), s.get(JAVA_LONG, 8)), StandardCharsets.UTF_8);
        into.put(key, Native.bytes(Native.pointer(s, 16), s.get(JAVA_LONG, 24)));
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
