package dev.hurray.formats;

import com.fasterxml.jackson.core.JsonGenerator;
import dev.hurray.AtomicOutput;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
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
import java.util.function.LongConsumer;

/**
 * safetensors files: read (zero copy, from a read-only mapping) and write (atomically).
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
 * equals {@code end - begin}; sorted by offset, the tensors cover the data region exactly, with
 * no gap, overlap or trailing byte (the rule the reference implementation applies).
 */
public final class Safetensors {
    /** Largest header accepted, in bytes (the reference implementation's limit). */
    public static final long MAX_HEADER_BYTES = 100_000_000L;
    private static final int MAX_RANK = 64;
    private static final String METADATA_KEY = "__metadata__";

    private Safetensors() {
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
            case COMPLEX128, INT4, UINT4 -> null;
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
     * Reads a safetensors file. Payloads are slices of a read-only mapping owned by the
     * returned model (close it to unmap). Tensors come in data-offset order.
     *
     * @throws ForeignFormatException if the file is not a valid safetensors file (see the class
     *                                documentation for what is checked)
     * @throws IOException            if the file cannot be opened or read
     */
    public static ForeignModel read(Path file) throws IOException {
        Arena arena = Arena.ofShared();
        try {
            ForeignModel m = read(file, arena);
            return m;
        } catch (Throwable t) {
            arena.close();
            throw t;
        }
    }

    private static ForeignModel read(Path file, Arena arena) throws IOException {
        String what = file.toString();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
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
                    throw new ForeignFormatException(what + ": tensor '" + x.name + "' data_offsets ["
                            + x.begin + ", " + x.end + "] " + (x.begin < expect ? "overlap the previous tensor"
                            : "leave a gap of " + (x.begin - expect) + " bytes before it"));
                }
                expect = x.end;
            }
            if (expect != dataSize) {
                throw new ForeignFormatException(what + ": the tensors cover " + expect + " of the "
                        + dataSize + " data bytes (" + (expect < dataSize ? "trailing bytes" : "truncated") + ")");
            }
            MemorySegment map = Payloads.mapReadOnly(ch, size, arena);
            List<ForeignTensor> tensors = new ArrayList<>(entries.size());
            for (Entry x : entries) {
                MemorySegment data = map.asSlice(dataStart + x.begin, x.end - x.begin);
                tensors.add(new ForeignTensor(x.name, x.dtype, x.shape, Layout.Kind.ROW_MAJOR, data, null,
                        dataStart + x.begin));
            }
            return new ForeignModel(tensors, metadata, arena);
        }
    }

    private record Entry(String name, ElementType dtype, long[] shape, long begin, long end) {
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
        String where = what + ": tensor '" + name + "'";
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
            throw new ForeignFormatException(where + ": rank " + sl.size() + " exceeds " + MAX_RANK);
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
            bytes = dtype.byteSizeOf(ForeignTensor.elementCount(shape));
        } catch (ArithmeticException e) {
            throw new ForeignFormatException(where + ": the byte size of shape " + java.util.Arrays.toString(shape) + " overflows");
        }
        if (bytes != end - begin) {
            throw new ForeignFormatException(where + ": " + ds + java.util.Arrays.toString(shape) + " needs " + bytes
                    + " bytes but data_offsets [" + begin + ", " + end + "] hold " + (end - begin));
        }
        return new Entry(name, dtype, shape, begin, end);
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
        for (ForeignTensor t : model.tensors()) {
            if (dtypeName(t.dtype()) == null) {
                throw new ForeignFormatException("tensor '" + t.name() + "': safetensors has no dtype for " + t.dtype());
            }
            if (t.quantization().isPresent()) {
                throw new ForeignFormatException("tensor '" + t.name() + "' is quantized ("
                        + Payloads.describe(t.quantization().get()) + "); safetensors cannot record quantization");
            }
        }
        try (Arena scratch = Arena.ofConfined()) {
            List<ForeignTensor> order = new ArrayList<>();
            for (ForeignTensor t : model.tensors()) {
                order.add(Payloads.toRowMajor(t, scratch));
            }
            order.sort(Comparator.comparingInt((ForeignTensor t) -> -t.dtype().bitWidth()));
            byte[] header = header(model.metadata(), order);
            AtomicOutput.write(target, out -> {
                ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length);
                writeAll(out, len);
                writeAll(out, ByteBuffer.wrap(header));
                for (ForeignTensor t : order) {
                    Payloads.writeFully(t.data(), out, progress);
                }
            });
        }
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
