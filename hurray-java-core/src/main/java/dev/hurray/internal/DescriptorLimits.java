package dev.hurray.internal;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Shape;
import dev.hurray.Status;
import dev.hurray.ffm.hurray_h;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What {@code TensorDescriptor.Builder.build()} checks without a native call: the name and the
 * metadata against the limits {@code hurray.h} publishes ({@code HURRAY_MAX_NAME_BYTES},
 * {@code HURRAY_MAX_METADATA_*}; docs/spec/descriptor.md §Limits), plus the native library's
 * verdict on everything else, asked once per distinct element type, shape, layout, byte
 * offset, buffer table and quantization and then remembered. The encoder checks every rule
 * again when it writes, so these checks only make a refusal come early.
 */
public final class DescriptorLimits {
    private static final int MAX_NAME = hurray_h.HURRAY_MAX_NAME_BYTES();
    private static final int MAX_ENTRIES = hurray_h.HURRAY_MAX_METADATA_ENTRIES();
    private static final int MAX_KEY = hurray_h.HURRAY_MAX_METADATA_KEY_BYTES();
    private static final int MAX_VALUE = hurray_h.HURRAY_MAX_METADATA_VALUE_BYTES();
    private static final int MAX_ENCODED = hurray_h.HURRAY_MAX_DESCRIPTOR_BYTES();
    /** Distinct shapes remembered; beyond it the cache starts again (descriptors stay valid). */
    private static final int MAX_REMEMBERED = 1024;

    /**
     * Everything of a descriptor but its name and metadata. A class rather than a record: a
     * record's {@code equals} and {@code hashCode} are bootstrapped through
     * {@code ObjectMethods} on first use, which costs a fresh JVM milliseconds on its first
     * descriptor.
     */
    private static final class ShapeKey {
        private final ElementType type;
        private final Shape shape;
        private final Layout layout;
        private final long byteOffset;
        private final List<BufferSpec> buffers;
        private final Quantization quantization;

        ShapeKey(ElementType type, Shape shape, Layout layout, long byteOffset, List<BufferSpec> buffers,
                Quantization quantization) {
            this.type = type;
            this.shape = shape;
            this.layout = layout;
            this.byteOffset = byteOffset;
            this.buffers = buffers;
            this.quantization = quantization;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ShapeKey k && type == k.type && byteOffset == k.byteOffset && shape.equals(k.shape)
                    && layout.equals(k.layout) && buffers.equals(k.buffers)
                    && java.util.Objects.equals(quantization, k.quantization);
        }

        @Override
        public int hashCode() {
            int h = type.hashCode();
            h = 31 * h + shape.hashCode();
            h = 31 * h + layout.hashCode();
            h = 31 * h + Long.hashCode(byteOffset);
            h = 31 * h + buffers.hashCode();
            return 31 * h + java.util.Objects.hashCode(quantization);
        }
    }

    private static final ConcurrentHashMap<ShapeKey, List<BufferSpec>> TABLES = new ConcurrentHashMap<>();

    /** The shape asked for last: a stream of same-shaped descriptors compares, without hashing. */
    private record Last(ElementType type, Shape shape, Layout layout, long byteOffset, List<BufferSpec> buffers,
            Quantization quantization, List<BufferSpec> table) {
    }

    private static volatile Last LAST;

    private DescriptorLimits() {
    }

    /**
     * The name in UTF-8.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (a NUL, an unpaired surrogate),
     *     {@link Status#LIMIT_EXCEEDED} (longer than the limit)
     */
    public static byte[] checkName(String name) throws HurrayException {
        byte[] b = Utf8.encode(name, "name");
        if (b.length > MAX_NAME) {
            throw new HurrayException(Status.LIMIT_EXCEEDED, "a name of " + b.length + " bytes exceeds " + MAX_NAME, null);
        }
        if (name.indexOf('\0') >= 0) {
            throw new HurrayException(Status.INVALID_ARGUMENT, "a name must not contain NUL", null);
        }
        return b;
    }

