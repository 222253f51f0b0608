package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Property tests with a seeded generator (each case names its seed, so a failure is
 * reproducible): random valid descriptors survive the native builder, the encoding, and a
 * stream round trip unchanged; random damage to a stream only ever yields tensors or a
 * {@link HurrayException}.
 */
class DescriptorPropertyTest {
    private static final int CASES = 400;
    private static final Set<ElementType> AFFINE = EnumSet.of(ElementType.INT4, ElementType.UINT4, ElementType.INT8,
            ElementType.UINT8, ElementType.INT16, ElementType.UINT16, ElementType.INT32, ElementType.UINT32);
    private static final Set<ElementType> CAST = EnumSet.of(ElementType.FLOAT16, ElementType.BFLOAT16,
            ElementType.FLOAT8_E4M3FN, ElementType.FLOAT8_E5M2, ElementType.FLOAT32);

    /** The inputs of one generated descriptor, kept to compare with what the native side reports. */
    record Case(long seed, ElementType type, Shape shape, Layout layout, long offset, List<BufferSpec> buffers,
            Quantization quantization, String name, List<String> keys, List<byte[]> values) {
        TensorDescriptor build() throws HurrayException {
            TensorDescriptor.Builder b = TensorDescriptor.builder(type, shape).layout(layout).byteOffset(offset)
                    .buffers(buffers).quantization(quantization).name(name);
            for (int i = 0; i < keys.size(); i++) {
                b.metadata(keys.get(i), values.get(i));
            }
            return b.build();
        }
    }

    static Case generate(long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        ElementType type = ElementType.values()[r.nextInt(ElementType.values().length)];
        int rank = r.nextInt(9);
        long[] dims = new long[rank];
        for (int i = 0; i < rank; i++) {
            dims[i] = r.nextInt(10) == 0 ? 0 : 1 + r.nextInt(4);
        }
        Shape shape = Shape.of(dims);
        long count = shape.elementCount();
        long dense = type.byteSizeOf(count);
        Layout layout;
        long offset = 0;
        long dataBytes;
        int kind = type.isSubByte() ? r.nextInt(2) : r.nextInt(3);
        if (kind < 2) {
            layout = kind == 0 ? Layout.rowMajor() : Layout.columnMajor();
            offset = r.nextInt(4) == 0 ? r.nextInt(32) : 0;
            dataBytes = offset + dense + r.nextInt(3) * 8L;
        } else {
            long[] strides = new long[rank];
            long lo = 0;
            long hi = 0;
            for (int i = 0; i < rank; i++) {
                strides[i] = r.nextInt(13) - 6;
                long reach = (Math.max(dims[i], 1) - 1) * strides[i];
                if (reach < 0) {
                    lo += reach;
                } else {
                    hi += reach;
                }
            }
            layout = Layout.strided(strides);
            long esize = type.bitWidth() / 8;
            offset = -lo * esize;
            dataBytes = count == 0 ? offset : offset + (hi + 1) * esize;
        }
        int align = 64 << r.nextInt(3);
        List<BufferSpec> buffers = new ArrayList<>();
        buffers.add(new BufferSpec(dataBytes, align, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED));
        Quantization q = null;
        ElementType[] deq = {ElementType.FLOAT16, ElementType.FLOAT32, ElementType.FLOAT64, ElementType.BFLOAT16};
        int qk = r.nextInt(4);
        if (qk == 1 && AFFINE.contains(type)) {
            q = new Quantization.PerTensorAffine(r.nextDouble() * 4 - 2, r.nextInt(200) - 100, deq[r.nextInt(deq.length)]);
        } else if (qk == 2 && AFFINE.contains(type) && rank > 0) {
            int axis = r.nextInt(rank);
            q = new Quantization.PerChannelAffine(axis, deq[r.nextInt(deq.length)]);
            buffers.add(BufferSpec.cpu(dims[axis] * 4));
            buffers.add(BufferSpec.cpu(dims[axis] * 4));
        } else if (qk == 3 && CAST.contains(type)) {
            q = new Quantization.Cast(deq[r.nextInt(deq.length)]);
        }
        String name = r.nextBoolean() ? null : "t" + seed + (r.nextBoolean() ? "/ü名" : "");
        List<String> keys = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        int entries = r.nextInt(4);
        for (int i = 0; i < entries; i++) {
            keys.add("k" + i);
            byte[] v = new byte[r.nextInt(20)];
            r.nextBytes(v);
            values.add(v);
        }
        return new Case(seed, type, shape, layout, offset, List.copyOf(buffers), q, name, keys, values);
    }

