package dev.hurray.cli;

import static dev.hurray.cli.CliTest.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.cli.CliTest.Result;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code hurray convert --quantize} and {@code inspect} of quantized tensors; the arithmetic is the core's. */
class QuantizeCliTest {
    private static final float[] W = new float[4 * 64];

    static {
        for (int i = 0; i < W.length; i++) {
            W[i] = (float) Math.sin(i * 0.1) * 3;
        }
    }

    private static Path model(Path dir) throws IOException {
        Path p = dir.resolve("in.hrry");
        try (HurrayFileWriter w = HurrayFile.create(p); Tensor weight = Tensor.of(W, 4, 64);
                Tensor bias = Tensor.of(new float[] {1, 2, 3}, 3); Tensor ids = Tensor.of(new int[] {7, 8}, 2)) {
            w.add("weight", weight);
            w.add("bias", bias); // 3 elements: MX blocks do not fit, copied unchanged
            w.add("ids", ids); // not float: copied unchanged
            w.finish();
        }
        return p;
    }

    private static String s(Path p) {
        return p.toString();
    }

    @Test
    void everyKindConvertsAndInspects(@TempDir Path dir) throws IOException {
        Path in = model(dir);
        String[][] kinds = {{"nf4", "nf4"}, {"mxfp4", "mx"}, {"mxfp6_e2m3", "mx"}, {"mxfp6_e3m2", "mx"},
            {"mxfp8_e4m3", "mx"}, {"mxfp8_e5m2", "mx"}, {"mxint8", "mx"}, {"nvfp4", "nvfp4"}, {"q8_0", "q8_0"},
            {"q4_0", "q4_0"}, {"int8-per-channel", "per-channel-affine"}};
        for (String[] k : kinds) {
            Path out = dir.resolve(k[0] + ".hrry");
            run("convert", "--quantize", k[0], s(in), s(out)).assertOk();
            try (HurrayFile f = HurrayFile.open(out)) {
                try (Tensor t = f.read("weight")) {
                    float[] back = t.toFloatArray();
                    for (int i = 0; i < W.length; i++) {
                        assertTrue(Math.abs(back[i] - W[i]) < 0.8f, k[0] + " element " + i + ": " + W[i] + " vs " + back[i]);
                    }
                }
                try (Tensor ids = f.read("ids")) {
                    assertEquals(ElementType.INT32, ids.descriptor().elementType());
                }
            }
            Result r = run("inspect", "--json", s(out));
            r.assertOk();
            assertTrue(r.out().replace(" ", "").contains("\"kind\":\"" + k[1] + "\""), r.out());
        }
        // Defaults and options reach the descriptor: MX along the last axis in blocks of 32; axis/block override.
        Path out = dir.resolve("mx.hrry");
        run("convert", "--quantize", "mxfp4:block=2:axis=0", s(in), s(out)).assertOk();
        try (HurrayFile f = HurrayFile.open(out); Tensor t = f.read("weight"); Tensor b = f.read("bias")) {
            assertEquals(new Quantization.Mx(0, 2, ElementType.FLOAT32), t.descriptor().quantization().orElseThrow());
            assertFalse(b.descriptor().quantization().isPresent());
        }
        Result r = run("inspect", "--json", s(out));
        assertTrue(r.out().replace(" ", "").contains("\"block\":2,"), r.out());
        // Round trip back to float32 through --dequantize.
        Path deq = dir.resolve("deq.hrry");
        run("convert", "--dequantize", s(out), s(deq)).assertOk();
        try (HurrayFile f = HurrayFile.open(deq); Tensor t = f.read("weight")) {
            assertEquals(ElementType.FLOAT32, t.descriptor().elementType());
            assertFalse(t.descriptor().quantization().isPresent());
        }
    }

    @Test
    void badSpecsAreUsageErrors(@TempDir Path dir) throws IOException {
        Path in = model(dir);
        for (String bad : new String[] {"int3", "mxfp4:block=0", "mxfp4:axis=-1", "mxfp4:size=2", "q4_0:block=64"}) {
            Result r = run("convert", "--quantize", bad, s(in), s(dir.resolve("x.hrry")));
            assertEquals(ExitCode.USAGE, r.code(), bad + ": " + r.err());
            assertTrue(r.err().contains("--quantize"), r.err());
        }
    }
}
