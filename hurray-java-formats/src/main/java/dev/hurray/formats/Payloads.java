package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.util.function.LongConsumer;
import java.util.zip.CRC32;

/**
 * Byte-level helpers for payload segments, public API of this module for code that moves
 * foreign-format payloads (the {@code hurray} command uses them): aligned allocation
 * ({@link #allocate}), byte swapping ({@link #swapInPlace}), element reordering
 * ({@link #columnToRowMajor}, {@link #toRowMajor}), streaming copies ({@link #readFully},
 * {@link #writeFully}), positional file reads ({@link #readAt}), read-only maps ({@link #mapReadOnly}), zip's CRC-32 ({@link #crc32}) and
 * a one-line description of a quantization block ({@link #describe}). All sizes are in bytes
 * unless a name says elements. Nothing here interprets values: every operation moves bytes, so
 * every conversion is bit-exact.
 *
 * <p>Threads: every method is stateless; concurrent calls on different segments are safe, and a
 * segment is used under its own arena's thread rules. Errors: an argument outside a method's
 * domain is an {@link IllegalArgumentException}; I/O failures are the stream's or channel's
 * {@link IOException}s; the streaming copies report a short input as {@link EOFException}.
 */
public final class Payloads {
    /** Alignment of payloads this package allocates (Hurray's minimum buffer alignment). */
    public static final long ALIGNMENT = 64;

    /** Little-endian, unaligned views for reading and writing payload values. */
    public static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfFloat LE_FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Chunk size for copies through heap arrays and {@link ByteBuffer}s (below 2 GiB by far). */
    static final int CHUNK = 1 << 20;

    private Payloads() {
    }

    /**
     * Whole bytes per element of {@code t}.
     *
     * @throws IllegalStateException for the packed 4-bit types, which have none
     */
    public static int byteWidth(ElementType t) {
        if (t.isSubByte()) {
            throw new IllegalStateException(t + " packs two elements per byte");
        }
        return t.bitWidth() / 8;
    }

    /**
     * The width, in bytes, of the unit a byte-order swap reverses: the element width, except
     * for complex types whose two components are swapped separately; 1 for single-byte and
     * sub-byte types (nothing to swap).
     */
    public static int swapUnit(ElementType t) {
        return switch (t) {
            case COMPLEX64 -> 4;
            case COMPLEX128 -> 8;
            default -> Math.max(1, t.bitWidth() / 8);
        };
    }

    /** A one-line description of a quantization block, e.g. {@code affine(scale=0.5,bias=-1.0)->float32}. */
    public static String describe(Quantization q) {
        return switch (q) {
            case Quantization.PerTensorAffine a -> "affine(scale=" + a.scale() + ",bias=" + a.bias() + ")->" + a.dequantized();
            case Quantization.PerChannelAffine p -> "per-channel(axis=" + p.axis() + ")->" + p.dequantized();
            case Quantization.Cast c -> "cast->" + c.dequantized();
            case Quantization.BlockScaled b -> b.kindName() + "(block=" + b.block() + ",axis=" + b.axis()
                    + (b.block2() > 0 ? ",block2=" + b.block2() : "") + ",scale=" + b.scaleType() + ")->" + b.dequantized();
        };
    }

    /** Allocates {@code bytes} zeroed bytes at {@link #ALIGNMENT} in {@code arena}. */
    public static MemorySegment allocate(Arena arena, long bytes) {
        return arena.allocate(Math.max(bytes, 0), ALIGNMENT);
    }

