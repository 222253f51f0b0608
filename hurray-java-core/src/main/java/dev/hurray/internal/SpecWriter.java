package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import dev.hurray.BufferSpec;
import dev.hurray.Quantization;
import dev.hurray.ffm.HurrayBufferSpec;
import dev.hurray.ffm.HurrayDescriptorSpec;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.HurrayMetadataView;
import dev.hurray.ffm.HurrayTensorSpec;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Lays a tensor's descriptor fields and payload ranges out as a {@code HurrayTensorSpec}
 * (docs/spec/c-abi.md §Decoders and encoders, batch encoding) in memory a writer owns, so that
 * a batch of tensors reaches {@code hurray_encoder_encode_batch} in one call. Java only copies
 * fields here; the encoder validates and encodes them.
 *
 * <p>Offsets are read once from the generated struct classes (the bindings test proves them
 * equal to the compiler's); each struct is assembled in a {@code long[]} and copied out in one
 * call, with pointers as addresses.
 */
final class SpecWriter {
    static final long SPEC_BYTES = HurrayTensorSpec.sizeof();
    private static final long D = HurrayTensorSpec.descriptor$offset();
    private static final long ET = D + HurrayDescriptorSpec.element_type$offset();
    private static final long LAYOUT = D + HurrayDescriptorSpec.layout$offset();
    private static final long RANK = D + HurrayDescriptorSpec.rank$offset();
    private static final long DIMS = D + HurrayDescriptorSpec.dims$offset();
    private static final long STRIDES = D + HurrayDescriptorSpec.strides$offset();
    private static final long STRIDE_COUNT = D + HurrayDescriptorSpec.stride_count$offset();
    private static final long OFFSET = D + HurrayDescriptorSpec.byte_offset$offset();
    private static final long BUFFER_COUNT = D + HurrayDescriptorSpec.buffer_count$offset();
    private static final long BUFFERS = D + HurrayDescriptorSpec.buffers$offset();
    private static final long NAME = D + HurrayDescriptorSpec.name$offset();
    private static final long NAME_LEN = D + HurrayDescriptorSpec.name_len$offset();
    private static final long MD_COUNT = D + HurrayDescriptorSpec.metadata_count$offset();
    private static final long MD = D + HurrayDescriptorSpec.metadata$offset();
    private static final long QUANT = D + HurrayDescriptorSpec.quantization$offset();
    private static final long QUANT_BYTES = dev.hurray.ffm.HurrayQuantization.sizeof();
    private static final long PAYLOADS = HurrayTensorSpec.payloads$offset();
    private static final long PAYLOAD_COUNT = HurrayTensorSpec.payload_count$offset();
    private static final long BUF = HurrayBufferSpec.sizeof();
    private static final long BUF_SIZE = HurrayBufferSpec.byte_size$offset();
    private static final long BUF_ALIGN = HurrayBufferSpec.alignment$offset();
    private static final long BUF_TAG = HurrayBufferSpec.device_tag$offset();
    private static final long BUF_SYNC = HurrayBufferSpec.sync_mode$offset();
    private static final long BUF_RES = HurrayBufferSpec.reserved$offset();
    private static final long VIEW = HurrayMetadataView.sizeof();
    private static final long SLICE = HurrayIoSlice.sizeof();
    private static final long SLICE_PTR = HurrayIoSlice.ptr$offset();
    private static final long SLICE_LEN = HurrayIoSlice.len$offset();

    // Word indexes of the 8-byte fields (the narrow ones go by byte offset), for building a
    // spec as StructWords and copying it out in one call.
    static final int SPEC_WORDS = StructWords.index(SPEC_BYTES);
    private static final int W_RANK = StructWords.index(RANK);
    private static final int W_DIMS = StructWords.index(DIMS);
    private static final int W_STRIDES = StructWords.index(STRIDES);
    private static final int W_STRIDE_COUNT = StructWords.index(STRIDE_COUNT);
    private static final int W_OFFSET = StructWords.index(OFFSET);
    private static final int W_BUFFER_COUNT = StructWords.index(BUFFER_COUNT);
    private static final int W_BUFFERS = StructWords.index(BUFFERS);
    private static final int W_NAME = StructWords.index(NAME);
    private static final int W_NAME_LEN = StructWords.index(NAME_LEN);
    private static final int W_MD_COUNT = StructWords.index(MD_COUNT);
    private static final int W_MD = StructWords.index(MD);
    private static final int W_PAYLOADS = StructWords.index(PAYLOADS);
    private static final int W_PAYLOAD_COUNT = StructWords.index(PAYLOAD_COUNT);
    private static final int BUF_WORDS = StructWords.index(BUF);
    private static final int W_BUF_SIZE = StructWords.index(BUF_SIZE);
    private static final int VIEW_WORDS = StructWords.index(VIEW);
    private static final int W_KEY = StructWords.index(HurrayMetadataView.key$offset());
    private static final int W_KEY_LEN = StructWords.index(HurrayMetadataView.key_len$offset());
    private static final int W_VALUE = StructWords.index(HurrayMetadataView.value$offset());
    private static final int W_VALUE_LEN = StructWords.index(HurrayMetadataView.value_len$offset());
    private static final int SLICE_WORDS = StructWords.index(SLICE);
    private static final int W_SLICE_PTR = StructWords.index(SLICE_PTR);
    private static final int W_SLICE_LEN = StructWords.index(SLICE_LEN);


    private SpecWriter() {
    }

    /**
     * Bytes {@link #write} needs in the aux area for these fields (dims, strides, buffer table,
     * metadata views, payload slices, name, metadata bytes), plus {@code payloadBytes} when the
     * payloads are copied; 8-byte aligned pieces, each payload 64-byte aligned.
     */
    static long auxBytes(DescriptorFields f, byte[] name, byte[][] keys, int payloads, long payloadBytes) {
        long n = 8L * imageWords(f, keys.length, payloads) + pad(name == null ? 0 : name.length);
        int i = 0;
        for (byte[] v : f.metadata().values()) {
            n += pad(keys[i++].length) + pad(v.length);
        }
        return n + payloadBytes + 64L * payloads;
    }

    /** Words of the fixed-size part of a tensor's aux image: dims, strides, table, views, slices. */
    private static int imageWords(DescriptorFields f, int entries, int payloads) {
        return f.shape().rank() + f.layout().strides().length + BUF_WORDS * f.buffers().size() + VIEW_WORDS * entries
                + SLICE_WORDS * payloads;
    }

    private static long pad(long n) {
        return (n + 7) & ~7L;
    }

    /** Strings up to this many bytes are packed into the image; longer ones are copied on their own. */
    private static final int PACKED_STRING_MAX = 256;

    /**
     * Writes spec {@code index} for {@code f} as words into {@code specWords} (from word
     * {@code index * SPEC_WORDS}; {@link #copySpecs} copies them to {@code specs} before the
     * encoder reads them), with its variable parts in {@code aux} from {@code at}; copies the
     * payloads there too when {@code copy}, else points at them (they must then stay live and
     * unchanged until the encoder no longer needs them). A quantized tensor's spec goes to
     * {@code specs} at once, with its quantization block.
     *
     * <p>Everything but the payloads is assembled as one image of words (dims, strides, buffer
     * table, metadata views, payload slices, then the name and metadata bytes) and copied into
     * {@code aux} at once, so that a tensor costs two copies (image, payloads) and a batch one
     * more (its specs).
     *
     * @return the new end of the used aux area
     */
    static long write(long[] specWords, MemorySegment specs, int index, MemorySegment aux, long at, DescriptorFields f,
            byte[] name, byte[][] keys, MemorySegment[] payloads, boolean copy) {
        long base = aux.address() + at;
        long[] dims = f.shape().dims();
        long[] strides = f.layout().strides();
        List<BufferSpec> buffers = f.buffers();
        int nb = buffers.size();
        int entries = keys.length;
        int fixed = imageWords(f, entries, payloads.length);
        long stringBytes = pad(name == null ? 0 : name.length);
        for (byte[] v : f.metadata().values()) {
            stringBytes += pad(v.length);
        }
        for (byte[] k : keys) {
            stringBytes += pad(k.length);
        }
        long[] img = new long[fixed + (int) (stringBytes >>> 3)];
        long[] w = specWords;
        int s0 = index * SPEC_WORDS;
        java.util.Arrays.fill(w, s0, s0 + SPEC_WORDS, 0L);
        StructWords.put(w, s0, ET, f.elementType().code(), 1);
        StructWords.put(w, s0, LAYOUT, f.layout().kind().code(), 1);
        w[s0 + W_RANK] = dims.length;
        int wi = 0;
        if (dims.length > 0) {
            System.arraycopy(dims, 0, img, wi, dims.length);
            w[s0 + W_DIMS] = base;
            wi += dims.length;
        }
        if (strides.length > 0) {
            System.arraycopy(strides, 0, img, wi, strides.length);
            w[s0 + W_STRIDES] = base + 8L * wi;
            w[s0 + W_STRIDE_COUNT] = strides.length;
            wi += strides.length;
        }
        w[s0 + W_OFFSET] = f.byteOffset();
        w[s0 + W_BUFFER_COUNT] = nb;
        w[s0 + W_BUFFERS] = base + 8L * wi;
        for (int i = 0; i < nb; i++) {
            BufferSpec b = buffers.get(i);
            img[wi + W_BUF_SIZE] = b.byteSize();
            StructWords.put(img, wi, BUF_ALIGN, b.alignment(), 4);
            StructWords.put(img, wi, BUF_TAG, b.deviceTag().code(), 1);
            StructWords.put(img, wi, BUF_SYNC, b.syncMode().code(), 1);
            // BUF_RES stays 0.
            wi += BUF_WORDS;
        }
        int views = wi;
        wi += VIEW_WORDS * entries;
        int slices = wi;
        wi += SLICE_WORDS * payloads.length;
        // Strings after the fixed part; `sb` counts bytes from the image's start.
        long sb = 8L * wi;
        long stringsAt = at + sb;
        boolean anyLong = false;
        if (name != null) {
            w[s0 + W_NAME] = base + sb;
            w[s0 + W_NAME_LEN] = name.length;
            anyLong |= !pack(img, sb, name);
            sb += pad(name.length);
        }
        if (entries > 0) {
            w[s0 + W_MD_COUNT] = entries;
            w[s0 + W_MD] = base + 8L * views;
            int i = 0;
            for (byte[] value : f.metadata().values()) {
                byte[] k = keys[i];
                int e = views + i * VIEW_WORDS;
                img[e + W_KEY] = base + sb;
                img[e + W_KEY_LEN] = k.length;
                anyLong |= !pack(img, sb, k);
                sb += pad(k.length);
                img[e + W_VALUE] = value.length == 0 ? 0 : base + sb;
                img[e + W_VALUE_LEN] = value.length;
                anyLong |= !pack(img, sb, value);
                sb += pad(value.length);
                i++;
            }
        }
        long end = at + sb;
        w[s0 + W_PAYLOADS] = base + 8L * slices;
        w[s0 + W_PAYLOAD_COUNT] = payloads.length;
        // Every copy of the tensor goes through the one call in copyAll: the image, then each
        // copied payload (one copy loop is far less code for the JIT than one per kind).
        int copies = 0;
        MemorySegment[] src = new MemorySegment[payloads.length + 1];
        long[] from = new long[src.length];
        MemorySegment[] dst = new MemorySegment[src.length];
        long[] to = new long[src.length];
        long[] len = new long[src.length];
        src[0] = MemorySegment.ofArray(img);
        dst[0] = aux;
        to[0] = at;
        len[0] = 8L * img.length;
        copies++;
        for (int i = 0; i < payloads.length; i++) {
            MemorySegment p = payloads[i];
            long n = p.byteSize();
            long ptr;
            if (n == 0) {
                ptr = 0;
            } else if (copy) {
                end = (end + 63) & ~63L;
                // Native payloads are read by address: the writer pins their tensor, which may
                // be confined to another thread.
                boolean nat = p.isNative();
                src[copies] = nat ? Native.EVERYTHING : p;
                from[copies] = nat ? p.address() : 0;
                dst[copies] = aux;
                to[copies] = end;
                len[copies++] = n;
                ptr = aux.address() + end;
                end += n;
            } else {
                ptr = p.address();
            }
            img[slices + i * SLICE_WORDS + W_SLICE_PTR] = ptr;
            img[slices + i * SLICE_WORDS + W_SLICE_LEN] = n;
        }
        copyAll(src, from, dst, to, len, copies);
        if (anyLong) {
            copyLongStrings(aux, stringsAt, name, keys, f);
        }
        Quantization q = f.quantization();
        if (q != null) {
            copySpecs(specWords, specs, index, index + 1);
            NativeDescriptor.toNative(q, specs.asSlice(index * SPEC_BYTES + QUANT, QUANT_BYTES));
        }
        return pad(end);
    }

    /** True if {@link #write} already put this tensor's spec in native memory (a quantized one). */
    static boolean specWrittenAtOnce(DescriptorFields f) {
        return f.quantization() != null;
    }

    /** Copies specs {@code from} (inclusive) to {@code to} (exclusive) from {@code specWords} to {@code specs}. */
    static void copySpecs(long[] specWords, MemorySegment specs, int from, int to) {
        if (to > from) {
            MemorySegment.copy(specWords, from * SPEC_WORDS, specs, JAVA_LONG_UNALIGNED, from * SPEC_BYTES,
                    (to - from) * SPEC_WORDS);
        }
    }

    private static void copyAll(MemorySegment[] src, long[] from, MemorySegment[] dst, long[] to, long[] len, int n) {
        for (int i = 0; i < n; i++) {
            Native.copy(src[i], from[i], dst[i], to[i], len[i]);
        }
    }

    /**
     * Packs {@code b} into {@code img} at byte {@code at}, a multiple of 8 (every string starts
     * on a word, see {@link #pad}), as little-endian words, if it is short enough. The words it
     * touches are still zero.
     */
    private static boolean pack(long[] img, long at, byte[] b) {
        int n = b.length;
        if (n > PACKED_STRING_MAX) {
            return false;
        }
        int w = (int) (at >>> 3);
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            img[w++] = (b[i] & 0xFFL) | (b[i + 1] & 0xFFL) << 8 | (b[i + 2] & 0xFFL) << 16 | (b[i + 3] & 0xFFL) << 24
                    | (b[i + 4] & 0xFFL) << 32 | (b[i + 5] & 0xFFL) << 40 | (b[i + 6] & 0xFFL) << 48
                    | (b[i + 7] & 0xFFL) << 56;
        }
        if (i < n) {
            long tail = 0;
            for (int shift = 0; i < n; i++, shift += 8) {
                tail |= (b[i] & 0xFFL) << shift;
            }
            img[w] = tail;
        }
        return true;
    }

    /**
     * Copies the strings {@link #pack} left out to their places: the strings start at
     * {@code stringsAt} in the order {@link #write} lays them (name, then each key and value),
     * each padded to 8 bytes.
     */
    private static void copyLongStrings(MemorySegment aux, long stringsAt, byte[] name, byte[][] keys,
            DescriptorFields f) {
        long at = stringsAt;
        if (name != null) {
            at = copyIfLong(aux, at, name);
        }
        int k = 0;
        for (byte[] value : f.metadata().values()) {
            at = copyIfLong(aux, at, keys[k++]);
            at = copyIfLong(aux, at, value);
        }
    }

    private static long copyIfLong(MemorySegment aux, long at, byte[] b) {
        if (b.length > PACKED_STRING_MAX) {
            MemorySegment.copy(b, 0, aux, JAVA_BYTE, at, b.length);
        }
        return at + pad(b.length);
    }
}
