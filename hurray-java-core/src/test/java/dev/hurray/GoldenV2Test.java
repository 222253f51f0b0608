package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@code src/golden/stream_v2_quant.hrry}, written by the Rust tests (native/hurray-core/tests/quant.rs):
 * every block quantization kind of the same [4, 64] input, plus one tensor of each version-2
 * element type. Java reads it, and quantizes the same input through its own API: the
 * descriptors and every buffer byte must match.
 */
class GoldenV2Test {
    @Test
    void javaQuantizesToTheRustGoldenBytes() throws IOException {
        float[] input = new float[4 * 64];
        for (int i = 0; i < input.length; i++) {
            input[i] = ((i * 7919) % 1000) / 100f - 5f;
        }
        byte[] wire = Files.readAllBytes(Path.of("..", "src", "golden", "stream_v2_quant.hrry"));
        int quantized = 0;
        int plain = 0;
        try (Reader r = Reader.of(wire); Tensor src = Tensor.of(input, 4, 64)) {
            for (Tensor t : r) {
                try (t) {
                    TensorDescriptor d = t.descriptor();
                    String name = d.name().orElseThrow();
                    if (name.startsWith("dtype/")) {
                        assertEquals("dtype/" + d.elementType().formatName(), name);
                        assertTrue(d.elementType().code() >= 19, name);
                        assertEquals(5, t.toFloatArray().length);
                        plain++;
                        continue;
                    }
                    try (Tensor mine = src.quantize(d.elementType(), d.quantization().orElseThrow())) {
                        assertEquals(d.quantization(), mine.descriptor().quantization(), name);
                        assertEquals(d.buffers().size(), mine.descriptor().buffers().size(), name);
                        for (int i = 0; i < d.buffers().size(); i++) {
                            assertEquals(-1L, t.buffer(i).mismatch(mine.buffer(i)), name + " buffer " + i);
                        }
                    }
                    quantized++;
                }
            }
        }
        assertEquals(21, quantized);
        assertEquals(7, plain);
    }
}
