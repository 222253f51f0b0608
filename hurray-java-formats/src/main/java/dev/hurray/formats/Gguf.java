package dev.hurray.formats;

import dev.hurray.AtomicOutput;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongConsumer;

/**
 * GGUF, the llama.cpp / ggml model file (versions 2 and 3, little-endian): read its header,
 * typed metadata and tensor infos, map its tensors to Hurray tensors, and write the files whose
 * types Hurray can express.
 *
 * <p>The file layout, the mapping of ggml types to Hurray element types and quantizations, the
 * metadata records under {@value #TYPE_KEY_PREFIX}, {@value #KEY_ORDER_KEY},
 * {@value #VERSION_KEY} and {@value #TENSOR_TYPE_KEY_PREFIX}, the round-trip guarantee and the
 * hostile-input checks are documented once, in hurray-java-formats/README.md (§Format notes,
 * GGUF, and §GGUF metadata and round trip).
 *
 * <p><b>Ownership and threads.</b> {@link #read} reads each tensor's payload with positional
 * reads into native memory (never a mapping, so a file another process shortens meanwhile is a
 * {@link ForeignFormatException}, not a crash), owned by the returned model's shared arena,
 * valid until it is closed and readable from any thread until then.
 * Every failure on bad input is a {@link ForeignFormatException}.
 */
public final class Gguf {
    /** {@code GGUF} as a little-endian {@code uint32}. */
    private static final int MAGIC = 0x46554747;
    private static final int DEFAULT_ALIGNMENT = 32;
    private static final int MAX_ARRAY_DEPTH = GgufMetadata.MAX_ARRAY_DEPTH;
    /** The most arrays inside arrays one file's metadata may hold, all keys together: 2^20. */
    static final long MAX_INNER_ARRAYS = 1L << 20;
    private static final int MAX_RANK = 32;
    /** The GGUF specification's limit on a tensor name, in bytes of UTF-8 (llama.cpp's GGML_MAX_NAME less its NUL). */
    static final int MAX_TENSOR_NAME_BYTES = 63;
    private static final ValueLayout.OfInt U32 = Payloads.LE_INT;
    private static final ValueLayout.OfLong U64 = Payloads.LE_LONG;
    /**
     * Model metadata key prefix of the type records: {@code gguf.type.KEY} holds the GGUF value
     * type of the metadata value {@code KEY} (hurray-java-formats/README.md §GGUF metadata and
     * round trip).
     */
    public static final String TYPE_KEY_PREFIX = "gguf.type.";
    /** Model metadata key prefix naming the ggml type of a tensor carried as raw bytes: {@code gguf.tensor_type.NAME}. */
    public static final String TENSOR_TYPE_KEY_PREFIX = "gguf.tensor_type.";
    /** Model metadata key of the GGUF metadata keys in file order, a JSON array of strings. */
    public static final String KEY_ORDER_KEY = "gguf.key_order";
    /** Model metadata key of the file's GGUF version, {@code 2} or {@code 3}. */
    public static final String VERSION_KEY = "gguf.version";
    private static final String ALIGNMENT_KEY = "general.alignment";

    private Gguf() {
    }

    /** GGUF metadata value types, with their wire codes. */
    public enum ValueType {
        UINT8(0, 1), INT8(1, 1), UINT16(2, 2), INT16(3, 2), UINT32(4, 4), INT32(5, 4), FLOAT32(6, 4), BOOL(7, 1),
        STRING(8, 8), ARRAY(9, 12), UINT64(10, 8), INT64(11, 8), FLOAT64(12, 8);

        private final int code;
        private final int minBytes;

        ValueType(int code, int minBytes) {
            this.code = code;
            this.minBytes = minBytes;
        }

        /** The wire code. */
        public int code() {
            return code;
        }

        /** Bytes of the smallest encoding (the width of a number or bool). */
        int minBytes() {
            return minBytes;
        }

        static ValueType of(int code) {
            for (ValueType t : values()) {
                if (t.code == code) {
                    return t;
                }
            }
            return null;
        }
    }

    /**
     * A metadata value: its type and its Java value. Integers of up to 32 bits are
     * {@link Long}s (unsigned ones zero-extended), {@code UINT64}/{@code INT64} are {@link Long}s
     * (a {@code UINT64} above {@code Long.MAX_VALUE} is negative: read it with
     * {@link Long#toUnsignedString(long)}), floats are {@link Double}, {@code BOOL} is
     * {@link Boolean}, {@code STRING} is {@link String}, and an {@code ARRAY} is an unmodifiable
     * {@link List} of values of {@code elementType}.
     *
     * @param type        the value's type
     * @param elementType for an array, its elements' type; else {@code null}
     * @param value       the value, as above
     */
    public record Value(ValueType type, ValueType elementType, Object value) {
        public Value {
            Objects.requireNonNull(type, "type");
            Objects.requireNonNull(value, "value");
        }

        /**
         * The value as metadata text (hurray-java-formats/README.md §GGUF metadata and round
         * trip): the string itself, a decimal number, {@code true}/{@code false}, or a JSON array.
         */
        public String text() {
            StringBuilder sb = new StringBuilder();
            appendText(sb, type, elementType, value, false);
            return sb.toString();
        }

        /**
         * The value's type record (hurray-java-formats/README.md §GGUF metadata and round
         * trip): {@code uint32}, {@code array[string]}, {@code array[array[int32],array[string]]}.
         */
        public String typeRecord() {
            return GgufMetadata.typeRecord(this);
        }

