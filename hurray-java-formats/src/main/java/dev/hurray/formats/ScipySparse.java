package dev.hurray.formats;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

/**
 * scipy.sparse {@code .npz} files as written by {@code scipy.sparse.save_npz}: a zip of
 * {@code format.npy} (a byte string {@code csr}, {@code csc}, {@code bsr} or {@code coo}),
 * {@code shape.npy} (two integers), {@code data.npy}, and {@code indices.npy} +
 * {@code indptr.npy} (CSR, CSC, BSR; BSR's block shape is the last two dimensions of
 * {@code data}) or {@code row.npy} + {@code col.npy} (COO).
 *
 * <p>Reading gives one Hurray tensor with the same layout (docs/spec/descriptor.md §Sparse
 * layouts): values, then indptr and indices (COO: the row and column arrays one after the
 * other). scipy does not store whether indices are sorted, so the tensor is marked
 * non-canonical (densify then sums duplicates, as scipy does). Index arrays of different
 * integer widths are widened to int64. The shape may be any integer type. scipy's
 * {@code _is_array} flag (a {@code csr_array} rather than a {@code csr_matrix}) is kept as the
 * tensor metadata {@value #ARRAY_FLAG_KEY}. The native library checks every index when the
 * tensor is written (to npz too, before anything is written) or densified. Writing does the
 * reverse, so npz → HRRYFILE → npz gives the same arrays and the same scipy class.
 */
public final class ScipySparse {
    private static final long MAX_FORMAT_ENTRY = 4096;

    /**
     * Per-tensor metadata key (value {@code true}) recording that the archive held a sparse
     * <em>array</em> ({@code scipy.sparse.csr_array}, {@code coo_array}, …; save_npz's
     * {@code _is_array} entry) rather than a matrix, so that writing gives load_npz an array back.
     */
    public static final String ARRAY_FLAG_KEY = "scipy.sparse.is_array";

    private ScipySparse() {}

    /** True if {@code file} is a zip holding {@code format.npy} and {@code shape.npy} (save_npz's layout). */
    public static boolean isSparseNpz(Path file) {
        try (ZipFile z = new ZipFile(file.toFile())) {
            return z.getEntry("format.npy") != null && z.getEntry("shape.npy") != null;
        } catch (IOException e) {
            return false;
        }
    }

    /** One array of the archive: its header and little-endian data. */
    private record Arr(Npy.Header h, MemorySegment data) {
        long count() {
            return ForeignTensor.elementCount(h.shape());
        }
    }

    /**
     * Reads a save_npz archive into a new sparse tensor (confined to the calling thread; the
     * caller closes it).
     *
     * @throws ForeignFormatException for anything but a coo/csr/csc/bsr archive with consistent
     *     arrays (the native library then checks the index contents)
     */
    public static Tensor read(Path file) throws IOException {
        String what = file.toString();
        long fileSize = java.nio.file.Files.size(file);
        long maxInflated = Npz.maxInflatedBytes();
        long inflated = 0;
        try (Arena arena = Arena.ofConfined(); ZipFile zip = new ZipFile(file.toFile())) {
            String format = null;
            Map<String, Arr> arrays = new HashMap<>();
            Enumeration<? extends ZipEntry> en = zip.entries();
            while (en.hasMoreElements()) {
                ZipEntry e = en.nextElement();
                String ewhat = what + "!" + e.getName();
                if (e.getName().equals("format.npy")) {
                    format = readFormat(zip, e, ewhat);
                    continue;
                }
                try (InputStream in = zip.getInputStream(e)) {
                    Npy.Header h = Npy.readHeader(in, ewhat);
                    // The npz reader's checks, before anything is allocated (a zip bomb or a lying header).
                    inflated = Npz.checkEntry(e, h, fileSize, inflated, maxInflated, ewhat);
                    arrays.put(e.getName().replaceFirst("\\.npy$", ""), new Arr(h, Npy.readData(in, h, arena, ewhat, null)));
                }
            }
            if (format == null) {
                throw new ForeignFormatException(what + ": no format.npy (not a scipy.sparse save_npz file)");
            }
            return build(what, format, arrays);
        }
    }