    /**
     * Reverses the byte order of every {@code unit}-byte group of {@code seg}, in place
     * (big-endian to little-endian and back). {@code unit} is 1, 2, 4 or 8; 1 does nothing.
     *
     * @throws IllegalArgumentException if {@code seg}'s size is not a multiple of {@code unit}
     */
    public static void swapInPlace(MemorySegment seg, int unit) {
        long n = seg.byteSize();
        if (n % unit != 0) {
            throw new IllegalArgumentException(n + " bytes is not a multiple of " + unit);
        }
        switch (unit) {
            case 1 -> { }
            case 2 -> {
                for (long i = 0; i < n; i += 2) {
                    short v = seg.get(ValueLayout.JAVA_SHORT_UNALIGNED, i);
                    seg.set(ValueLayout.JAVA_SHORT_UNALIGNED, i, Short.reverseBytes(v));
                }
            }
            case 4 -> {
                for (long i = 0; i < n; i += 4) {
                    int v = seg.get(ValueLayout.JAVA_INT_UNALIGNED, i);
                    seg.set(ValueLayout.JAVA_INT_UNALIGNED, i, Integer.reverseBytes(v));
                }
            }
            case 8 -> {
                for (long i = 0; i < n; i += 8) {
                    long v = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i);
                    seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, Long.reverseBytes(v));
                }
            }
            default -> throw new IllegalArgumentException("swap unit " + unit);
        }
    }

    /**
     * Reorders a column-major payload to row-major (or, called with the reversed shape, the
     * other way round): element {@code (i0, …, in-1)} moves from offset
     * {@code Σ ik·Π(j<k) dj} to {@code Σ ik·Π(j>k) dj}, times the element width. Bytes move
     * whole elements at a time, never through a value conversion.
     *
     * @param src        column-major payload of {@code shape}
     * @param shape      the tensor's dimensions
     * @param elemBytes  element width in bytes (1–16)
     * @param dst        destination, same size as {@code src}, not overlapping it
     */
    public static void columnToRowMajor(MemorySegment src, long[] shape, int elemBytes, MemorySegment dst) {
        if (src.byteSize() != dst.byteSize()) {
            throw new IllegalArgumentException("source and destination sizes differ");
        }
        int rank = shape.length;
        long count = ForeignTensor.elementCount(shape);
        if (count == 0) {
            return;
        }
        if (rank <= 1) {
            MemorySegment.copy(src, 0, dst, 0, src.byteSize());
            return;
        }
        // Column-major strides, in elements.
        long[] srcStride = new long[rank];
        long s = 1;
        for (int k = 0; k < rank; k++) {
            srcStride[k] = s;
            s *= shape[k];
        }
        long[] idx = new long[rank];
        long srcOff = 0; // in elements
        for (long out = 0; out < count; out++) {
            MemorySegment.copy(src, srcOff * elemBytes, dst, out * elemBytes, elemBytes);
            // Advance the row-major odometer (last axis fastest) and the matching source offset.
            for (int k = rank - 1; k >= 0; k--) {
                idx[k]++;
                srcOff += srcStride[k];
                if (idx[k] < shape[k]) {
                    break;
                }
                srcOff -= srcStride[k] * idx[k];
                idx[k] = 0;
            }
        }
    }

    /**
     * {@code t} with a row-major payload computed when it is used, as {@link #toRowMajor} but
     * without reading anything now: the result's payload is {@code t}'s, reordered (or only
     * relabelled when order does not matter), read from {@code t} for each use. A writer that
     * lays out a model this way holds one tensor's payload (and its reordered copy) at a time.
     *
     * @throws ForeignFormatException as {@link #toRowMajor}
     */
    static ForeignTensor toRowMajorOnUse(ForeignTensor t) throws ForeignFormatException {
        if (t.layout() == Layout.Kind.ROW_MAJOR) {
            return t;
        }
        long[] shape = t.shape();
        boolean relabel = onlyRelabelled(t);
        int width = relabel ? 0 : Payloads.byteWidth(t.dtype());
        return ForeignTensor.lazy(t.name(), t.dtype(), shape, Layout.Kind.ROW_MAJOR, t.quantization().orElse(null),
                t.scaleBufferSizes(), relabel ? t.sourceOffset() : -1, bufs -> t.withPayload((data, scales) -> {
                    if (relabel) {
                        MemorySegment.copy(data, 0, bufs[0], 0, data.byteSize());
                    } else {
                        columnToRowMajor(data, shape, width, bufs[0]);
                    }
                    for (int i = 0; i < scales.size(); i++) {
                        MemorySegment.copy(scales.get(i), 0, bufs[i + 1], 0, scales.get(i).byteSize());
                    }
                }));
    }

    /**
     * True when a column-major {@code t} becomes row-major by relabelling alone (rank ≤ 1 after
     * unit dimensions, or no elements); otherwise checks that its bytes can be reordered.
     *
     * @throws ForeignFormatException for a sub-byte or block-quantized tensor that would need
     *     reordering (blocks run along a row-major axis; moving elements would tear them apart)
     */
    private static boolean onlyRelabelled(ForeignTensor t) throws ForeignFormatException {
        int nonUnit = 0;
        for (long d : t.shape()) {
            if (d != 1) {
                nonUnit++;
            }
        }
        if (nonUnit <= 1 || t.elementCount() == 0) {
            return true;
        }
        if (t.quantization().orElse(null) instanceof Quantization.BlockScaled b) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name())
                    + "': cannot reorder a column-major " + b.kindName() + " tensor");
        }
        if (t.dtype().isSubByte()) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(t.name())
                    + "': cannot reorder a column-major " + t.dtype() + " tensor");
        }
        return false;
    }

    /**
     * Returns {@code t} with a row-major payload: {@code t} itself when it already is (or when
     * order does not matter: rank ≤ 1 or a single element), else a reordered copy allocated in
     * {@code arena}. The quantization and its scale buffers are kept (per-channel parameters
     * are indexed by channel, not by position).
     *
     * @throws ForeignFormatException for a column-major sub-byte or block-quantized tensor (not
     *     reorderable by bytes)
     * @throws IOException as {@link ForeignTensor#data()}, when {@code t}'s payload is read for
     *     the copy
     */
    public static ForeignTensor toRowMajor(ForeignTensor t, Arena arena) throws IOException {
        if (t.layout() == Layout.Kind.ROW_MAJOR) {
            return t;
        }
        long[] shape = t.shape();
        if (onlyRelabelled(t)) {
            return new ForeignTensor(t.name(), t.dtype(), shape, Layout.Kind.ROW_MAJOR, t.data(),
                    t.quantization().orElse(null), t.scaleBuffers(), t.sourceOffset());
        }
        MemorySegment dst = allocate(arena, t.byteSize());
        columnToRowMajor(t.data(), shape, Payloads.byteWidth(t.dtype()), dst);
        return new ForeignTensor(t.name(), t.dtype(), shape, Layout.Kind.ROW_MAJOR, dst,
                t.quantization().orElse(null), t.scaleBuffers(), -1);
    }

    /**
     * Reads exactly {@code dst.byteSize()} bytes from {@code in} into {@code dst}.
     *
     * @param progress called with the number of bytes after each chunk, or {@code null}
     * @throws EOFException if the stream ends first
     */
    public static void readFully(InputStream in, MemorySegment dst, LongConsumer progress) throws IOException {
        byte[] buf = new byte[(int) Math.min(CHUNK, Math.max(1, dst.byteSize()))];
        long pos = 0;
        long size = dst.byteSize();
        while (pos < size) {
            int want = (int) Math.min(buf.length, size - pos);
            int n = in.read(buf, 0, want);
            if (n < 0) {
                throw new EOFException("ended after " + pos + " of " + size + " bytes");
            }
            MemorySegment.copy(buf, 0, dst, ValueLayout.JAVA_BYTE, pos, n);
            pos += n;
            if (progress != null) {
                progress.accept(n);
            }
        }
    }

    /** Writes all of {@code src} to {@code out} through a bounded heap buffer. */
    public static void writeFully(MemorySegment src, OutputStream out, LongConsumer progress) throws IOException {
        byte[] buf = new byte[(int) Math.min(CHUNK, Math.max(1, src.byteSize()))];
        long pos = 0;
        long size = src.byteSize();
        while (pos < size) {
            int n = (int) Math.min(buf.length, size - pos);
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, pos, buf, 0, n);
            out.write(buf, 0, n);
            pos += n;
            if (progress != null) {
                progress.accept(n);
            }
        }
    }

    /** Writes all of {@code src} to {@code ch} in chunks of at most {@link #CHUNK} bytes. */
    public static void writeFully(MemorySegment src, WritableByteChannel ch, LongConsumer progress) throws IOException {
        long pos = 0;
        long size = src.byteSize();
        while (pos < size) {
            long n = Math.min(CHUNK, size - pos);
            ByteBuffer bb = src.asSlice(pos, n).asByteBuffer();
            while (bb.hasRemaining()) {
                ch.write(bb);
            }
            pos += n;
            if (progress != null) {
                progress.accept(n);
            }
        }
    }

    /** CRC-32 (zip's) of {@code seg}, computed in chunks so sizes beyond 2 GiB work. */
    public static long crc32(MemorySegment seg) {
        return crc32(new CRC32(), seg);
    }

    /** Feeds {@code seg} to {@code crc} in chunks (sizes beyond 2 GiB work); the CRC so far. */
    static long crc32(CRC32 crc, MemorySegment seg) {
        long pos = 0;
        long size = seg.byteSize();
        while (pos < size) {
            long n = Math.min(CHUNK, size - pos);
            crc.update(seg.asSlice(pos, n).asByteBuffer());
            pos += n;
        }
        return crc.getValue();
    }

    /**
     * Reads {@code size} bytes of {@code ch} from byte {@code offset} into a new segment of
     * {@code arena} ({@link #allocate}: zeroed, {@link #ALIGNMENT}-aligned), with positional reads
     * of at most {@link #CHUNK} bytes each (so sizes beyond 2 GiB work and the channel's position
     * is left alone). This is how the readers of this package load a file's bytes: unlike a
     * mapping, a copy cannot fault when another process shortens the file while it is read; a
     * file that ends early is a clear error instead.
     *
     * @param what names the file in the error message
     * @throws ForeignFormatException if the file ends before {@code offset + size}
     */
    public static MemorySegment readAt(FileChannel ch, long offset, long size, Arena arena, String what) throws IOException {
        if (offset < 0 || size < 0 || offset + size < 0) {
            throw new IllegalArgumentException("range " + offset + "+" + size);
        }
        long sizeAtOpen = ch.size();
        MemorySegment dst = allocate(arena, size);
        readAt(ch, offset, dst, what, sizeAtOpen);
        return dst;
    }

    /**
     * Fills {@code dst} from {@code ch} at byte {@code offset}, as
     * {@link #readAt(FileChannel, long, long, Arena, String)}; a file that ends early is named with
     * its size now, the bytes the data needs and {@code sizeAtOpen}, its size when it was opened.
     */
    static void readAt(FileChannel ch, long offset, MemorySegment dst, String what, long sizeAtOpen) throws IOException {
        long size = dst.byteSize();
        long done = 0;
        while (done < size) {
            ByteBuffer bb = dst.asSlice(done, Math.min(CHUNK, size - done)).asByteBuffer();
            while (bb.hasRemaining()) {
                int r = ch.read(bb, offset + done + bb.position());
                if (r < 0) {
                    throw truncated(what, ch.size(), offset + size, sizeAtOpen);
                }
            }
            done += bb.capacity();
        }
    }

    /** The error for a file that is now {@code now} bytes where its data needs {@code needs}. */
    static ForeignFormatException truncated(String what, long now, long needs, long sizeAtOpen) {
        return new ForeignFormatException(what + ": truncated: the file is now " + now + " bytes, but its data needs "
                + needs + " (it had " + sizeAtOpen + " bytes when opened; did another process shorten it?)");
    }

    /**
     * Maps {@code ch}'s first {@code size} bytes read-only into {@code arena}. A zero-size
     * file gets a zero-length segment (mapping zero bytes is not portable).
     *
     * <p><b>Risk.</b> Reading a mapped byte of a file that another process has since shortened
     * raises SIGBUS, which the JVM cannot turn into an exception: the process dies (exit 134,
     * an {@code hs_err} file). Use a mapping only for files nothing else shortens while the
     * segment lives; the readers of this package use {@link #readAt} and never map.
     */
    public static MemorySegment mapReadOnly(FileChannel ch, long size, Arena arena) throws IOException {
        if (size == 0) {
            return MemorySegment.ofArray(new byte[0]);
        }
        return ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
    }
}