        private static void appendText(StringBuilder sb, ValueType t, ValueType et, Object v, boolean quote) {
            switch (t) {
                case STRING -> {
                    if (quote) {
                        Json.quote(sb, (String) v);
                    } else {
                        sb.append((String) v);
                    }
                }
                case UINT64 -> sb.append(Long.toUnsignedString((Long) v));
                case FLOAT32 -> sb.append(GgufMetadata.float32Text((Double) v));
                case ARRAY -> {
                    if (v instanceof Scalars s) {
                        s.appendText(sb);
                        return;
                    }
                    sb.append('[');
                    boolean first = true;
                    for (Object o : (List<?>) v) {
                        if (!first) {
                            sb.append(',');
                        }
                        first = false;
                        if (o instanceof Value inner) {
                            appendText(sb, inner.type(), inner.elementType(), inner.value(), true);
                        } else {
                            appendText(sb, et, null, o, true);
                        }
                    }
                    sb.append(']');
                }
                default -> sb.append(v);
            }
        }
    }

    /**
     * ggml tensor types GGUF files use, with their wire codes, block sizes (elements per block)
     * and bytes per block. Plain types have blocks of one element.
     */
    public enum GgmlType {
        F32(0, 1, 4, ElementType.FLOAT32), F16(1, 1, 2, ElementType.FLOAT16),
        Q4_0(2, 32, 18, Quantization.GgufFormat.Q4_0), Q4_1(3, 32, 20), Q5_0(6, 32, 22), Q5_1(7, 32, 24),
        Q8_0(8, 32, 34, Quantization.GgufFormat.Q8_0), Q8_1(9, 32, 36),
        Q2_K(10, 256, 84), Q3_K(11, 256, 110), Q4_K(12, 256, 144), Q5_K(13, 256, 176),
        Q6_K(14, 256, 210), Q8_K(15, 256, 292),
        IQ2_XXS(16, 256, 66), IQ2_XS(17, 256, 74), IQ3_XXS(18, 256, 98), IQ1_S(19, 256, 50), IQ4_NL(20, 32, 18),
        IQ3_S(21, 256, 110), IQ2_S(22, 256, 82), IQ4_XS(23, 256, 136),
        I8(24, 1, 1, ElementType.INT8), I16(25, 1, 2, ElementType.INT16), I32(26, 1, 4, ElementType.INT32),
        I64(27, 1, 8, ElementType.INT64), F64(28, 1, 8, ElementType.FLOAT64), IQ1_M(29, 256, 56),
        BF16(30, 1, 2, ElementType.BFLOAT16), TQ1_0(34, 256, 54), TQ2_0(35, 256, 66),
        // MXFP4 as gpt-oss ships it: per 32 elements one E8M0 byte then 16 bytes of nibbles in
        // ggml's own order and scale convention, so it travels as raw rows rather than as
        // Hurray's MX layout (which would need a conversion).
        MXFP4(39, 32, 17), NVFP4(40, 64, 36), Q1_0(41, 128, 18);

        private final int code;
        private final int blockElements;
        private final int blockBytes;
        private final ElementType elementType;
        private final Quantization.GgufFormat blockFormat;

        /** A plain type. */
        GgmlType(int code, int blockElements, int blockBytes, ElementType elementType) {
            this(code, blockElements, blockBytes, elementType, null);
        }

        /** A block type Hurray quantizes the same way. */
        GgmlType(int code, int blockElements, int blockBytes, Quantization.GgufFormat blockFormat) {
            this(code, blockElements, blockBytes, null, blockFormat);
        }

        /** A block type carried as raw bytes. */
        GgmlType(int code, int blockElements, int blockBytes) {
            this(code, blockElements, blockBytes, null, null);
        }

        GgmlType(int code, int blockElements, int blockBytes, ElementType elementType, Quantization.GgufFormat blockFormat) {
            this.code = code;
            this.blockElements = blockElements;
            this.blockBytes = blockBytes;
            this.elementType = elementType;
            this.blockFormat = blockFormat;
        }

        /** The wire code ({@code ggml_type}). */
        public int code() {
            return code;
        }

        /** Elements per block (1 for plain types). */
        public int blockElements() {
            return blockElements;
        }

        /** Bytes per block. */
        public int blockBytes() {
            return blockBytes;
        }

        /**
         * True for the block-quantized types: {@link #Q8_0} and {@link #Q4_0}, which Hurray
         * quantizes the same way ({@link #blockFormat()}), and the others, carried as raw bytes
         * ({@link #isRaw()}; hurray-java-formats/README.md §Format notes, GGUF).
         */
        public boolean isBlock() {
            return elementType == null;
        }

        /** True for the block types carried as raw {@code uint8} rows: every block type but Q8_0 and Q4_0. */
        public boolean isRaw() {
            return elementType == null && blockFormat == null;
        }

        /** The Hurray element type of a plain type, or {@code null} for a block type. */
        public ElementType elementType() {
            return elementType;
        }

        /**
         * The Hurray GGUF block format of {@link #Q8_0} and {@link #Q4_0}
         * ({@link Quantization.Block}), or {@code null} for every other type.
         */
        public Quantization.GgufFormat blockFormat() {
            return blockFormat;
        }

        /** The ggml type of a Hurray GGUF block format. */
        public static GgmlType of(Quantization.GgufFormat format) {
            return switch (Objects.requireNonNull(format, "format")) {
                case Q8_0 -> Q8_0;
                case Q4_0 -> Q4_0;
            };
        }

