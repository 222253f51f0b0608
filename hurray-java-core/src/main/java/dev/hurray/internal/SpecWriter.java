package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
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
     * name, metadata views and bytes, payload slices), plus {@code payloadBytes} when the
     * payloads are copied; 8-byte aligned pieces.
     */
    static long auxBytes(DescriptorFields f, byte[] name, byte[][] keys, int payloads, long payloadBytes) {
        long n = 8L * f.shape().rank() + 8L * f.layout().strides().length + BUF * f.buffers().size()
                + SLICE * payloads + VIEW * keys.length + pad(name == null ? 0 : name.length);
        int i = 0;
        for (byte[] v : f.metadata().values()) {
            n += pad(keys[i++].length) + pad(v.length);
        }
        return n + payloadBytes + 64L * payloads;
    }

    private static long pad(long n) {
        return (n + 7) & ~7L;
    }

    /**
     * Writes spec {@code index} of {@code specs} for {@code f} with its variable parts in
     * {@code aux} from {@code at}; copies the payloads there too when {@code copy}, else points
     * at them (they must then stay live and unchanged until the encoder no longer needs them).
     *
     * @return the new end of the used aux area
     */
    static long write(MemorySegment specs, int index, MemorySegment aux, long at, DescriptorFields f, byte[] name,
            byte[][] keys, MemorySegment[] payloads, boolean copy) {
        long s = index * SPEC_BYTES;
        long base = aux.address();
        long[] w = new long[SPEC_WORDS];
        StructWords.put(w, 0, ET, f.elementType().code(), 1);
        StructWords.put(w, 0, LAYOUT, f.layout().kind().code(), 1);
        long[] dims = f.shape().dims();
        w[W_RANK] = dims.length;
        if (dims.length > 0) {
            MemorySegment.copy(dims, 0, aux, JAVA_LONG_UNALIGNED, at, dims.length);
            w[W_DIMS] = base + at;
            at += 8L * dims.length;
        }
        long[] strides = f.layout().strides();
        if (strides.length > 0) {
            MemorySegment.copy(strides, 0, aux, JAVA_LONG_UNALIGNED, at, strides.length);
            w[W_STRIDES] = base + at;
            w[W_STRIDE_COUNT] = strides.length;
            at += 8L * strides.length;
        }
        w[W_OFFSET] = f.byteOffset();
        List<BufferSpec> buffers = f.buffers();
        int nb = buffers.size();
        w[W_BUFFER_COUNT] = nb;
        w[W_BUFFERS] = base + at;
        long[] table = new long[nb * BUF_WORDS];
        for (int i = 0; i < nb; i++) {
            BufferSpec b = buffers.get(i);
            int t = i * BUF_WORDS;
            table[t + W_BUF_SIZE] = b.byteSize();
            StructWords.put(table, t, BUF_ALIGN, b.alignment(), 4);
            StructWords.put(table, t, BUF_TAG, b.deviceTag().code(), 1);
            StructWords.put(table, t, BUF_SYNC, b.syncMode().code(), 1);
            // BUF_RES stays 0.
        }
        MemorySegment.copy(table, 0, aux, JAVA_LONG_UNALIGNED, at, table.length);
        at += BUF * nb;
        if (name != null) {
            MemorySegment.copy(name, 0, aux, JAVA_BYTE, at, name.length);
            w[W_NAME] = base + at;
            w[W_NAME_LEN] = name.length;
            at += pad(name.length);
        }
        if (keys.length > 0) {
            long views = at;
            at += VIEW * keys.length;
            w[W_MD_COUNT] = keys.length;
            w[W_MD] = base + views;
            long[] v = new long[keys.length * VIEW_WORDS];
            int i = 0;
            for (byte[] value : f.metadata().values()) {
                byte[] k = keys[i];
                int e = i * VIEW_WORDS;
                MemorySegment.copy(k, 0, aux, JAVA_BYTE, at, k.length);
                v[e + W_KEY] = base + at;
                v[e + W_KEY_LEN] = k.length;
                at += pad(k.length);
                MemorySegment.copy(value, 0, aux, JAVA_BYTE, at, value.length);
                v[e + W_VALUE] = value.length == 0 ? 0 : base + at;
                v[e + W_VALUE_LEN] = value.length;
                at += pad(value.length);
                i++;
            }
            MemorySegment.copy(v, 0, aux, JAVA_LONG_UNALIGNED, views, v.length);
        }
        long slices = at;
        at += SLICE * payloads.length;
        w[W_PAYLOADS] = base + slices;
        w[W_PAYLOAD_COUNT] = payloads.length;
        long[] sl = new long[payloads.length * SLICE_WORDS];
        for (int i = 0; i < payloads.length; i++) {
            MemorySegment p = payloads[i];
            long len = p.byteSize();
            long ptr;
            if (len == 0) {
                ptr = 0;
            } else if (copy) {
                at = (at + 63) & ~63L;
                // Native payloads are read by address: the writer pins their tensor, which may
                // be confined to another thread.
                MemorySegment.copy(p.isNative() ? Native.view(p.address(), len) : p, 0, aux, at, len);
                ptr = base + at;
                at += len;
            } else {
                ptr = p.address();
            }
            sl[i * SLICE_WORDS + W_SLICE_PTR] = ptr;
            sl[i * SLICE_WORDS + W_SLICE_LEN] = len;
        }
        MemorySegment.copy(sl, 0, aux, JAVA_LONG_UNALIGNED, slices, sl.length);
        MemorySegment.copy(w, 0, specs, JAVA_LONG_UNALIGNED, s, SPEC_WORDS);
        Quantization q = f.quantization();
        if (q != null) {
            NativeDescriptor.toNative(q, specs.asSlice(s + QUANT, QUANT_BYTES));
        }
        return pad(at);
    }
}