    private static String readFormat(ZipFile zip, ZipEntry e, String what) throws IOException {
        if (e.getSize() > MAX_FORMAT_ENTRY) {
            throw new ForeignFormatException(what + ": format entry of " + e.getSize() + " bytes");
        }
        byte[] b;
        try (InputStream in = zip.getInputStream(e)) {
            b = in.readNBytes((int) MAX_FORMAT_ENTRY + 1);
        }
        if (b.length < 10 || b.length > MAX_FORMAT_ENTRY || b[0] != (byte) 0x93) {
            throw new ForeignFormatException(what + ": not an npy byte string");
        }
        int major = b[6];
        int len = major == 1 ? (b[8] & 0xFF) | (b[9] & 0xFF) << 8 : (b[8] & 0xFF) | (b[9] & 0xFF) << 8 | (b[10] & 0xFF) << 16;
        int start = major == 1 ? 10 : 12;
        if (start + len > b.length) {
            throw new ForeignFormatException(what + ": npy header runs past the entry");
        }
        String header = new String(b, start, len, StandardCharsets.ISO_8859_1);
        if (!header.contains("'descr': '|S") && !header.contains("'descr': 'S")) {
            throw new ForeignFormatException(what + ": format is not a byte string (" + header.strip() + ")");
        }
        return new String(b, start + len, b.length - start - len, StandardCharsets.US_ASCII).replace("\0", "").strip();
    }

    private static Arr need(Map<String, Arr> a, String name, String what) throws ForeignFormatException {
        Arr x = a.get(name);
        if (x == null) {
            throw new ForeignFormatException(what + ": missing " + name + ".npy");
        }
        return x;
    }

    private static Arr indexArray(Map<String, Arr> a, String name, String what) throws ForeignFormatException {
        Arr x = need(a, name, what);
        if ((x.h().dtype() != ElementType.INT32 && x.h().dtype() != ElementType.INT64) || x.h().shape().length != 1) {
            throw new ForeignFormatException(what + ": " + name + " must be a 1-D int32 or int64 array, not "
                    + x.h().dtype() + java.util.Arrays.toString(x.h().shape()));
        }
        return x;
    }

    private static MemorySegment widened(Arr x, boolean wide, Arena arena) {
        if (!wide || x.h().dtype() == ElementType.INT64) {
            return x.data();
        }
        long n = x.count();
        MemorySegment out = arena.allocate(8 * n, 64);
        ValueLayout.OfInt in32 = Payloads.LE_INT;
        ValueLayout.OfLong out64 = Payloads.LE_LONG;
        for (long i = 0; i < n; i++) {
            out.setAtIndex(out64, i, x.data().getAtIndex(in32, i));
        }
        return out;
    }

