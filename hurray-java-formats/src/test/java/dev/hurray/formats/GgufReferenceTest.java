package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * GGUF against llama.cpp's own Python package, gguf-py 0.19 (its {@code gguf.quants} is
 * llama.cpp's reference quantizer in numpy, bit-exact by its own tests). Skipped when gguf-py
 * is not installed.
 */
class GgufReferenceTest {
    @TempDir
    Path tmp;

    static final int ROWS = 512;
    static final int COLS = 256;

    /** Gaussian rows, rows of small integers (many exact ties) and rows of half steps. */
    static float[] input() {
        Random r = new Random(21);
        float[] v = new float[ROWS * COLS];
        for (int i = 0; i < v.length; i++) {
            int row = i / COLS;
            v[i] = switch (row % 4) {
                case 0 -> (float) r.nextGaussian();
                case 1 -> r.nextInt(255) - 127;
                case 2 -> (r.nextInt(33) - 16) * 0.5f;
                default -> (float) (r.nextGaussian() * Math.pow(10, r.nextInt(9) - 4));
            };
        }
        return v;
    }

    @Test
    void q8_0AndQ4_0QuantizeBitForBitAsGgufPy() throws IOException {
        ReferencePython.assume("gguf", "numpy");
        float[] v = input();
        Path in = tmp.resolve("in.f32");
        ByteBuffer bb = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        bb.asFloatBuffer().put(v);
        Files.write(in, bb.array());
        for (Quantization.GgufFormat f : Quantization.GgufFormat.values()) {
            Path ref = tmp.resolve(f + ".ref");
            ReferencePython.run("""
                    import sys, numpy as np
                    from gguf import quants, GGMLQuantizationType as T
                    a = np.fromfile(sys.argv[1], dtype='<f4').reshape(int(sys.argv[3]), int(sys.argv[4]))
                    quants.quantize(a, getattr(T, sys.argv[2])).tofile(sys.argv[5])
                    """, in.toString(), f.name(), Integer.toString(ROWS), Integer.toString(COLS), ref.toString());
            byte[] want = Files.readAllBytes(ref);
            ElementType stored = f == Quantization.GgufFormat.Q8_0 ? ElementType.INT8 : ElementType.UINT4;
            try (Tensor src = Tensor.of(v, ROWS, COLS);
                 Tensor q = src.quantize(stored, Quantization.Block.of(f, 2))) {
                byte[] got = q.buffers().get(0).toArray(ValueLayout.JAVA_BYTE);
                int per = f == Quantization.GgufFormat.Q8_0 ? 34 : 18;
                assertEquals(want.length, got.length, f + " size");
                int differing = 0;
                int first = -1;
                for (int b = 0; b < want.length / per; b++) {
                    if (java.util.Arrays.mismatch(want, b * per, (b + 1) * per, got, b * per, (b + 1) * per) >= 0) {
                        differing++;
                        first = first < 0 ? b : first;
                    }
                }
                assertEquals(0, differing, f + ": blocks differing from gguf-py (first: " + first + ")");
            }
        }
    }

    @Test
    void mxfp4TensorsOfGptOssTravelAsRawRowsBitForBit() throws IOException {
        ReferencePython.assume("gguf", "numpy");
        Path src = tmp.resolve("mxfp4.gguf");
        Path back = tmp.resolve("back.gguf");
        String make = """
                import sys, numpy as np
                from gguf import GGUFWriter, GGMLQuantizationType as T, quants
                a = np.random.default_rng(39).standard_normal((6, 64)).astype(np.float32)
                q = quants.quantize(a, T.MXFP4)
                w = GGUFWriter(sys.argv[1], 'gpt-oss')
                w.add_tensor('blk.0.ffn_down_exps.weight', q, raw_shape=q.shape, raw_dtype=T.MXFP4)
                w.add_tensor('norm', a[0])
                w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
                """;
        ReferencePython.run(make, src.toString());
        try (ForeignModel m = Gguf.read(src)) {
            ForeignTensor t = m.tensor("blk.0.ffn_down_exps.weight");
            assertEquals(ElementType.UINT8, t.dtype());
            org.junit.jupiter.api.Assertions.assertArrayEquals(new long[] {6, 34}, t.shape());
            assertEquals("mxfp4", m.metadata().get(Gguf.TENSOR_TYPE_KEY_PREFIX + t.name()));
            Gguf.write(m, back, null);
        }
        String check = """
                import sys, numpy as np
                from gguf import GGUFReader, quants
                a, b = GGUFReader(sys.argv[1]), GGUFReader(sys.argv[2])
                for x, y in zip(a.tensors, b.tensors):
                    assert x.name == y.name and x.tensor_type == y.tensor_type, (x.name, y.name, x.tensor_type, y.tensor_type)
                    assert list(x.shape) == list(y.shape), (x.shape, y.shape)
                    assert bytes(x.data) == bytes(y.data), x.name
                    assert np.array_equal(quants.dequantize(x.data, x.tensor_type), quants.dequantize(y.data, y.tensor_type))
                print(len(b.tensors), int(b.tensors[0].tensor_type))
                """;
        assertEquals("2 39", ReferencePython.run(check, src.toString(), back.toString()).strip());
    }
}
