package dev.hurray.formats;

import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mutation fuzzing of the foreign-format parsers (safetensors, npy, npz, GGUF, tfjs), seeded
 * and bounded so that it runs in every build: valid files written by the library's own writers
 * (and a real tfjs model) are damaged many times (bit flips, bytes set to 0x00/0xFF, 8-byte
 * length fields smashed to huge values, truncation, insertion) and read back. Each read must
 * either succeed (and then every payload byte is touched) or fail with an {@link IOException}
 * ({@link ForeignFormatException} for bad input): never another exception, an
 * {@link OutOfMemoryError} or a hang. {@code -Dhurray.fuzz.iterations=N} runs longer
 * (docs/reliability.md).
 */
class ParserMutationFuzzTest {
    private static final int ITERATIONS = Integer.getInteger("hurray.fuzz.iterations", 150);

    @TempDir
    Path tmp;

    private List<Path> seeds() throws IOException {
        List<Path> seeds = new ArrayList<>();
        Random rnd = new Random(1);
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = List.of(
                    Models.random(arena, rnd, "a", ElementType.FLOAT32, Layout.Kind.ROW_MAJOR, 3, 4),
                    Models.random(arena, rnd, "b", ElementType.INT16, Layout.Kind.ROW_MAJOR, 5),
                    Models.random(arena, rnd, "c", ElementType.UINT8, Layout.Kind.ROW_MAJOR, 2, 2, 2));
            ForeignModel m = Models.model(ts, Map.of("k", "v"));
            Path st = tmp.resolve("seed.safetensors");
            Safetensors.write(m, st, null);
            seeds.add(st);
            Path npz = tmp.resolve("seed.npz");
            Npz.write(m, npz, false, null);
            seeds.add(npz);
            Path npzc = tmp.resolve("seedc.npz");
            Npz.write(m, npzc, true, null);
            seeds.add(npzc);
            Path npy = tmp.resolve("seed.npy");
            Npy.write(ts.get(0), npy, null);
            seeds.add(npy);
            Path gguf = tmp.resolve("seed.gguf");
            Gguf.write(Models.model(List.of(ts.get(0), ts.get(1)), Map.of()), gguf, null);
            seeds.add(gguf);
            // GGUF Q8_0 and Q4_0 blocks: random bytes are valid blocks (any float16 d, any q).
            Path blocks = tmp.resolve("seed-blocks.gguf");
            Gguf.write(Models.model(List.of(
                    block(arena, rnd, "q8", Quantization.GgufFormat.Q8_0, 2, 64),
                    block(arena, rnd, "q4", Quantization.GgufFormat.Q4_0, 3, 32),
                    ts.get(1)), Map.of()), blocks, null);
            seeds.add(blocks);
        }
        return seeds;
    }

    private static ForeignTensor block(Arena arena, Random rnd, String name, Quantization.GgufFormat f, long... shape) {
        Quantization.Block q = Quantization.Block.of(f, shape.length);
        ElementType stored = f == Quantization.GgufFormat.Q8_0 ? ElementType.INT8 : ElementType.UINT4;
        byte[] b = new byte[(int) ForeignTensor.payloadSize(stored, shape, q)];
        rnd.nextBytes(b);
        return new ForeignTensor(name, stored, shape, Layout.Kind.ROW_MAJOR, arena.allocateFrom(ValueLayout.JAVA_BYTE, b), q, -1);
    }

    private static byte[] mutate(byte[] in, Random rnd) {
        byte[] b = in.clone();
        int edits = 1 + rnd.nextInt(4);
        for (int e = 0; e < edits && b.length > 0; e++) {
            int at = rnd.nextInt(b.length);
            switch (rnd.nextInt(6)) {
                case 0 -> b[at] ^= (byte) (1 << rnd.nextInt(8));
                case 1 -> b[at] = 0;
                case 2 -> b[at] = (byte) 0xFF;
                case 3 -> {
                    for (int i = at; i < Math.min(b.length, at + 8); i++) {
                        b[i] = (byte) (i == at + 7 ? 0x7F : 0xFF); // a huge little-endian length
                    }
                }
                case 4 -> b = java.util.Arrays.copyOf(b, at); // truncation
                default -> {
                    byte[] c = new byte[b.length + 16];
                    byte[] junk = new byte[16];
                    rnd.nextBytes(junk);
                    System.arraycopy(b, 0, c, 0, at);
                    System.arraycopy(junk, 0, c, at, 16);
                    System.arraycopy(b, at, c, at + 16, b.length - at);
                    b = c;
                }
            }
        }
        return b;
    }

    /**
     * Reads a file as the library does for the command line; touches every payload byte and
     * dequantizes every quantized tensor in the native core.
     */
    private static void read(Path file, Format format) throws IOException {
        try (ForeignModel m = ForeignFormats.read(file, format, false, null)) {
            for (ForeignTensor t : m.tensors()) {
                Payloads.crc32(t.data());
                if (t.quantization().isPresent()) {
                    try (Arena scratch = Arena.ofConfined(); Tensor h = t.toTensor(scratch); Tensor f = h.dequantize()) {
                        f.buffer(0);
                    }
                }
            }
        }
    }

    @Test
    void damagedFilesAreReadOrRefusedWithAnIOException() throws Exception {
        List<Path> seeds = seeds();
        Random rnd = new Random(42);
        int[] refused = {0};
        int[] read = {0};
        assertTimeoutPreemptively(Duration.ofMinutes(3), () -> {
            for (Path seed : seeds) {
                Format format = Format.detect(seed);
                byte[] bytes = Files.readAllBytes(seed);
                String name = seed.getFileName().toString();
                for (int i = 0; i < ITERATIONS; i++) {
                    byte[] m = mutate(bytes, rnd);
                    Path f = tmp.resolve("m-" + name);
                    Files.write(f, m);
                    try {
                        read(f, format);
                        read[0]++;
                    } catch (IOException expected) {
                        refused[0]++;
                    } catch (Throwable t) {
                        Path kept = tmp.resolve("crash-" + i + "-" + name);
                        Files.write(kept, m);
                        fail(name + " mutation " + i + " threw " + t + " (input kept at " + kept + ")", t);
                    }
                }
            }
        });
        assertTrue(refused[0] > 0 && read[0] + refused[0] == seeds.size() * ITERATIONS,
                "read " + read[0] + ", refused " + refused[0]);
    }

    @Test
    void damagedTfjsManifestsAndShardsAreReadOrRefused() throws Exception {
        Path dir = TestSupport.faceApiDir();
        Path manifest = dir.resolve("tiny_face_detector_model-weights_manifest.json");
        if (!Files.exists(manifest)) {
            return; // the bundled models are copied by the CLI build; the CLI tests cover it then
        }
        byte[] json = Files.readAllBytes(manifest);
        byte[] shard = Files.readAllBytes(dir.resolve("tiny_face_detector_model.bin"));
        Random rnd = new Random(7);
        assertTimeoutPreemptively(Duration.ofMinutes(2), () -> {
            for (int i = 0; i < ITERATIONS; i++) {
                Path d = Files.createDirectories(tmp.resolve("tfjs" + i));
                boolean jsonSide = rnd.nextBoolean();
                Files.write(d.resolve("m-weights_manifest.json"), jsonSide ? mutate(json, rnd) : json);
                Files.write(d.resolve("tiny_face_detector_model.bin"), jsonSide ? shard : mutate(shard, rnd));
                try {
                    try (ForeignModel m = Tfjs.read(d.resolve("m-weights_manifest.json"), false, null)) {
                        for (ForeignTensor t : m.tensors()) {
                            Payloads.crc32(t.data());
                        }
                    }
                } catch (IOException expected) {
                    // refused with a clear error
                } catch (Throwable t) {
                    fail("tfjs mutation " + i + " threw " + t, t);
                }
            }
        });
    }
}