    private static Tensor build(String what, String format, Map<String, Arr> a) throws IOException {
        Arr shapeArr = need(a, "shape", what);
        if (!isInteger(shapeArr.h().dtype()) || shapeArr.count() != 2) {
            throw new ForeignFormatException(what + ": shape must hold two integers");
        }
        long[] shape = new long[2];
        for (int i = 0; i < 2; i++) {
            shape[i] = integerAt(shapeArr, i);
            if (shape[i] < 0) {
                throw new ForeignFormatException(what + ": shape " + (shapeArr.h().dtype() == ElementType.UINT64
                        ? Long.toUnsignedString(shape[i]) : Long.toString(shape[i])) + " out of range");
            }
        }
        boolean isArray = arrayFlag(a, what);
        Arr data = need(a, "data", what);
        ElementType et = data.h().dtype();
        try (Arena arena = Arena.ofConfined()) {
            String[] idxNames = format.equals("coo") ? new String[] {"row", "col"} : new String[] {"indptr", "indices"};
            Arr i0 = indexArray(a, idxNames[0], what);
            Arr i1 = indexArray(a, idxNames[1], what);
            boolean wide = i0.h().dtype() == ElementType.INT64 || i1.h().dtype() == ElementType.INT64;
            ElementType it = wide ? ElementType.INT64 : ElementType.INT32;
            long isz = wide ? 8 : 4;
            MemorySegment s0 = widened(i0, wide, arena);
            MemorySegment s1 = widened(i1, wide, arena);
            Layout layout;
            MemorySegment[] bufs;
            switch (format) {
                case "coo" -> {
                    if (i0.count() != i1.count() || data.count() != i0.count()) {
                        throw new ForeignFormatException(what + ": row, col and data lengths differ");
                    }
                    MemorySegment idx = arena.allocate(2 * isz * i0.count(), 64);
                    idx.copyFrom(s0);
                    idx.asSlice(isz * i0.count()).copyFrom(s1);
                    layout = Layout.coo(it, i0.count(), false);
                    bufs = new MemorySegment[] {data.data(), idx};
                }
                case "csr", "csc" -> {
                    layout = format.equals("csr") ? Layout.csr(it, i1.count(), false) : Layout.csc(it, i1.count(), false);
                    bufs = new MemorySegment[] {data.data(), s0, s1};
                }
                case "bsr" -> {
                    long[] ds = data.h().shape();
                    if (ds.length != 3 || ds[1] > Integer.MAX_VALUE || ds[2] > Integer.MAX_VALUE) {
                        throw new ForeignFormatException(what + ": BSR data must have shape (nnz, rows, cols)");
                    }
                    layout = Layout.bsr(it, ds[0], (int) ds[1], (int) ds[2], false);
                    bufs = new MemorySegment[] {data.data(), s0, s1};
                }
                default -> throw new ForeignFormatException(what + ": scipy.sparse format '" + format
                        + "' is not supported (coo, csr, csc and bsr are)");
            }
            TensorDescriptor.Builder b = TensorDescriptor.builder(et, shape).layout(layout);
            if (isArray) {
                b.metadata(ARRAY_FLAG_KEY, "true");
            }
            for (MemorySegment s : bufs) {
                b.buffer(BufferSpec.cpu(s.byteSize()));
            }
            String name = ForeignFormats.stem(Path.of(what), ".npz");
            return Tensor.copyOf(b.name(name).build(), bufs);
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException(what + ": " + e.getMessage());
        }
    }

