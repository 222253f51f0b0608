package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.hurray.BufferSpec;
import dev.hurray.Quantization;
import dev.hurray.ffm.HurrayBufferSpec;
import dev.hurray.ffm.HurrayDescriptorSpec;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.HurrayMetadataView;
import dev.hurray.ffm.HurrayTensorSpec;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;

/**
 * Lays a tensor's descriptor fields and payload ranges out as a {@code HurrayTensorSpec}
 * (docs/spec/c-abi.md §Decoders and encoders, batch encoding) in memory a writer owns, so that
 * a batch of tensors reaches {@code hurray_encoder_encode_batch} in one call. Java only copies
 * fields here; the encoder validates and encodes them.
 *
 * <p>Offsets are read once from the generated struct classes; every store is a plain
 * segment write, and pointers are written as addresses ({@code JAVA_LONG}), as the bindings
 * test proves the layouts equal to the compiler's.
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
        specs.asSlice(s, SPEC_BYTES).fill((byte) 0);
        specs.set(JAVA_BYTE, s + ET, (byte) f.elementType().code());
        specs.set(JAVA_BYTE, s + LAYOUT, (byte) f.layout().kind().code());
        long[] dims = f.shape().dims();
        specs.set(JAVA_LONG, s + RANK, dims.length);
        if (dims.length > 0) {
            MemorySegment.copy(dims, 0, aux, JAVA_LONG_UNALIGNED, at, dims.length);
            specs.set(JAVA_LONG, s + DIMS, base + at);
            at += 8L * dims.length;
        }
        long[] strides = f.layout().strides();
        if (strides.length > 0) {
            MemorySegment.copy(strides, 0, aux, JAVA_LONG_UNALIGNED, at, strides.length);
            specs.set(JAVA_LONG, s + STRIDES, base + at);
            specs.set(JAVA_LONG, s + STRIDE_COUNT, strides.length);
            at += 8L * strides.length;
        }
        specs.set(JAVA_LONG, s + OFFSET, f.byteOffset());
        List<BufferSpec> buffers = f.buffers();
        specs.set(JAVA_LONG, s + BUFFER_COUNT, buffers.size());
        specs.set(JAVA_LONG, s + BUFFERS, base + at);
        at = writeBuffers(aux, at, buffers);
        Quantization q = f.quantization();
        if (q != null) {
            NativeDescriptor.toNative(q, specs.asSlice(s + QUANT, QUANT_BYTES));
        }
        if (name != null) {
            MemorySegment.copy(name, 0, aux, JAVA_BYTE, at, name.length);
            specs.set(JAVA_LONG, s + NAME, base + at);
            specs.set(JAVA_LONG, s + NAME_LEN, name.length);
            at += pad(name.length);
        }
        if (keys.length > 0) {
            long views = at;
            specs.set(JAVA_LONG, s + MD_COUNT, keys.length);
            specs.set(JAVA_LONG, s + MD, base + views);
            at = writeMetadata(aux, at, f.metadata(), keys);
        }
        long slices = at;
        specs.set(JAVA_LONG, s + PAYLOADS, base + slices);
        specs.set(JAVA_LONG, s + PAYLOAD_COUNT, payloads.length);
        return writePayloads(aux, at, payloads, copy);
    }

    // The parts of write() are methods of their own so that each stays small enough for the
    // JIT: as one method, C1's tier 3 gave up on it ("out of virtual registers") and C2 never
    // compiled it, leaving the per-tensor path in slow tier-2 code.

    private static long writeBuffers(MemorySegment aux, long at, List<BufferSpec> buffers) {
        for (int i = 0; i < buffers.size(); i++) {
            BufferSpec b = buffers.get(i);
            aux.set(JAVA_LONG, at + BUF_SIZE, b.byteSize());
            aux.set(JAVA_INT, at + BUF_ALIGN, (int) b.alignment());
            aux.set(JAVA_BYTE, at + BUF_TAG, (byte) b.deviceTag().code());
            aux.set(JAVA_BYTE, at + BUF_SYNC, (byte) b.syncMode().code());
            aux.set(JAVA_SHORT, at + BUF_RES, (short) 0);
            at += BUF;
        }
        return at;
    }

    /** The metadata views at {@code at}, then each key and value; returns the new end. */
    private static long writeMetadata(MemorySegment aux, long at, Map<String, byte[]> metadata, byte[][] keys) {
        long base = aux.address();
        long views = at;
        at += VIEW * keys.length;
        int i = 0;
        for (Map.Entry<String, byte[]> e : metadata.entrySet()) {
            byte[] k = keys[i];
            byte[] v = e.getValue();
            long view = views + i * VIEW;
            MemorySegment.copy(k, 0, aux, JAVA_BYTE, at, k.length);
            aux.set(JAVA_LONG, view + HurrayMetadataView.key$offset(), base + at);
            aux.set(JAVA_LONG, view + HurrayMetadataView.key_len$offset(), k.length);
            at += pad(k.length);
            MemorySegment.copy(v, 0, aux, JAVA_BYTE, at, v.length);
            aux.set(JAVA_LONG, view + HurrayMetadataView.value$offset(), v.length == 0 ? 0 : base + at);
            aux.set(JAVA_LONG, view + HurrayMetadataView.value_len$offset(), v.length);
            at += pad(v.length);
            i++;
        }
        return at;
    }

    /** The payload slices at {@code slices}, then (when copying) the payloads; returns the new end. */
    private static long writePayloads(MemorySegment aux, long slices, MemorySegment[] payloads, boolean copy) {
        long base = aux.address();
        long at = slices + SLICE * payloads.length;
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
            aux.set(JAVA_LONG, slices + i * SLICE + SLICE_PTR, ptr);
            aux.set(JAVA_LONG, slices + i * SLICE + SLICE_LEN, len);
        }
        return pad(at);
    }
}
