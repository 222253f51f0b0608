package dev.hurray.formats;

import com.fasterxml.jackson.core.JsonGenerator;
import dev.hurray.AtomicOutput;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.LongConsumer;

/**
 * safetensors files: read (positional reads into native memory, so another process shortening
 * the file gives an error, never a crash) and write (atomically).
 *
 * <p>Layout: an 8-byte little-endian unsigned header length {@code N}; {@code N} bytes of UTF-8
 * JSON mapping each tensor name to {@code {"dtype", "shape", "data_offsets": [begin, end]}}
 * plus an optional {@code "__metadata__"} object of strings; then the data region, every
 * offset relative to its start, little-endian, row-major.
 *
 * <p>What the reader checks (each failure is a {@link ForeignFormatException} naming the file):
 * the file holds at least 8 bytes; {@code N} is at most {@link #MAX_HEADER_BYTES} and fits in
 * the file; the header is a JSON object (starting with <code>'{'</code>) without duplicate keys;
 * every entry has exactly those three fields with the right JSON types; each dtype has a
 * Hurray element type; shapes are non-negative and their byte size does not overflow and
 * equals {@code end - begin}; a sub-byte tensor ({@code F4}, {@code F6_*}) ends on a byte
 * boundary (an even F4 count, an F6 count that is a multiple of 4: safetensors 0.8's rule,
 * which the writer applies too); sorted by offset, the tensors cover the data region exactly, with
 * no gap, overlap or trailing byte (the rule the reference implementation applies).
 *
 * <p><b>MX scale pairing.</b> safetensors has MX element dtypes and the E8M0 scale dtype but no
 * way to say which scales belong to which values. This class uses one convention, changeable
 * through {@link Options}: an MX tensor {@code W} (OCP Microscaling, {@link Quantization.Mx}:
 * blocks of {@value #MX_BLOCK} consecutive elements along the last axis) is two entries, the
 * values {@code W} in their own dtype ({@code F8_E4M3}, {@code F8_E5M2}, {@code F6_E2M3},
 * {@code F6_E3M2}, {@code F4}, or {@code I8} for MXINT8) and the scales {@code W + suffix}
 * ({@code F8_E8M0}) whose shape is the values' shape with the last dimension divided by 32.
 * The default suffix is {@value #DEFAULT_SCALE_SUFFIX}, so {@code layer.weight} pairs with
 * {@code layer.weight_scale}: appended to the whole name, it keeps the pair side by side in
 * name order and in the same module path, the way quantized checkpoints commonly name a
 * weight's scale. On read, a values entry with one of those dtypes and a partner of dtype
 * {@code F8_E8M0} becomes one MX tensor (dequantized type float32) and the partner disappears;
 * a partner whose shape does not fit is a {@link ForeignFormatException} naming both; without
 * a partner (or with a partner of another dtype) the tensor stays plain. On write, an MX tensor
 * along its last axis with blocks of 32 and float32 as its dequantized type is split the same
 * way; any other quantization is refused.
 */
public final class Safetensors {
    /** Largest header accepted, in bytes (the reference implementation's limit). */
    public static final long MAX_HEADER_BYTES = 100_000_000L;
    private static final int MAX_RANK = ForeignTensor.MAX_RANK;
    private static final String METADATA_KEY = "__metadata__";
    /** The OCP MX block size, and the only one the scale pairing records. */
    public static final int MX_BLOCK = 32;
    /** The scale-pairing suffix {@link Options#defaults()} uses. */
    public static final String DEFAULT_SCALE_SUFFIX = "_scale";

    private Safetensors() {
    }

    /**
     * How MX scale tensors pair with their values (see the class documentation). Immutable;
     * safe to share between threads.
     */
    public static final class Options {
        private static final Options DEFAULTS = new Options(DEFAULT_SCALE_SUFFIX);
        private final String scaleSuffix;

        private Options(String scaleSuffix) {
            this.scaleSuffix = scaleSuffix;
        }

        /** Pairing on, with the suffix {@value #DEFAULT_SCALE_SUFFIX}. */
        public static Options defaults() {
            return DEFAULTS;
        }

        /**
         * Pairing on, the scales of {@code W} named {@code W + suffix}.
         *
         * @throws IllegalArgumentException for an empty suffix
         */
        public Options withScaleSuffix(String suffix) {
            if (Objects.requireNonNull(suffix, "suffix").isEmpty()) {
                throw new IllegalArgumentException("the scale suffix is empty");
            }
            return new Options(suffix);
        }