    /**
     * Writes a sparse tensor (COO of rank 2, CSR, CSC, BSR) as a save_npz archive (stored
     * entries), atomically replacing {@code target}.
     *
     * @throws ForeignFormatException if the tensor is not a rank-2 sparse tensor
     */
    public static void write(Tensor t, Path target) throws IOException {
        TensorDescriptor d = t.descriptor();
        Layout l = d.layout();
        long[] dims = d.shape().dims();
        if (!l.kind().isSparse() || dims.length != 2) {
            throw new ForeignFormatException("scipy.sparse npz holds rank-2 coo/csr/csc/bsr matrices, not " + l + " "
                    + d.shape());
        }
        // The indices go into another format unchecked by any reader on the way: check them here
        // (HRRYFILE and stream writers check them natively too).
        t.checkContents();
        ElementType et = d.elementType();
        ElementType it = l.indexType().orElseThrow();
        long nnz = l.nnz();
        Path tmp = Files.createTempFile(target.toAbsolutePath().getParent(), ".hurray-", ".npz.tmp");
        try {
            try (ZipOutputStream z = new ZipOutputStream(Files.newOutputStream(tmp))) {
                MemorySegment shape = MemorySegment.ofArray(dims);
                put(z, "shape", new ForeignTensor("shape", ElementType.INT64, new long[] {2}, Layout.Kind.ROW_MAJOR, shape, null, -1));
                String fmt = l.kind().formatName();
                putFormat(z, fmt);
                if (d.metadata().containsKey(ARRAY_FLAG_KEY)) {
                    put(z, "_is_array", new ForeignTensor("_is_array", ElementType.BOOL, new long[0], Layout.Kind.ROW_MAJOR,
                            MemorySegment.ofArray(new byte[] {1}), null, -1));
                }
                long[] dataShape = l.kind() == Layout.Kind.BSR
                        ? new long[] {nnz, l.blockShape()[0], l.blockShape()[1]} : new long[] {nnz};
                put(z, "data", new ForeignTensor("data", et, dataShape, Layout.Kind.ROW_MAJOR, t.buffer(0), null, -1));
                long isz = it.bitWidth() / 8;
                if (l.kind() == Layout.Kind.COO) {
                    MemorySegment idx = t.buffer(1);
                    put(z, "row", new ForeignTensor("row", it, new long[] {nnz}, Layout.Kind.ROW_MAJOR, idx.asSlice(0, isz * nnz), null, -1));
                    put(z, "col", new ForeignTensor("col", it, new long[] {nnz}, Layout.Kind.ROW_MAJOR, idx.asSlice(isz * nnz, isz * nnz), null, -1));
                } else {
                    MemorySegment ptr = t.buffer(1);
                    put(z, "indices", new ForeignTensor("indices", it, new long[] {nnz}, Layout.Kind.ROW_MAJOR, t.buffer(2), null, -1));
                    put(z, "indptr", new ForeignTensor("indptr", it, new long[] {ptr.byteSize() / isz}, Layout.Kind.ROW_MAJOR, ptr, null, -1));
                }
            }
            Files.move(tmp, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static void putFormat(ZipOutputStream z, String fmt) throws IOException {
        String h = "{'descr': '|S" + fmt.length() + "', 'fortran_order': False, 'shape': (), }";
        int total = 10 + h.length() + 1;
        int pad = (64 - total % 64) % 64;
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0});
        int len = h.length() + pad + 1;
        b.write(len & 0xFF);
        b.write(len >> 8);
        b.write((h + " ".repeat(pad) + "\n").getBytes(StandardCharsets.US_ASCII));
        b.write(fmt.getBytes(StandardCharsets.US_ASCII));
        stored(z, "format.npy", b.toByteArray(), null);
    }

    private static void put(ZipOutputStream z, String name, ForeignTensor t) throws IOException {
        stored(z, name + ".npy", Npy.header(t), t.data());
    }

    private static void stored(ZipOutputStream z, String name, byte[] head, MemorySegment data) throws IOException {
        byte[] body = data == null ? new byte[0] : data.toArray(ValueLayout.JAVA_BYTE);
        CRC32 crc = new CRC32();
        crc.update(head);
        crc.update(body);
        ZipEntry e = new ZipEntry(name);
        e.setMethod(ZipEntry.STORED);
        e.setSize(head.length + body.length);
        e.setCompressedSize(head.length + body.length);
        e.setCrc(crc.getValue());
        e.setTime(315532800000L + 86400000L); // fixed, for reproducible output
        z.putNextEntry(e);
        OutputStream o = z;
        o.write(head);
        o.write(body);
        z.closeEntry();
    }

    /** Element {@code i} of an integer array of any width (uint64 above 2^63 comes back negative). */
    private static long integerAt(Arr x, long i) {
        MemorySegment d = x.data();
        return switch (x.h().dtype()) {
            case INT8 -> d.get(ValueLayout.JAVA_BYTE, i);
            case UINT8 -> Byte.toUnsignedLong(d.get(ValueLayout.JAVA_BYTE, i));
            case INT16 -> d.getAtIndex(Payloads.LE_SHORT, i);
            case UINT16 -> Short.toUnsignedLong(d.getAtIndex(Payloads.LE_SHORT, i));
            case INT32 -> d.getAtIndex(Payloads.LE_INT, i);
            case UINT32 -> Integer.toUnsignedLong(d.getAtIndex(Payloads.LE_INT, i));
            default -> d.getAtIndex(Payloads.LE_LONG, i);
        };
    }

    /**
     * scipy's {@code _is_array} entry (save_npz of a {@code csr_array}, {@code coo_array}, …:
     * a 0-d bool), which load_npz uses to give back an array rather than a matrix.
     */
    private static boolean arrayFlag(Map<String, Arr> a, String what) throws ForeignFormatException {
        Arr f = a.get("_is_array");
        if (f == null) {
            return false;
        }
        if (f.h().dtype() != ElementType.BOOL || f.count() != 1) {
            throw new ForeignFormatException(what + ": _is_array must be one bool, not " + f.h().dtype()
                    + java.util.Arrays.toString(f.h().shape()));
        }
        return f.data().get(ValueLayout.JAVA_BYTE, 0) != 0;
    }

    /** True for the integer element types a scipy shape array may have. */
    private static boolean isInteger(ElementType t) {
        return switch (t) {
            case INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64 -> true;
            default -> false;
        };
    }
}
