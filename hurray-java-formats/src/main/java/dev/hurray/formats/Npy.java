package dev.hurray.formats;

import dev.hurray.AtomicOutput;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongConsumer;

/**
 * NumPy {@code .npy} files, format versions 1.0, 2.0 and 3.0.
 *
 * <p>Layout: the magic {@code \x93NUMPY}, a major and a minor version byte, the header length
 * (2 bytes little-endian in 1.0, 4 bytes in 2.0/3.0), then the header: a Python dict literal
 * {@code {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }} padded with spaces and a
 * newline (latin-1 in 1.0/2.0, UTF-8 in 3.0), then the array's bytes.
 *
 * <p><b>Reading.</b> The header is parsed strictly ({@link PyLiteral}: nothing is evaluated);
 * it must hold exactly the keys {@code descr}, {@code fortran_order} and {@code shape}.
 * Supported descrs: {@code |b1}, {@code i1 i2 i4 i8}, {@code u1 u2 u4 u8}, {@code f2 f4 f8},
 * {@code c8 c16}, with byte order {@code <} or {@code >} ({@code |} or either for one-byte
 * types). Big-endian data is converted to little-endian by reversing the bytes of each element
 * (each component for complex types): a byte permutation, never a value conversion.
 * The data is read into 64-byte aligned native memory with positional reads. Object ({@code O}),
 * structured, string, datetime and other dtypes are rejected with a message naming the dtype.
 * A file must end exactly where the array's bytes end. Fortran-order arrays stay
 * column-major: their bytes are kept as they are and the tensor says {@link Layout.Kind#COLUMN_MAJOR}.
 *
 * <p><b>Writing.</b> Produces the same bytes NumPy's {@code np.save} produces (version 1.0
 * unless the header needs 2.0; descr byte order {@code <}, or {@code |} for one-byte types;
 * header padded so the data starts at a multiple of 64, with NumPy's spare room for growing the
 * first axis). Column-major tensors are written with {@code fortran_order: True}.
 */
public final class Npy {
    /** Largest header accepted, in bytes (NumPy's own writer never needs more than a few hundred). */
    public static final int MAX_HEADER_BYTES = 65536;
    private static final int MAX_RANK = ForeignTensor.MAX_RANK;
    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final int ALIGN = 64;
    private static final int GROWTH_AXIS_MAX_DIGITS = 21;

    private Npy() {
    }

    /**
     * A parsed npy header.
     *
     * @param dtype       element type
     * @param bigEndian   whether the data is big-endian (always false for one-byte types)
     * @param fortran     {@code fortran_order}
     * @param shape       dimensions
     * @param headerBytes bytes from the start of the file to the array data
     * @param descr       the descr string as written
     */
    public record Header(ElementType dtype, boolean bigEndian, boolean fortran, long[] shape, int headerBytes, String descr) {
        /** The array's size in bytes. */
        public long payloadBytes() {
            return dtype.byteSizeOf(ForeignTensor.elementCount(shape));
        }
    }

    /** Whether {@code start} begins with the npy magic. */
    public static boolean hasMagic(byte[] start) {
        return start.length >= MAGIC.length && Arrays.equals(start, 0, MAGIC.length, MAGIC, 0, MAGIC.length);
    }