        /**
         * Pairing off: on read, values and scales stay two plain tensors; on write, MX tensors
         * are refused like any quantized tensor.
         */
        public Options withoutPairing() {
            return new Options(null);
        }

        /** The scale suffix, or empty when pairing is off. */
        public Optional<String> scaleSuffix() {
            return Optional.ofNullable(scaleSuffix);
        }

        /**
         * True when {@link #write} records {@code q} (an MX quantization along the last of
         * {@code rank} axes, blocks of {@value #MX_BLOCK}, float32 values) with these options.
         */
        public boolean pairs(Quantization q, int rank) {
            return scaleSuffix != null && q instanceof Quantization.Mx mx && rank > 0 && mx.axis() == rank - 1
                    && mx.block() == MX_BLOCK && mx.dequantized() == ElementType.FLOAT32;
        }

        @Override
        public String toString() {
            return scaleSuffix == null ? "no scale pairing" : "scale suffix '" + scaleSuffix + "'";
        }
    }

    /** The safetensors dtype string of {@code t}, or {@code null} when safetensors has none. */
    public static String dtypeName(ElementType t) {
        return switch (t) {
            case BOOL -> "BOOL";
            case INT8 -> "I8";
            case INT16 -> "I16";
            case INT32 -> "I32";
            case INT64 -> "I64";
            case UINT8 -> "U8";
            case UINT16 -> "U16";
            case UINT32 -> "U32";
            case UINT64 -> "U64";
            case FLOAT16 -> "F16";
            case BFLOAT16 -> "BF16";
            case FLOAT32 -> "F32";
            case FLOAT64 -> "F64";
            case COMPLEX64 -> "C64";
            case FLOAT8_E4M3FN -> "F8_E4M3";
            case FLOAT8_E5M2 -> "F8_E5M2";
            // safetensors 0.8's sub-byte and scale dtypes. Packing is assumed to be Hurray's:
            // a little-endian bit stream, element 0 in the lowest bits (low nibble for F4).
            case FLOAT4_E2M1FN -> "F4";
            case FLOAT6_E2M3FN -> "F6_E2M3";
            case FLOAT6_E3M2FN -> "F6_E3M2";
            case FLOAT8_E8M0FNU -> "F8_E8M0";
            case FLOAT8_E4M3FNUZ -> "F8_E4M3FNUZ";
            case FLOAT8_E5M2FNUZ -> "F8_E5M2FNUZ";
            case COMPLEX128, INT4, UINT4, FLOAT8_E3M4 -> null;
        };
    }

    /** The element type of a safetensors dtype string, or {@code null} when Hurray has none. */
    public static ElementType fromDtypeName(String s) {
        for (ElementType t : ElementType.values()) {
            if (s.equals(dtypeName(t))) {
                return t;
            }
        }
        return null;
    }

    /**
     * Opens a safetensors file: its header is read and checked now, each payload when it is first
     * used ({@link ForeignTensor}, §Lazy payloads: positional reads into native memory owned by
     * the tensor). The returned model keeps the file open until it is closed. Tensors come in
     * data-offset order.
     *
     * @throws ForeignFormatException if the file is not a valid safetensors file (see the class
     *                                documentation for what is checked)
     * @throws IOException            if the file cannot be opened or read
     */
    public static ForeignModel read(Path file) throws IOException {
        return read(file, Options.defaults());
    }

    /**
     * Opens a safetensors file, pairing MX scale tensors with their values as {@code options}
     * says (see the class documentation). Payloads (values and scales) are read when a tensor is
     * first used, into native memory owned by that tensor, as {@link #read(Path)}.
     *
     * @throws ForeignFormatException if the file is not a valid safetensors file, or a scale
     *                                partner's shape does not fit its values
     * @throws IOException            if the file cannot be opened or read
     */
    public static ForeignModel read(Path file, Options options) throws IOException {
        Objects.requireNonNull(options, "options");
        FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
        try {
            return read(file, ch, options);
        } catch (Throwable t) {
            ch.close();
            throw t;
        }
    }