    /**
     * The metadata keys in UTF-8, in order, after checking every entry's limits.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (an empty key, a NUL, an unpaired
     *     surrogate), {@link Status#LIMIT_EXCEEDED} (a key, a value or the entry count over its
     *     limit)
     */
    public static byte[][] checkMetadata(Map<String, byte[]> metadata) throws HurrayException {
        if (metadata.size() > MAX_ENTRIES) {
            throw new HurrayException(Status.LIMIT_EXCEEDED, metadata.size() + " metadata entries exceed " + MAX_ENTRIES, null);
        }
        byte[][] keys = new byte[metadata.size()][];
        int i = 0;
        for (Map.Entry<String, byte[]> e : metadata.entrySet()) {
            byte[] k = Utf8.encode(e.getKey(), "metadata key");
            if (k.length == 0 || k.length > MAX_KEY || e.getKey().indexOf('\0') >= 0) {
                throw new HurrayException(Status.INVALID_ARGUMENT, "metadata key must be 1.." + MAX_KEY
                        + " bytes without NUL", null);
            }
            if (e.getValue().length > MAX_VALUE) {
                throw new HurrayException(Status.LIMIT_EXCEEDED, "metadata value of " + e.getValue().length
                        + " bytes exceeds " + MAX_VALUE, null);
            }
            keys[i++] = k;
        }
        return keys;
    }

    /**
     * Has the native library check the encoded size of {@code f} when its name and metadata
     * could make the encoding longer than {@code HURRAY_MAX_DESCRIPTOR_BYTES}: all the rest of a
     * descriptor encodes to a few KiB (at most 32 dimensions, 64 buffers, fixed-size blocks), so
     * strings of at most half the limit cannot, and are not asked about.
     *
     * @param name the name in UTF-8, or null
     * @param keys the metadata keys in UTF-8, in the order of {@code f.metadata()}
     * @return the native descriptor the library made to measure it, or null when it was not asked
     * @throws HurrayException {@link Status#LIMIT_EXCEEDED} naming the encoded size and the limit
     */
    public static NativeDescriptor checkEncodedSize(DescriptorFields f, byte[] name, byte[][] keys) throws HurrayException {
        long strings = name == null ? 0 : name.length;
        for (byte[] k : keys) {
            strings += k.length;
        }
        for (byte[] v : f.metadata().values()) {
            strings += v.length;
        }
        if (strings <= MAX_ENCODED / 2) {
            return null;
        }
        return NativeDescriptor.build(f).descriptor();
    }

    /**
     * The buffer table the native library gives {@code f} (its default when {@code f} has
     * none), after it validated everything but the name and metadata.
     *
     * @throws HurrayException the library's refusal
     */
    public static List<BufferSpec> validatedTable(DescriptorFields f) throws HurrayException {
        Last last = LAST;
        if (last != null && last.type == f.elementType() && last.byteOffset == f.byteOffset()
                && last.shape.equals(f.shape()) && last.layout.equals(f.layout()) && last.buffers.equals(f.buffers())
                && java.util.Objects.equals(last.quantization, f.quantization())) {
            return last.table;
        }
        ShapeKey key = new ShapeKey(f.elementType(), f.shape(), f.layout(), f.byteOffset(), f.buffers(), f.quantization());
        List<BufferSpec> t = TABLES.get(key);
        if (t != null) {
            LAST = new Last(f.elementType(), f.shape(), f.layout(), f.byteOffset(), f.buffers(), f.quantization(), t);
            return t;
        }
        t = NativeDescriptor.checkedTable(f);
        if (TABLES.size() >= MAX_REMEMBERED) {
            TABLES.clear();
        }
        TABLES.put(key, t);
        LAST = new Last(f.elementType(), f.shape(), f.layout(), f.byteOffset(), f.buffers(), f.quantization(), t);
        return t;
    }
}