    /**
     * Reads and validates the header from {@code in}, leaving it positioned at the data.
     *
     * @param what names the source in messages
     * @throws ForeignFormatException if it is not a valid npy header or its dtype is unsupported
     * @throws IOException            if reading fails
     */
    public static Header readHeader(InputStream in, String what) throws IOException {
        byte[] pre = new byte[8];
        int got = in.readNBytes(pre, 0, 8);
        if (got < MAGIC.length || !hasMagic(pre)) {
            throw new ForeignFormatException(what + ": not an npy file (no \\x93NUMPY magic)");
        }
        if (got < 8) {
            throw new ForeignFormatException(what + ": truncated npy header");
        }
        int major = pre[6] & 0xFF;
        int minor = pre[7] & 0xFF;
        if ((major < 1 || major > 3) || minor != 0) {
            throw new ForeignFormatException(what + ": unsupported npy format version " + major + "." + minor);
        }
        int lenBytes = major == 1 ? 2 : 4;
        byte[] lb = in.readNBytes(lenBytes);
        if (lb.length < lenBytes) {
            throw new ForeignFormatException(what + ": truncated npy header");
        }
        long hlen = (lb[0] & 0xFFL) | (lb[1] & 0xFFL) << 8;
        if (lenBytes == 4) {
            hlen |= (lb[2] & 0xFFL) << 16 | (lb[3] & 0xFFL) << 24;
        }
        if (hlen > MAX_HEADER_BYTES) {
            throw new ForeignFormatException(what + ": npy header length " + hlen + " exceeds the limit of "
                    + MAX_HEADER_BYTES + " bytes");
        }
        byte[] hb = in.readNBytes((int) hlen);
        if (hb.length < hlen) {
            throw new ForeignFormatException(what + ": truncated npy header (" + hb.length + " of " + hlen + " bytes)");
        }
        String text = new String(hb, major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        int total = 8 + lenBytes + (int) hlen;
        return parseHeaderText(text, total, what);
    }

    static Header parseHeaderText(String text, int total, String what) throws ForeignFormatException {
        Object v;
        try {
            v = PyLiteral.parse(text);
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException(what + ": malformed npy header: " + e.getMessage());
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new ForeignFormatException(what + ": npy header is not a dict");
        }
        if (!m.keySet().equals(Set.of("descr", "fortran_order", "shape"))) {
            throw new ForeignFormatException(what + ": npy header keys are " + m.keySet()
                    + ", expected exactly descr, fortran_order and shape");
        }
        if (!(m.get("fortran_order") instanceof Boolean fortran)) {
            throw new ForeignFormatException(what + ": npy fortran_order is not True or False");
        }
        if (!(m.get("shape") instanceof PyLiteral.Tuple st)) {
            throw new ForeignFormatException(what + ": npy shape is not a tuple");
        }
        if (st.items().size() > MAX_RANK) {
            throw new ForeignFormatException(what + ": npy rank " + st.items().size() + " exceeds " + MAX_RANK
                    + ", the most a Hurray tensor has");
        }
        long[] shape = new long[st.items().size()];
        for (int i = 0; i < shape.length; i++) {
            if (!(st.items().get(i) instanceof BigInteger b) || b.signum() < 0 || b.bitLength() > 63) {
                throw new ForeignFormatException(what + ": npy shape entry " + st.items().get(i)
                        + " is not a non-negative integer");
            }
            shape[i] = b.longValue();
        }
        Object d = m.get("descr");
        if (!(d instanceof String descr)) {
            throw new ForeignFormatException(what + ": structured npy dtype " + PyLiteralFormat.repr(d)
                    + " is not supported (only plain numeric and bool arrays are)");
        }
        ElementType dtype;
        boolean big;
        if (descr.length() < 2) {
            throw new ForeignFormatException(what + ": npy dtype '" + descr + "' is not supported");
        }
        char order = descr.charAt(0);
        String code = descr.substring(1);
        if (order != '<' && order != '>' && order != '|') {
            throw new ForeignFormatException(what + ": npy dtype '" + descr + "' has no explicit byte order");
        }
        dtype = switch (code) {
            case "b1" -> ElementType.BOOL;
            case "i1" -> ElementType.INT8;
            case "i2" -> ElementType.INT16;
            case "i4" -> ElementType.INT32;
            case "i8" -> ElementType.INT64;
            case "u1" -> ElementType.UINT8;
            case "u2" -> ElementType.UINT16;
            case "u4" -> ElementType.UINT32;
            case "u8" -> ElementType.UINT64;
            case "f2" -> ElementType.FLOAT16;
            case "f4" -> ElementType.FLOAT32;
            case "f8" -> ElementType.FLOAT64;
            case "c8" -> ElementType.COMPLEX64;
            case "c16" -> ElementType.COMPLEX128;
            default -> throw new ForeignFormatException(what + ": npy dtype '" + descr + "' " + unsupportedWhy(code));
        };
        if (Payloads.byteWidth(dtype) > 1 && order == '|') {
            throw new ForeignFormatException(what + ": npy dtype '" + descr + "' has no byte order");
        }
        big = order == '>' && Payloads.swapUnit(dtype) > 1;
        try {
            dtype.byteSizeOf(ForeignTensor.elementCount(shape));
        } catch (ArithmeticException e) {
            throw new ForeignFormatException(what + ": npy shape " + Arrays.toString(shape) + " overflows");
        }
        return new Header(dtype, big, fortran, shape, total, descr);
    }

    private static String unsupportedWhy(String code) {
        char k = code.charAt(0);
        return switch (k) {
            case 'O' -> "(object array: Python object references, not tensor data) is not supported";
            case 'V' -> "(void/structured record) is not supported";
            case 'S', 'a' -> "(byte strings) is not supported";
            case 'U' -> "(unicode strings) is not supported";
            case 'M', 'm' -> "(datetime/timedelta) is not supported";
            default -> "has no Hurray element type";
        };
    }

    /**
     * Opens an npy file: the header is read and checked now, the payload on first use
     * ({@link ForeignTensor}, §Lazy payloads: positional reads into 64-byte aligned native memory
     * owned by the tensor; a file shortened meanwhile is an error, never a crash); big-endian
     * payloads are byte-swapped as they are read. The returned model keeps the file open until it
     * is closed. The tensor is named {@code name}.
     *
     * @throws ForeignFormatException on an invalid or unsupported file, or a size mismatch
     */
    public static ForeignModel read(Path file, String name) throws IOException {
        String what = file.toString();
        FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
        try {
            long size = ch.size();
            Header h = readHeader(Channels.newInputStream(ch), what);
            long need = h.payloadBytes();
            long have = size - h.headerBytes();
            if (have != need) {
                throw new ForeignFormatException(what + ": npy " + h.descr() + Arrays.toString(h.shape()) + " needs "
                        + need + " data bytes, the file has " + have + (have < need ? " (truncated)" : " (trailing bytes)"));
            }
            ForeignTensor t = ForeignTensor.lazy(name, h.dtype(), h.shape(),
                    h.fortran() ? Layout.Kind.COLUMN_MAJOR : Layout.Kind.ROW_MAJOR, null, new long[0],
                    h.bigEndian() ? -1 : h.headerBytes(), bufs -> {
                        // Positional reads, not a mapping: a file shortened meanwhile is an error, not SIGBUS.
                        Payloads.readAt(ch, h.headerBytes(), bufs[0], what, size);
                        if (h.bigEndian()) {
                            Payloads.swapInPlace(bufs[0], Payloads.swapUnit(h.dtype()));
                        }
                    });
            return new ForeignModel(List.of(t), Map.of(), null, List.of(ch));
        } catch (Throwable t) {
            ch.close();
            throw t;
        }
    }

    /**
     * Reads one array's data from {@code in} (positioned after its header) into memory from
     * {@code arena}, byte-swapping big-endian data, and checks that {@code in} then ends.
     */
    static MemorySegment readData(InputStream in, Header h, Arena arena, String what, LongConsumer progress)
            throws IOException {
        MemorySegment data = Payloads.allocate(arena, h.payloadBytes());
        readData(in, h, data, what, progress);
        return data;
    }

    /**
     * Fills {@code data} ({@code h.payloadBytes()} bytes) from {@code in}, positioned after the
     * header, byte-swapping big-endian data. Reads at most one byte past the declared array: a
     * stream that goes on (an npz member inflating past its declared size) is refused there,
     * without inflating the rest.
     */
    static void readData(InputStream in, Header h, MemorySegment data, String what, LongConsumer progress)
            throws IOException {
        try {
            Payloads.readFully(in, data, progress);
        } catch (EOFException e) {
            throw new ForeignFormatException(what + ": truncated npy data: " + e.getMessage());
        }
        if (in.read() >= 0) {
            throw new ForeignFormatException(what + ": holds more bytes than the " + h.payloadBytes()
                    + " its npy header declares for " + h.descr() + Arrays.toString(h.shape())
                    + " (refused without reading the rest)");
        }
        if (h.bigEndian()) {
            Payloads.swapInPlace(data, Payloads.swapUnit(h.dtype()));
        }
    }

    /** The npy descr NumPy writes for {@code t} ({@code <f4}, {@code |b1}), or {@code null} if none. */
    public static String descr(ElementType t) {
        String code = switch (t) {
            case BOOL -> "b1";
            case INT8 -> "i1";
            case INT16 -> "i2";
            case INT32 -> "i4";
            case INT64 -> "i8";
            case UINT8 -> "u1";
            case UINT16 -> "u2";
            case UINT32 -> "u4";
            case UINT64 -> "u8";
            case FLOAT16 -> "f2";
            case FLOAT32 -> "f4";
            case FLOAT64 -> "f8";
            case COMPLEX64 -> "c8";
            case COMPLEX128 -> "c16";
            default -> null;
        };
        if (code == null) {
            return null;
        }
        return (t.bitWidth() == 8 ? "|" : "<") + code;
    }

    /**
     * The complete header (magic through the newline) NumPy would write for this array.
     *
     * @throws ForeignFormatException if npy has no dtype for {@code t}'s element type or the
     *                                tensor is quantized (npy cannot record that)
     */
    public static byte[] header(ForeignTensor t) throws ForeignFormatException {
        String descr = descr(t.dtype());
        if (descr == null) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "': npy has no dtype for " + t.dtype());
        }
        if (t.quantization().isPresent()) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "' is quantized ("
                    + Payloads.describe(t.quantization().get()) + "); npy cannot record quantization");
        }
        boolean fortran = t.layout() == Layout.Kind.COLUMN_MAJOR;
        long[] shape = t.shape();
        StringBuilder sb = new StringBuilder();
        sb.append("{'descr': '").append(descr).append("', 'fortran_order': ").append(fortran ? "True" : "False")
                .append(", 'shape': (");
        for (int i = 0; i < shape.length; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(shape[i]);
        }
        if (shape.length == 1) {
            sb.append(',');
        }
        sb.append("), }");
        if (shape.length > 0) {
            // NumPy leaves room to rewrite the growth axis in place (the first axis in C order).
            long growth = shape[fortran ? shape.length - 1 : 0];
            sb.append(" ".repeat(Math.max(0, GROWTH_AXIS_MAX_DIGITS - Long.toString(growth).length())));
        }
        byte[] dict = sb.toString().getBytes(StandardCharsets.ISO_8859_1);
        int major = 1;
        int prefix = MAGIC.length + 2 + 2;
        int hlen = dict.length + 1;
        int pad = ALIGN - ((prefix + hlen) % ALIGN);
        if (hlen + pad > 0xFFFF) {
            major = 2;
            prefix = MAGIC.length + 2 + 4;
            pad = ALIGN - ((prefix + hlen) % ALIGN);
        }
        int total = hlen + pad;
        ByteArrayOutputStream out = new ByteArrayOutputStream(prefix + total);
        out.writeBytes(MAGIC);
        out.write(major);
        out.write(0);
        out.write(total & 0xFF);
        out.write((total >>> 8) & 0xFF);
        if (major == 2) {
            out.write((total >>> 16) & 0xFF);
            out.write((total >>> 24) & 0xFF);
        }
        out.writeBytes(dict);
        for (int i = 0; i < pad; i++) {
            out.write(' ');
        }
        out.write('\n');
        return out.toByteArray();
    }

    /**
     * Writes one tensor as an npy file, atomically ({@link AtomicOutput}).
     *
     * @throws ForeignFormatException if npy cannot represent the tensor (see {@link #header})
     */
    public static void write(ForeignTensor t, Path target, LongConsumer progress) throws IOException {
        byte[] header = header(t);
        AtomicOutput.write(target, out -> {
            ByteBuffer hb = ByteBuffer.wrap(header);
            while (hb.hasRemaining()) {
                out.write(hb);
            }
            t.withData(data -> Payloads.writeFully(data, out, progress));
        });
    }
}