    private static ForeignModel read(Path file, FileChannel ch, Options options) throws IOException {
        String what = file.toString();
        {
            long size = ch.size();
            if (size < 8) {
                throw new ForeignFormatException(what + ": not a safetensors file: " + size
                        + " bytes is shorter than the 8-byte header length");
            }
            ByteBuffer lenBuf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, lenBuf, 0, what);
            long n = lenBuf.getLong(0);
            if (n < 0 || n > MAX_HEADER_BYTES) {
                throw new ForeignFormatException(what + ": not a safetensors file: header length "
                        + Long.toUnsignedString(n) + " exceeds the limit of " + MAX_HEADER_BYTES + " bytes");
            }
            if (n > size - 8) {
                throw new ForeignFormatException(what + ": truncated or not safetensors: header length " + n
                        + " exceeds the " + (size - 8) + " bytes after it");
            }
            if (n < 2) {
                throw new ForeignFormatException(what + ": not a safetensors file: header length " + n
                        + " is too short for a JSON object");
            }
            ByteBuffer hb = ByteBuffer.allocate((int) n);
            readFully(ch, hb, 8, what);
            byte[] header = hb.array();
            if (header[0] != '{') {
                throw new ForeignFormatException(what + ": not a safetensors file: the header does not start with '{'");
            }
            Object root = Json.parse(header, 0, header.length, what + ": safetensors header");
            if (!(root instanceof Map<?, ?> rootMap)) {
                throw new ForeignFormatException(what + ": safetensors header is not a JSON object");
            }
            long dataStart = 8 + n;
            long dataSize = size - dataStart;
            Map<String, String> metadata = new java.util.LinkedHashMap<>();
            List<Entry> entries = new ArrayList<>();
            for (Map.Entry<?, ?> e : rootMap.entrySet()) {
                String name = (String) e.getKey();
                if (name.equals(METADATA_KEY)) {
                    readMetadata(e.getValue(), metadata, what);
                } else {
                    entries.add(entry(name, e.getValue(), dataSize, what));
                }
            }
            entries.sort(Comparator.comparingLong((Entry x) -> x.begin).thenComparingLong(x -> x.end));
            long expect = 0;
            for (Entry x : entries) {
                if (x.begin != expect) {
                    throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(x.name) + "' data_offsets ["
                            + x.begin + ", " + x.end + "] " + (x.begin < expect ? "overlap the previous tensor"
                            : "leave a gap of " + (x.begin - expect) + " bytes before it"));
                }
                expect = x.end;
            }
            if (expect != dataSize) {
                throw new ForeignFormatException(what + ": the tensors cover " + expect + " of the "
                        + dataSize + " data bytes (" + (expect < dataSize ? "trailing bytes" : "truncated") + ")");
            }
            Map<Entry, Entry> partners = partners(entries, options, what);
            java.util.Set<Entry> paired = new java.util.HashSet<>(partners.values());
            List<ForeignTensor> tensors = new ArrayList<>(entries.size());
            for (Entry x : entries) {
                if (paired.contains(x)) {
                    continue;
                }
                // Positional reads on first use, not a mapping: a file shortened meanwhile is an
                // error, not SIGBUS.
                long at = dataStart + x.begin;
                Entry sc = partners.get(x);
                if (sc == null) {
                    tensors.add(ForeignTensor.lazy(x.name, x.dtype, x.shape, Layout.Kind.ROW_MAJOR, null, new long[0], at,
                            bufs -> Payloads.readAt(ch, at, bufs[0], what, size)));
                } else {
                    long scaleAt = dataStart + sc.begin;
                    tensors.add(ForeignTensor.lazy(x.name, x.dtype, x.shape, Layout.Kind.ROW_MAJOR,
                            new Quantization.Mx(x.shape.length - 1, MX_BLOCK, ElementType.FLOAT32),
                            new long[] {sc.end - sc.begin}, at, bufs -> {
                                Payloads.readAt(ch, at, bufs[0], what, size);
                                Payloads.readAt(ch, scaleAt, bufs[1], what, size);
                            }));
                }
            }
            return new ForeignModel(tensors, metadata, null, List.of(ch));
        }
    }

    private record Entry(String name, ElementType dtype, long[] shape, long begin, long end) {
    }

    /** True for the element dtypes an MX values tensor can have. */
    private static boolean mxValues(ElementType t) {
        return switch (t) {
            case FLOAT8_E4M3FN, FLOAT8_E5M2, FLOAT6_E2M3FN, FLOAT6_E3M2FN, FLOAT4_E2M1FN, INT8 -> true;
            default -> false;
        };
    }

    /** Values entry → its E8M0 scale entry, by {@code options}' suffix; checks each pair's shapes. */
    private static Map<Entry, Entry> partners(List<Entry> entries, Options options, String what)
            throws ForeignFormatException {
        Map<Entry, Entry> out = new java.util.IdentityHashMap<>();
        if (options.scaleSuffix().isEmpty()) {
            return out;
        }
        String suffix = options.scaleSuffix().get();
        Map<String, Entry> byName = new java.util.HashMap<>();
        for (Entry e : entries) {
            byName.put(e.name, e);
        }
        for (Entry v : entries) {
            Entry s = byName.get(v.name + suffix);
            if (s == null || s.dtype != ElementType.FLOAT8_E8M0FNU || !mxValues(v.dtype)) {
                continue;
            }
            long[] want = v.shape.clone();
            boolean fits = want.length > 0 && want[want.length - 1] % MX_BLOCK == 0;
            if (fits) {
                want[want.length - 1] /= MX_BLOCK;
                fits = java.util.Arrays.equals(want, s.shape);
            }
            if (!fits) {
                throw new ForeignFormatException(what + ": scale tensor '" + dev.hurray.TensorNames.forMessage(s.name) + "' " + java.util.Arrays.toString(s.shape)
                        + " does not fit MX values '" + dev.hurray.TensorNames.forMessage(v.name) + "' " + v.dtype.formatName() + java.util.Arrays.toString(v.shape)
                        + ": the scales of blocks of " + MX_BLOCK + " along the last axis have shape "
                        + (want.length == 0 || v.shape[v.shape.length - 1] % MX_BLOCK != 0
                        ? "(none: the last dimension is not a multiple of " + MX_BLOCK + ")" : java.util.Arrays.toString(want))
                        + " (pairing suffix '" + suffix + "'; read with pairing off to keep both as plain tensors)");
            }
            out.put(v, s);
        }
        return out;
    }

    private static void readMetadata(Object v, Map<String, String> out, String what) throws ForeignFormatException {
        if (v == null) {
            return;
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new ForeignFormatException(what + ": __metadata__ is a JSON " + Json.typeOf(v) + ", not an object");
        }
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (!(e.getValue() instanceof String s)) {
                throw new ForeignFormatException(what + ": __metadata__ value of '" + e.getKey()
                        + "' is a JSON " + Json.typeOf(e.getValue()) + ", not a string");
            }
            out.put((String) e.getKey(), s);
        }
    }

    private static Entry entry(String name, Object v, long dataSize, String what) throws ForeignFormatException {
        String where = what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "'";
        if (name.isEmpty()) {
            throw new ForeignFormatException(what + ": a tensor has an empty name");
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new ForeignFormatException(where + " is a JSON " + Json.typeOf(v) + ", not an object");
        }
        for (Object k : m.keySet()) {
            if (!k.equals("dtype") && !k.equals("shape") && !k.equals("data_offsets")) {
                throw new ForeignFormatException(where + " has an unknown field '" + k + "'");
            }
        }
        if (!(m.get("dtype") instanceof String ds)) {
            throw new ForeignFormatException(where + ": dtype is missing or not a string");
        }
        ElementType dtype = fromDtypeName(ds);
        if (dtype == null) {
            throw new ForeignFormatException(where + ": safetensors dtype " + ds + " has no Hurray element type");
        }
        if (!(m.get("shape") instanceof List<?> sl)) {
            throw new ForeignFormatException(where + ": shape is missing or not an array");
        }
        if (sl.size() > MAX_RANK) {
            throw new ForeignFormatException(where + ": rank " + sl.size() + " exceeds " + MAX_RANK + ", the most a Hurray tensor has");
        }
        long[] shape = new long[sl.size()];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = nonNegativeLong(sl.get(i), where + ": shape[" + i + "]");
        }
        if (!(m.get("data_offsets") instanceof List<?> ol) || ol.size() != 2) {
            throw new ForeignFormatException(where + ": data_offsets is missing or not [begin, end]");
        }
        long begin = nonNegativeLong(ol.get(0), where + ": data_offsets[0]");
        long end = nonNegativeLong(ol.get(1), where + ": data_offsets[1]");
        if (end < begin) {
            throw new ForeignFormatException(where + ": data_offsets [" + begin + ", " + end + "] end before they begin");
        }
        if (end > dataSize) {
            throw new ForeignFormatException(where + ": data_offsets [" + begin + ", " + end
                    + "] run past the " + dataSize + " data bytes (truncated file?)");
        }
        long bytes;
        try {
            long count = ForeignTensor.elementCount(shape);
            bytes = dtype.byteSizeOf(count);
            requireByteBoundary(dtype, count, where + ": " + ds + java.util.Arrays.toString(shape));
        } catch (ArithmeticException e) {
            throw new ForeignFormatException(where + ": the byte size of shape " + java.util.Arrays.toString(shape) + " overflows");
        }
        if (bytes != end - begin) {
            throw new ForeignFormatException(where + ": " + ds + java.util.Arrays.toString(shape) + " needs " + bytes
                    + " bytes but data_offsets [" + begin + ", " + end + "] hold " + (end - begin));
        }
        return new Entry(name, dtype, shape, begin, end);
    }

    /**
     * Refuses a sub-byte tensor whose bits do not fill its last byte (an odd F4 count, an F6
     * count that is not a multiple of 4): safetensors 0.8 refuses such a tensor on read and
     * write ("does not end up at a byte boundary"), so Hurray neither reads nor writes one.
     */
    private static void requireByteBoundary(ElementType dtype, long count, String what) throws ForeignFormatException {
        int bits = dtype.bitWidth();
        if ((count % 8) * bits % 8 != 0) {
            throw new ForeignFormatException(what + ": " + count + " elements of " + bits
                    + " bits do not end on a byte boundary, which safetensors requires");
        }
    }

    private static long nonNegativeLong(Object v, String where) throws ForeignFormatException {
        if (!(v instanceof BigInteger b)) {
            throw new ForeignFormatException(where + " is a JSON " + Json.typeOf(v) + ", not an integer");
        }
        if (b.signum() < 0 || b.bitLength() > 63) {
            throw new ForeignFormatException(where + " = " + b + " is out of range");
        }
        return b.longValue();
    }

    static void readFully(FileChannel ch, ByteBuffer dst, long pos, String what) throws IOException {
        while (dst.hasRemaining()) {
            int r = ch.read(dst, pos);
            if (r < 0) {
                throw new ForeignFormatException(what + ": truncated: ended at byte " + pos);
            }
            pos += r;
        }
    }

    /**
     * Writes {@code model} as a safetensors file, atomically ({@link AtomicOutput}).
     *
     * <p>Tensors are written widest element type first (stable, so model order within a
     * width), which with the header padded to a multiple of 8 starts every payload at a multiple
     * of its element width. Column-major tensors are reordered to row-major (bytes only). The
     * model's metadata becomes {@code __metadata__}.
     *
     * @param progress called with byte counts as payloads are written, or {@code null}
     * @throws ForeignFormatException if a tensor's type has no safetensors dtype or the tensor
     *                                is quantized (safetensors cannot record that)
     * @throws IOException            if writing fails; {@code target} is then unchanged
     */
    public static void write(ForeignModel model, Path target, LongConsumer progress) throws IOException {
        write(model, target, Options.defaults(), progress);
    }

    /**
     * Writes {@code model} as a safetensors file, atomically, as {@link #write(ForeignModel, Path,
     * LongConsumer)} does, splitting each MX tensor into its values and its scales as
     * {@code options} says (see the class documentation).
     *
     * @throws ForeignFormatException as the other overload; for an MX tensor the convention
     *     cannot record (another axis or block size, a dequantized type other than float32, or
     *     pairing off); or when a scale tensor's name is already taken
     */
    public static void write(ForeignModel model, Path target, Options options, LongConsumer progress) throws IOException {
        Objects.requireNonNull(options, "options");
        java.util.Set<String> names = new java.util.HashSet<>();
        for (ForeignTensor t : model.tensors()) {
            names.add(t.name());
        }
        List<ForeignTensor> plain = new ArrayList<>();
        for (ForeignTensor t : model.tensors()) {
            if (dtypeName(t.dtype()) == null) {
                throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': safetensors has no dtype for " + t.dtype());
            }
            requireByteBoundary(t.dtype(), ForeignTensor.elementCount(t.shape()),
                    "tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "' " + dtypeName(t.dtype()) + java.util.Arrays.toString(t.shape()));
            if (t.quantization().isEmpty()) {
                plain.add(t);
                continue;
            }
            Quantization q = t.quantization().get();
            if (!options.pairs(q, t.rank()) || t.scaleBufferSizes().length != 1) {
                String why = q instanceof Quantization.Mx && options.scaleSuffix().isPresent()
                        ? "; safetensors records MX as values plus an E8M0 scale tensor only along the last axis, with blocks of "
                        + MX_BLOCK + " and float32 values"
                        : q instanceof Quantization.Mx ? "; MX scale pairing is off" : "";
                throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "' is quantized (" + Payloads.describe(q)
                        + "); safetensors cannot record quantization" + why);
            }
            String scaleName = t.name() + options.scaleSuffix().get();
            if (names.contains(scaleName)) {
                throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': its MX scales would be named '" + scaleName
                        + "', which another tensor already has (choose another scale suffix)");
            }
            names.add(scaleName);
            long[] scaleShape = t.shape();
            scaleShape[scaleShape.length - 1] /= MX_BLOCK;
            try {
                // Values and scales become two tensors, each read from t when it is written.
                plain.add(ForeignTensor.lazy(t.name(), t.dtype(), t.shape(), t.layout(), null, new long[0], -1,
                        bufs -> t.withPayload((data, scales) -> MemorySegment.copy(data, 0, bufs[0], 0, data.byteSize()))));
                plain.add(ForeignTensor.lazy(scaleName, ElementType.FLOAT8_E8M0FNU, scaleShape, t.layout(), null,
                        new long[0], -1, bufs -> t.withPayload((data, scales) ->
                                MemorySegment.copy(scales.get(0), 0, bufs[0], 0, bufs[0].byteSize()))));
            } catch (IllegalArgumentException e) {
                throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': " + e.getMessage());
            }
        }
        List<ForeignTensor> order = new ArrayList<>();
        for (ForeignTensor t : plain) {
            order.add(Payloads.toRowMajorOnUse(t));
        }
        order.sort(Comparator.comparingInt((ForeignTensor t) -> -t.dtype().bitWidth()));
        byte[] header = header(model.metadata(), order);
        AtomicOutput.write(target, out -> {
            ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length);
            writeAll(out, len);
            writeAll(out, ByteBuffer.wrap(header));
            for (ForeignTensor t : order) {
                t.withData(data -> Payloads.writeFully(data, out, progress));
            }
        });
    }

    private static void writeAll(FileChannel out, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            out.write(b);
        }
    }

    private static byte[] header(Map<String, String> metadata, List<ForeignTensor> order) throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        try (JsonGenerator g = Json.factory().createGenerator(bos)) {
            g.writeStartObject();
            if (!metadata.isEmpty()) {
                g.writeObjectFieldStart(METADATA_KEY);
                for (Map.Entry<String, String> e : metadata.entrySet()) {
                    g.writeStringField(e.getKey(), e.getValue());
                }
                g.writeEndObject();
            }
            long off = 0;
            for (ForeignTensor t : order) {
                if (t.name().equals(METADATA_KEY)) {
                    throw new ForeignFormatException("a tensor named " + METADATA_KEY + " cannot be written to safetensors");
                }
                g.writeObjectFieldStart(t.name());
                g.writeStringField("dtype", dtypeName(t.dtype()));
                g.writeArrayFieldStart("shape");
                for (long d : t.shape()) {
                    g.writeNumber(d);
                }
                g.writeEndArray();
                g.writeArrayFieldStart("data_offsets");
                g.writeNumber(off);
                off += t.byteSize();
                g.writeNumber(off);
                g.writeEndArray();
                g.writeEndObject();
            }
            g.writeEndObject();
        }
        int pad = (int) ((8 - (bos.size() % 8)) % 8);
        for (int i = 0; i < pad; i++) {
            bos.write(' ');
        }
        if (bos.size() > MAX_HEADER_BYTES) {
            throw new ForeignFormatException(String.format(Locale.ROOT,
                    "safetensors header would be %d bytes, over the limit of %d", bos.size(), MAX_HEADER_BYTES));
        }
        return bos.toByteArray();
    }
}