        /** The ggml type with wire code {@code code}, or {@code null} if this reader does not know it. */
        public static GgmlType of(int code) {
            for (GgmlType t : values()) {
                if (t.code == code) {
                    return t;
                }
            }
            return null;
        }

        /** The plain ggml type of a Hurray element type, or {@code null} if GGUF has none. */
        public static GgmlType of(ElementType e) {
            for (GgmlType t : values()) {
                if (t.elementType == e) {
                    return t;
                }
            }
            return null;
        }
    }

    /**
     * One tensor info of the header.
     *
     * @param name   tensor name
     * @param dims   GGUF dimensions, fastest-varying first ({@code ne0, ne1, …})
     * @param type   ggml type
     * @param offset byte offset of the data from the start of the data section
     * @param bytes  byte size of the data
     */
    public record TensorInfo(String name, long[] dims, GgmlType type, long offset, long bytes) {
        public TensorInfo {
            dims = dims.clone();
        }

        @Override
        public long[] dims() {
            return dims.clone();
        }

        /** The row-major Hurray shape: the dimensions reversed. */
        public long[] shape() {
            long[] s = new long[dims.length];
            for (int i = 0; i < dims.length; i++) {
                s[i] = dims[dims.length - 1 - i];
            }
            return s;
        }
    }

    /**
     * A parsed GGUF header.
     *
     * @param version     2 or 3
     * @param metadata    the metadata in file order
     * @param tensors     the tensor infos in file order
     * @param alignment   the data alignment ({@code general.alignment}, default 32)
     * @param dataOffset  the data section's byte offset in the file
     */
    public record Header(int version, Map<String, Value> metadata, List<TensorInfo> tensors, int alignment,
                         long dataOffset) {
    }