    @Test
    void randomDescriptorsSurviveBuildEncodingAndStreams() throws IOException {
        List<Tensor> tensors = new ArrayList<>();
        try {
            for (long seed = 1; seed <= CASES; seed++) {
                Case c = generate(seed);
                TensorDescriptor d;
                try {
                    d = c.build();
                } catch (HurrayException e) {
                    throw new AssertionError("seed " + seed + ": the native builder refused " + c + ": " + e.getMessage(), e);
                }
                String where = "seed " + seed + ": " + d;
                assertEquals(c.type(), d.elementType(), where);
                assertEquals(c.shape(), d.shape(), where);
                assertEquals(c.layout(), d.layout(), where);
                assertEquals(c.offset(), d.byteOffset(), where);
                assertEquals(c.buffers(), d.buffers(), where);
                assertEquals(c.quantization(), d.quantization().orElse(null), where);
                assertEquals(c.name(), d.name().orElse(null), where);
                assertEquals(c.keys(), List.copyOf(d.metadata().keySet()), where);
                for (int i = 0; i < c.keys().size(); i++) {
                    assertArrayEquals(c.values().get(i), d.metadata().get(c.keys().get(i)), where);
                }
                byte[] encoded = d.encode();
                TensorDescriptor back = TensorDescriptor.decode(encoded);
                assertEquals(d, back, where);
                assertEquals(d.hashCode(), back.hashCode(), where);
                assertArrayEquals(encoded, back.encode(), where);
                tensors.add(TestSupport.filled(d, seed));
            }
            byte[] wire = TestSupport.stream(tensors, WriterOptions.defaults().withPayloadChecksums(true));
            try (Reader r = Reader.of(wire)) {
                for (Tensor expected : tensors) {
                    try (Tensor t = r.read()) {
                        TestSupport.assertSameTensor(expected, t);
                    }
                }
                assertNull(r.read());
            }
        } finally {
            tensors.forEach(Tensor::close);
        }
    }

    @Test
    void randomDamageYieldsTensorsOrAHurrayException() throws IOException {
        List<Tensor> tensors = new ArrayList<>();
        byte[] wire;
        try {
            for (long seed = 1; seed <= 20; seed++) {
                tensors.add(TestSupport.filled(generate(seed).build(), seed));
            }
            wire = TestSupport.stream(tensors, WriterOptions.defaults());
        } finally {
            tensors.forEach(Tensor::close);
        }
        SplittableRandom r = new SplittableRandom(42);
        for (int round = 0; round < 2000; round++) {
            byte[] damaged = wire.clone();
            int edits = 1 + r.nextInt(4);
            for (int e = 0; e < edits; e++) {
                damaged[r.nextInt(damaged.length)] = (byte) r.nextInt(256);
            }
            int cut = r.nextInt(4) == 0 ? r.nextInt(damaged.length) : damaged.length;
            byte[] input = java.util.Arrays.copyOf(damaged, cut);
            try (Reader reader = Reader.of(input)) {
                for (int i = 0; i <= tensors.size(); i++) {
                    Tensor t = reader.read();
                    if (t == null) {
                        break;
                    }
                    t.close();
                }
            } catch (HurrayException expected) {
                // the only acceptable failure
            } catch (RuntimeException | Error other) {
                fail("round " + round + ": " + other, other);
            }
        }
    }
}