    /**
     * Reads the header of a GGUF file (no tensor data is touched).
     *
     * @throws ForeignFormatException if the file is not GGUF v2/v3 little-endian, or any length,
     *     count, type or offset is invalid
     */
    public static Header readHeader(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            return readHeader(ch, ch.size(), file.toString());
        }
    }

    /** First bytes read for the header; doubled until the header fits (it rarely needs more). */
    private static final long HEADER_PREFIX = 1 << 20;

    /**
     * Parses the header from a prefix of the file read with positional reads (never a mapping:
     * a file shortened meanwhile is an error, not SIGBUS). A prefix too short for the header
     * fails to parse; the prefix is then doubled, up to the whole file, whose parse gives the
     * real error.
     */
    private static Header readHeader(FileChannel ch, long size, String what) throws IOException {
        for (long prefix = Math.min(size, HEADER_PREFIX); ; prefix = Math.min(size, prefix * 2)) {
            try (Arena scratch = Arena.ofConfined()) {
                MemorySegment head = Payloads.readAt(ch, 0, prefix, scratch, what);
                try {
                    return parse(head, size, what);
                } catch (ForeignFormatException e) {
                    if (prefix == size) {
                        throw e;
                    }
                }
            }
        }
    }

    /**
     * Opens a GGUF file as a model: the tensors (each read into native memory owned by the tensor
     * when it is first used, {@link ForeignTensor} §Lazy payloads; the model keeps the file open
     * until it is closed) and the
     * metadata as text plus type records, as hurray-java-formats/README.md §GGUF metadata and
     * round trip describes.
     *
     * @throws ForeignFormatException as for {@link #readHeader(Path)}, and for a metadata key
     *     in the reserved namespace of the records
     */
    public static ForeignModel read(Path file) throws IOException {
        String what = file.toString();
        FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
        try {
            long size = ch.size();
            Header h = readHeader(ch, size, what);
            Map<String, String> meta = new LinkedHashMap<>();
            StringBuilder order = new StringBuilder("[");
            for (Map.Entry<String, Value> e : h.metadata().entrySet()) {
                String key = e.getKey();
                if (isReserved(key)) {
                    throw new ForeignFormatException(what + ": metadata key '" + GgufMetadata.clip(key)
                            + "' is in a namespace this library reserves for its own records (" + TYPE_KEY_PREFIX + "*, "
                            + TENSOR_TYPE_KEY_PREFIX + "*, " + KEY_ORDER_KEY + ", " + VERSION_KEY + ")");
                }
                meta.put(key, e.getValue().text());
                if (e.getValue().type() != ValueType.STRING) {
                    meta.put(TYPE_KEY_PREFIX + key, e.getValue().typeRecord());
                }
                if (order.length() > 1) {
                    order.append(',');
                }
                Json.quote(order, key);
            }
            if (!h.metadata().isEmpty()) {
                meta.put(KEY_ORDER_KEY, order.append(']').toString());
            }
            meta.put(VERSION_KEY, Integer.toString(h.version()));
            List<ForeignTensor> tensors = new ArrayList<>();
            for (TensorInfo t : h.tensors()) {
                long at = h.dataOffset() + t.offset();
                long[] shape = t.shape();
                ElementType et = t.type().elementType();
                Quantization q = null;
                if (t.type().blockFormat() != null) {
                    et = storedType(t.type().blockFormat());
                    q = Quantization.Block.of(t.type().blockFormat(), shape.length);
                } else if (t.type().isRaw()) {
                    meta.put(TENSOR_TYPE_KEY_PREFIX + t.name(), t.type().name().toLowerCase(java.util.Locale.ROOT));
                    shape[shape.length - 1] = t.dims()[0] / t.type().blockElements() * t.type().blockBytes();
                    et = ElementType.UINT8;
                }
                try {
                    // Read on first use with positional reads: a file shortened meanwhile is an error, not SIGBUS.
                    tensors.add(ForeignTensor.lazy(t.name(), et, shape, Layout.Kind.ROW_MAJOR, q, new long[0], at,
                            bufs -> Payloads.readAt(ch, at, bufs[0], what, size)));
                } catch (IllegalArgumentException e) {
                    throw new ForeignFormatException(what + ": " + e.getMessage());
                }
            }
            try {
                return new ForeignModel(tensors, meta, null, List.of(ch));
            } catch (IllegalArgumentException dup) {
                throw new ForeignFormatException(what + ": " + dup.getMessage());
            }
        } catch (Throwable t) {
            ch.close();
            throw t;
        }
    }

    /**
     * Writes {@code model} as a GGUF file, atomically ({@link AtomicOutput}): version 3, or the
     * version {@value #VERSION_KEY} gives (2 or 3; the two differ only in the number).
     *
     * <p>The metadata: every model metadata entry but the records
     * (hurray-java-formats/README.md §GGUF metadata and round trip), in the order
     * {@value #KEY_ORDER_KEY} gives and then in model order, each as
     * the GGUF type its {@code gguf.type.KEY} record names (a {@code STRING} without one), its
     * text parsed as that type. {@code general.alignment} is written only when the model has it
     * (a {@code uint32}, also without a type record); its value, or 32, aligns the data.
     *
     * <p>The tensors, in model order, with the dimensions reversed; column-major tensors are
     * reordered to row-major. A tensor quantized as {@link #records GGUF blocks}
     * ({@link Quantization.Block}, int8 {@code Q8_0} or uint4 {@code Q4_0}, along the last
     * axis, float32 values) is written as that ggml type, its buffer's bytes as they are; a
     * plain {@code uint8} tensor named by a {@code gguf.tensor_type.NAME} record is written as
     * that ggml block type, its bytes as they are and {@code ne0} = row bytes / block bytes ×
     * block elements. The header is padded to the alignment when tensors follow, and so is each
     * tensor's data (as gguf-py and llama.cpp write it), so a file gguf-py or llama.cpp wrote
     * comes back byte for byte.
     *
     * @throws ForeignFormatException for a type record that is malformed or that the value's text
     *     does not fit (out of range, not a number, another array length), a key order record that
     *     is not a JSON array of distinct strings, a {@code general.alignment} that is not a
     *     power-of-two {@code uint32} up to 2^20; a raw record naming no ggml block type, on a
     *     tensor that is not plain {@code uint8}, or whose rows are not whole blocks; any other
     *     quantization (or GGUF blocks on the wrong element type or a column-major tensor), an
     *     element type GGUF has no plain type for (unsigned integers, complex, FP8, 4-bit, bool),
     *     a rank above 4 (ggml's), or a tensor name over 63 bytes of UTF-8 (llama.cpp's limit).
     *     Nothing is written then.
     */
    public static void write(ForeignModel model, Path target, LongConsumer progress) throws IOException {
        Map<String, String> meta = model.metadata();
        List<String> keys = keyOrder(meta);
        GgufMetadata.Bytes head = new GgufMetadata.Bytes();
        String version = meta.getOrDefault(VERSION_KEY, "3");
        if (!version.equals("2") && !version.equals("3")) {
            throw new ForeignFormatException("metadata '" + VERSION_KEY + "' is '" + GgufMetadata.clip(version)
                    + "'; GGUF versions 2 and 3 are written");
        }
        head.u32(MAGIC);
        head.u32(Integer.parseInt(version));
        head.u64(model.tensors().size());
        head.u64(keys.size());
        int alignment = DEFAULT_ALIGNMENT;
        for (String key : keys) {
            String record = meta.get(TYPE_KEY_PREFIX + key);
            GgufMetadata.Type type = record != null ? GgufMetadata.parseType(record, key)
                    : new GgufMetadata.Type(key.equals(ALIGNMENT_KEY) ? ValueType.UINT32 : ValueType.STRING, null, null);
            head.string(key, "metadata key '" + GgufMetadata.clip(key) + "'");
            head.u32(type.type().code());
            GgufMetadata.encode(type, meta.get(key), key, head);
            if (key.equals(ALIGNMENT_KEY)) {
                alignment = alignment(type, meta.get(key));
            }
        }
        List<ForeignTensor> ts = new ArrayList<>();
        long offset = 0;
        for (ForeignTensor t : model.tensors()) {
            Placement p = placementOf(t, meta);
            ForeignTensor row = Payloads.toRowMajorOnUse(t);
            ts.add(row);
            head.string(t.name(), "tensor name '" + GgufMetadata.clip(t.name()) + "'");
            head.u32(p.dims().length);
            for (long d : p.dims()) {
                head.u64(d);
            }
            head.u32(p.type().code());
            head.u64(offset);
            offset += padding(row.byteSize(), alignment) + row.byteSize();
        }
        if (!ts.isEmpty()) {
            head.pad(alignment); // no data section, no padding: llama.cpp's vocab-only files end so
        }
        ByteBuffer hb = head.toByteBuffer();
        ByteBuffer zeros = ByteBuffer.allocate(alignment);
        int al = alignment;
        AtomicOutput.write(target, out -> {
            while (hb.hasRemaining()) {
                out.write(hb);
            }
            for (ForeignTensor t : ts) {
                t.withData(data -> Payloads.writeFully(data, out, progress));
                zeros.clear().limit(padding(t.byteSize(), al));
                while (zeros.hasRemaining()) {
                    out.write(zeros);
                }
            }
        });
    }

    /** Zero bytes after {@code bytes} to the next multiple of {@code alignment}. */
    private static int padding(long bytes, int alignment) {
        return (int) ((alignment - bytes % alignment) % alignment);
    }

    /** True for the model metadata keys of this class's records, which are not GGUF metadata. */
    private static boolean isReserved(String key) {
        return key.startsWith(TYPE_KEY_PREFIX) || key.startsWith(TENSOR_TYPE_KEY_PREFIX) || key.equals(KEY_ORDER_KEY)
                || key.equals(VERSION_KEY);
    }

    /** The GGUF keys to write: those {@value #KEY_ORDER_KEY} lists (if present), then the rest in model order. */
    private static List<String> keyOrder(Map<String, String> meta) throws ForeignFormatException {
        java.util.LinkedHashSet<String> keys = new java.util.LinkedHashSet<>();
        String order = meta.get(KEY_ORDER_KEY);
        if (order != null) {
            for (String k : GgufMetadata.stringArray(order, KEY_ORDER_KEY)) {
                if (isReserved(k) || !keys.add(k)) {
                    throw new ForeignFormatException("metadata '" + KEY_ORDER_KEY + "' lists '" + GgufMetadata.clip(k)
                            + "' " + (isReserved(k) ? "(a record, not a GGUF key)" : "twice"));
                }
            }
            keys.retainAll(meta.keySet()); // keys removed since the file was read are simply not written
        }
        for (String k : meta.keySet()) {
            if (!isReserved(k)) {
                keys.add(k);
            }
        }
        return List.copyOf(keys);
    }

    /** The data alignment {@code general.alignment} gives: a power-of-two uint32 up to 2^20, as the reader accepts. */
    private static int alignment(GgufMetadata.Type type, String text) throws ForeignFormatException {
        long v = type.type() == ValueType.UINT32 ? Long.parseLong(text) : -1; // text already checked by encode
        if (v <= 0 || Long.bitCount(v) != 1 || v > 1 << 20) {
            throw new ForeignFormatException(ALIGNMENT_KEY + " must be a uint32 power of two up to 2^20, is "
                    + GgufMetadata.clip(text) + " (" + GgufMetadata.name(type.type()) + ")");
        }
        return (int) v;
    }

    /** A tensor's ggml type and GGUF dimensions ({@code ne0} first). */
    private record Placement(GgmlType type, long[] dims) {
    }

    /** Where {@code t} goes: its ggml type and dimensions, or a refusal naming why it has none. */
    private static Placement placementOf(ForeignTensor t, Map<String, String> meta) throws ForeignFormatException {
        if (t.rank() > 4) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': rank " + t.rank() + ", GGUF holds at most 4");
        }
        int nameBytes = t.name().getBytes(StandardCharsets.UTF_8).length;
        if (nameBytes > MAX_TENSOR_NAME_BYTES) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': a " + nameBytes + "-byte name; GGUF tensor names hold at most "
                    + MAX_TENSOR_NAME_BYTES + " bytes");
        }
        long[] shape = t.shape();
        long[] dims = new long[shape.length];
        for (int i = 0; i < shape.length; i++) {
            dims[i] = shape[shape.length - 1 - i];
        }
        String raw = meta.get(TENSOR_TYPE_KEY_PREFIX + t.name());
        if (raw == null) {
            return new Placement(typeOf(t), dims);
        }
        String record = TENSOR_TYPE_KEY_PREFIX + t.name() + " = '" + GgufMetadata.clip(raw) + "'";
        GgmlType type = null;
        for (GgmlType g : GgmlType.values()) {
            if (g.isBlock() && g.name().equalsIgnoreCase(raw)) {
                type = g;
            }
        }
        if (type == null) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': " + record + " names no ggml block type "
                    + "(q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, q2_k, q3_k, q4_k, q5_k, q6_k, q8_k)");
        }
        if (t.dtype() != ElementType.UINT8 || t.quantization().isPresent() || t.rank() < 1) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': " + record + ", but it is "
                    + (t.quantization().isPresent() ? "quantized " : "") + t.dtype() + " of rank " + t.rank()
                    + "; raw ggml blocks are a plain uint8 tensor [..., rowBytes]");
        }
        long rowBytes = shape[shape.length - 1];
        if (rowBytes % type.blockBytes() != 0) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': " + record + ", but its rows of " + rowBytes
                    + " bytes are not whole " + type + " blocks of " + type.blockBytes() + " bytes");
        }
        dims[0] = rowBytes / type.blockBytes() * type.blockElements();
        return new Placement(type, dims);
    }

    /**
     * True when {@link #write} records {@code q} as a ggml block type: a {@link Quantization.Block}
     * ({@code Q8_0} or {@code Q4_0}) along the last of {@code rank} axes with float32 as its
     * dequantized type, exactly what {@link #read} gives. Any other quantization is refused.
     */
    public static boolean records(Quantization q, int rank) {
        return q instanceof Quantization.Block b && rank > 0 && b.axis() == rank - 1
                && b.dequantized() == ElementType.FLOAT32;
    }

    /** The ggml type {@code t} is written as, or a refusal naming why it has none. */
    private static GgmlType typeOf(ForeignTensor t) throws ForeignFormatException {
        if (t.quantization().isEmpty()) {
            GgmlType type = GgmlType.of(t.dtype());
            if (type == null) {
                throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': GGUF has no type for " + t.dtype());
            }
            return type;
        }
        Quantization q = t.quantization().get();
        if (!records(q, t.rank())) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "' is quantized (" + Payloads.describe(q)
                    + "); GGUF records only q8_0 and q4_0 blocks along the last axis with float32 values");
        }
        Quantization.GgufFormat f = ((Quantization.Block) q).format();
        if (t.dtype() != storedType(f)) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': " + f + " blocks store " + storedType(f)
                    + ", not " + t.dtype());
        }
        return GgmlType.of(f);
    }

    /** The Hurray element type GGUF blocks of {@code format} store: int8 for Q8_0, uint4 for Q4_0. */
    private static ElementType storedType(Quantization.GgufFormat format) {
        return format == Quantization.GgufFormat.Q8_0 ? ElementType.INT8 : ElementType.UINT4;
    }

    // ------------------------------------------------------------------ parsing

    private static final class Cursor {
        final MemorySegment seg;
        final String what;
        long pos;
        /** Arrays inside arrays still allowed in this header (see {@link #MAX_INNER_ARRAYS}). */
        long innerArraysLeft = MAX_INNER_ARRAYS;

        Cursor(MemorySegment seg, String what) {
            this.seg = seg;
            this.what = what;
        }

        long remaining() {
            return seg.byteSize() - pos;
        }

        void need(long n, String field) throws ForeignFormatException {
            if (n < 0 || n > remaining()) {
                throw new ForeignFormatException(what + ": truncated GGUF: " + field + " needs " + Long.toUnsignedString(n)
                        + " bytes at offset " + pos + ", " + remaining() + " remain");
            }
        }

        int u8(String f) throws ForeignFormatException {
            need(1, f);
            return seg.get(ValueLayout.JAVA_BYTE, pos++) & 0xFF;
        }

        int u32(String f) throws ForeignFormatException {
            need(4, f);
            int v = seg.get(U32, pos);
            pos += 4;
            return v;
        }

        long u64(String f) throws ForeignFormatException {
            need(8, f);
            long v = seg.get(U64, pos);
            pos += 8;
            return v;
        }

        String string(String f) throws ForeignFormatException {
            long n = u64(f + " length");
            need(n, f);
            if (n > Integer.MAX_VALUE - 16) {
                throw new ForeignFormatException(what + ": " + f + " of " + n + " bytes is too long");
            }
            byte[] b = seg.asSlice(pos, n).toArray(ValueLayout.JAVA_BYTE);
            pos += n;
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
            } catch (CharacterCodingException e) {
                throw new ForeignFormatException(what + ": " + f + " is not UTF-8");
            }
        }
    }

    static Header parse(MemorySegment seg, String what) throws ForeignFormatException {
        return parse(seg, seg.byteSize(), what);
    }

    /** Parses the header from {@code seg}, the first bytes of a file of {@code fileSize} bytes. */
    static Header parse(MemorySegment seg, long fileSize, String what) throws ForeignFormatException {
        Cursor c = new Cursor(seg, what);
        if (seg.byteSize() < 24 || seg.get(U32, 0) != MAGIC) {
            throw new ForeignFormatException(what + ": not a GGUF file (no GGUF magic)");
        }
        c.pos = 4;
        int version = c.u32("version");
        if (version != 2 && version != 3) {
            if (Integer.reverseBytes(version) == 2 || Integer.reverseBytes(version) == 3) {
                throw new ForeignFormatException(what + ": a big-endian GGUF file; only little-endian is read");
            }
            throw new ForeignFormatException(what + ": GGUF version " + Integer.toUnsignedString(version)
                    + " (versions 2 and 3 are read)");
        }
        long tensorCount = c.u64("tensor count");
        long kvCount = c.u64("metadata count");
        // Each metadata entry takes at least 8+4+1 bytes, each tensor info at least 8+4+4+8.
        if (Long.compareUnsigned(kvCount, c.remaining() / 13) > 0 || Long.compareUnsigned(tensorCount, c.remaining() / 24) > 0) {
            throw new ForeignFormatException(what + ": GGUF declares " + Long.toUnsignedString(kvCount) + " metadata entries and "
                    + Long.toUnsignedString(tensorCount) + " tensors, more than its " + seg.byteSize() + " bytes can hold");
        }
        Map<String, Value> meta = new LinkedHashMap<>();
        for (long i = 0; i < kvCount; i++) {
            String key = c.string("metadata key " + i);
            int tc = c.u32("type of " + key);
            ValueType t = ValueType.of(tc);
            if (t == null) {
                throw new ForeignFormatException(what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "' has unknown value type " + Integer.toUnsignedString(tc));
            }
            if (meta.put(key, value(c, t, key, 0)) != null) {
                throw new ForeignFormatException(what + ": duplicate metadata key '" + dev.hurray.TensorNames.forMessage(key) + "'");
            }
        }
        int alignment = DEFAULT_ALIGNMENT;
        Value al = meta.get("general.alignment");
        if (al != null) {
            if (al.type() != ValueType.UINT32 || (Long) al.value() == 0 || Long.bitCount((Long) al.value()) != 1
                    || (Long) al.value() > 1 << 20) {
                throw new ForeignFormatException(what + ": general.alignment must be a uint32 power of two, is " + al.text());
            }
            alignment = (int) (long) (Long) al.value();
        }
        List<TensorInfo> infos = new ArrayList<>();
        java.util.Set<String> names = new java.util.HashSet<>();
        for (long i = 0; i < tensorCount; i++) {
            String name = c.string("tensor name " + i);
            if (!names.add(name)) {
                throw new ForeignFormatException(what + ": duplicate tensor name '" + dev.hurray.TensorNames.forMessage(name) + "'");
            }
            int rank = c.u32("rank of " + name);
            if (rank < 0 || rank > MAX_RANK) {
                throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "' has rank " + Integer.toUnsignedString(rank)
                        + ", more than " + MAX_RANK + ", the most a Hurray tensor has");
            }
            long[] dims = new long[rank];
            long count = 1;
            for (int d = 0; d < rank; d++) {
                dims[d] = c.u64("dimension of " + name);
                if (dims[d] < 0) {
                    throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "' has dimension " + Long.toUnsignedString(dims[d]));
                }
                try {
                    count = Math.multiplyExact(count, dims[d]);
                } catch (ArithmeticException e) {
                    throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "': element count overflows");
                }
            }
            int tc = c.u32("type of " + name);
            GgmlType type = GgmlType.of(tc);
            if (type == null) {
                throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "' has ggml type " + Integer.toUnsignedString(tc)
                        + ", which this reader does not know");
            }
            if (rank == 0 && type.blockElements() > 1) {
                // A scalar (no dimensions, one element, as ggml reads it) cannot hold a block.
                throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "': " + type + " stores blocks of "
                        + type.blockElements() + " elements, and the tensor has no dimensions (one element)");
            }
            if (rank > 0 && dims[0] % type.blockElements() != 0) {
                throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "': " + type + " stores blocks of "
                        + type.blockElements() + " elements along the last dimension (ne0), which is " + dims[0]
                        + ", not a multiple of " + type.blockElements());
            }
            long bytes;
            try {
                bytes = Math.multiplyExact(count / type.blockElements(), (long) type.blockBytes());
            } catch (ArithmeticException e) {
                throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "': byte size overflows");
            }
            long offset = c.u64("offset of " + name);
            if (offset < 0 || offset % alignment != 0) {
                throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(name) + "' offset " + Long.toUnsignedString(offset)
                        + " is not a multiple of the alignment " + alignment);
            }
            infos.add(new TensorInfo(name, dims, type, offset, bytes));
        }
        long dataOffset = (c.pos + alignment - 1) / alignment * alignment;
        long dataBytes = tensorCount == 0 ? 0 : fileSize - dataOffset;
        for (TensorInfo t : infos) {
            if (dataBytes < 0 || t.offset() > dataBytes || t.bytes() > dataBytes - t.offset()) {
                throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "' (" + t.bytes() + " bytes at data offset "
                        + t.offset() + ") runs past the end of the file");
            }
        }
        // A tensor's byte size follows from its type and dimensions; if it reaches into the next
        // tensor's data, the dimensions or the type do not match the data the file gives it.
        List<TensorInfo> byOffset = new ArrayList<>(infos);
        byOffset.sort(java.util.Comparator.comparingLong(TensorInfo::offset));
        for (int i = 1; i < byOffset.size(); i++) {
            TensorInfo a = byOffset.get(i - 1);
            TensorInfo b = byOffset.get(i);
            if (a.bytes() > b.offset() - a.offset()) {
                throw new ForeignFormatException(what + ": tensor '" + dev.hurray.TensorNames.forMessage(a.name()) + "' (" + a.type() + " "
                        + java.util.Arrays.toString(a.dims()) + ", " + a.bytes() + " bytes at data offset " + a.offset()
                        + ") overlaps tensor '" + dev.hurray.TensorNames.forMessage(b.name()) + "' at data offset " + b.offset()
                        + ": its size does not match the data the file gives it");
            }
        }
        return new Header(version, Collections.unmodifiableMap(meta), List.copyOf(infos), alignment, dataOffset);
    }

    private static Value value(Cursor c, ValueType t, String key, int depth) throws ForeignFormatException {
        return switch (t) {
            case UINT8 -> new Value(t, null, (long) c.u8(key));
            case INT8 -> new Value(t, null, (long) (byte) c.u8(key));
            case UINT16 -> new Value(t, null, (long) (c.u8(key) | c.u8(key) << 8));
            case INT16 -> new Value(t, null, (long) (short) (c.u8(key) | c.u8(key) << 8));
            case UINT32 -> new Value(t, null, Integer.toUnsignedLong(c.u32(key)));
            case INT32 -> new Value(t, null, (long) c.u32(key));
            case FLOAT32 -> new Value(t, null, (double) Float.intBitsToFloat(c.u32(key)));
            case BOOL -> {
                int b = c.u8(key);
                if (b > 1) {
                    throw new ForeignFormatException(c.what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "': bool value " + b);
                }
                yield new Value(t, null, b == 1);
            }
            case STRING -> new Value(t, null, c.string("metadata '" + dev.hurray.TensorNames.forMessage(key) + "'"));
            case UINT64, INT64 -> new Value(t, null, c.u64(key));
            case FLOAT64 -> new Value(t, null, Double.longBitsToDouble(c.u64(key)));
            case ARRAY -> {
                if (depth >= MAX_ARRAY_DEPTH) {
                    throw new ForeignFormatException(c.what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "': arrays nested deeper than " + MAX_ARRAY_DEPTH);
                }
                if (depth > 0 && --c.innerArraysLeft < 0) {
                    // Each inner array becomes objects some 7 times the 12 bytes it takes in the
                    // file; real files have a few (token merges are strings, not arrays).
                    throw new ForeignFormatException(c.what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "': more than " + MAX_INNER_ARRAYS
                            + " arrays inside arrays in one file");
                }
                int ec = c.u32(key + " element type");
                ValueType et = ValueType.of(ec);
                if (et == null) {
                    throw new ForeignFormatException(c.what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "' has unknown array element type "
                            + Integer.toUnsignedString(ec));
                }
                long n = c.u64(key + " length");
                if (Long.compareUnsigned(n, c.remaining() / et.minBytes) > 0) {
                    throw new ForeignFormatException(c.what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "' declares " + Long.toUnsignedString(n)
                            + " elements, more than the " + c.remaining() + " remaining bytes can hold");
                }
                if (et != ValueType.STRING && et != ValueType.ARRAY) {
                    // Numbers and booleans stay in the file's bytes, decoded on access: a list of
                    // boxed values would take some 20 times the bytes the file spends on them.
                    yield new Value(t, et, Scalars.read(c, et, n, key));
                }
                if (n > Integer.MAX_VALUE - 8) {
                    throw new ForeignFormatException(c.what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "' has " + Long.toUnsignedString(n)
                            + " elements, more than a list holds");
                }
                List<Object> l = new ArrayList<>((int) n);
                for (long i = 0; i < n; i++) {
                    Value v = value(c, et, key, depth + 1);
                    l.add(et == ValueType.ARRAY ? v : v.value());
                }
                yield new Value(t, et, Collections.unmodifiableList(l));
            }
        };
    }

    /**
     * An unmodifiable list of {@code n} fixed-width metadata values of one type (numbers or
     * booleans), kept as the file's little-endian bytes and boxed as {@link Value} describes
     * when read.
     */
    private static final class Scalars extends java.util.AbstractList<Object> implements java.util.RandomAccess {
        private final ValueType type;
        private final MemorySegment bytes;
        private final int size;

        private Scalars(ValueType type, MemorySegment bytes, int size) {
            this.type = type;
            this.bytes = bytes;
            this.size = size;
        }

        static Scalars read(Cursor c, ValueType type, long n, String key) throws ForeignFormatException {
            long width = type.minBytes;
            c.need(n * width, key);
            if (n * width > Integer.MAX_VALUE - 8) {
                throw new ForeignFormatException(c.what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "' has " + n
                        + " elements, more than a list holds");
            }
            MemorySegment copy = MemorySegment.ofArray(c.seg.asSlice(c.pos, n * width).toArray(ValueLayout.JAVA_BYTE));
            if (type == ValueType.BOOL) {
                for (long i = 0; i < n; i++) {
                    int b = copy.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
                    if (b > 1) {
                        throw new ForeignFormatException(c.what + ": metadata '" + dev.hurray.TensorNames.forMessage(key) + "': bool value " + b);
                    }
                }
            }
            c.pos += n * width;
            return new Scalars(type, copy, (int) n);
        }

        @Override
        public Object get(int index) {
            java.util.Objects.checkIndex(index, size);
            long at = (long) index * type.minBytes;
            return switch (type) {
                case UINT8 -> (long) (bytes.get(ValueLayout.JAVA_BYTE, at) & 0xFF);
                case INT8 -> (long) bytes.get(ValueLayout.JAVA_BYTE, at);
                case UINT16 -> (long) (bytes.get(Payloads.LE_SHORT, at) & 0xFFFF);
                case INT16 -> (long) bytes.get(Payloads.LE_SHORT, at);
                case UINT32 -> Integer.toUnsignedLong(bytes.get(U32, at));
                case INT32 -> (long) bytes.get(U32, at);
                case FLOAT32 -> (double) Float.intBitsToFloat(bytes.get(U32, at));
                case BOOL -> bytes.get(ValueLayout.JAVA_BYTE, at) == 1;
                case UINT64, INT64 -> bytes.get(U64, at);
                case FLOAT64 -> Double.longBitsToDouble(bytes.get(U64, at));
                case STRING, ARRAY -> throw new IllegalStateException(type.toString());
            };
        }

        @Override
        public int size() {
            return size;
        }

        /** Appends the JSON array {@link Value#text()} gives, without boxing each element. */
        void appendText(StringBuilder sb) {
            sb.append('[');
            for (int i = 0; i < size; i++) {
                if (i > 0) {
                    sb.append(',');
                }
                long at = (long) i * type.minBytes;
                switch (type) {
                    case UINT8 -> sb.append(bytes.get(ValueLayout.JAVA_BYTE, at) & 0xFF);
                    case INT8 -> sb.append(bytes.get(ValueLayout.JAVA_BYTE, at));
                    case UINT16 -> sb.append(bytes.get(Payloads.LE_SHORT, at) & 0xFFFF);
                    case INT16 -> sb.append(bytes.get(Payloads.LE_SHORT, at));
                    case UINT32 -> sb.append(Integer.toUnsignedLong(bytes.get(U32, at)));
                    case INT32 -> sb.append(bytes.get(U32, at));
                    case FLOAT32 -> sb.append(Float.intBitsToFloat(bytes.get(U32, at))); // as float32Text
                    case BOOL -> sb.append(bytes.get(ValueLayout.JAVA_BYTE, at) == 1);
                    case UINT64 -> sb.append(Long.toUnsignedString(bytes.get(U64, at)));
                    case INT64 -> sb.append(bytes.get(U64, at));
                    case FLOAT64 -> sb.append(Double.longBitsToDouble(bytes.get(U64, at)));
                    case STRING, ARRAY -> throw new IllegalStateException(type.toString());
                }
            }
            sb.append(']');
        }
    }
}
