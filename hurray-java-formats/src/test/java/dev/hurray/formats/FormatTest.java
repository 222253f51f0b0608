package dev.hurray.formats;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FormatTest {
    @TempDir
    Path tmp;

    private Path file(String name, byte[] content) throws IOException {
        Path p = tmp.resolve(name);
        Files.write(p, content);
        return p;
    }

    @Test
    void contentWinsOverName() throws IOException {
        Path npyNamedSafetensors = file("a.safetensors", NpyTest.npy(1, "{}", new byte[0]));
        assertEquals(Format.NPY, Format.detect(npyNamedSafetensors));
        Path st = file("weights", SafetensorsTest.file("{}", new byte[0]));
        assertEquals(Format.SAFETENSORS, Format.detect(st));
        assertEquals(Format.NPZ, Format.detect(file("x", new byte[] {'P', 'K', 3, 4, 0})));
        assertEquals(Format.HRRYFILE, Format.detect(file("y", "HRRYFILE\0\1".getBytes(StandardCharsets.US_ASCII))));
        assertEquals(Format.STREAM, Format.detect(file("z", "HRRYSTRM\0\1".getBytes(StandardCharsets.US_ASCII))));
        assertEquals(Format.TFJS, Format.detect(file("m", "\n  [ {".getBytes(StandardCharsets.US_ASCII))));
    }

    @Test
    void nameDecidesWhenContentDoesNot() throws IOException {
        assertEquals(Format.SAFETENSORS, Format.detect(file("junk.safetensors", new byte[] {1, 2, 3})));
        assertEquals(Format.TFJS, Format.detect(file("model.json", new byte[0])));
        assertEquals(Format.HRRYFILE, Format.detect(file("a.hrry", new byte[0])));
        assertEquals(Format.HRRYFILE, Format.detect(file("a.hrryfile", new byte[0]))); // the golden vectors' extension
        ForeignFormatException e = assertThrows(ForeignFormatException.class,
                () -> Format.detect(file("mystery", new byte[] {1, 2, 3})));
        assertEquals(true, e.getMessage().contains("unrecognised format"));
    }

    /** The one-argument entry point detects the format and reads with the defaults. */
    @Test
    void foreignFormatsReadDetectsTheFormat() throws IOException {
        Path npy = TestSupport.resourceDir("npy").resolve("float32_c.npy");
        Path gguf = TestSupport.resourceDir("gguf").resolve("typed.gguf");
        for (Path p : new Path[] {npy, gguf, file("renamed", Files.readAllBytes(npy))}) {
            try (ForeignModel one = ForeignFormats.read(p);
                 ForeignModel four = ForeignFormats.read(p, Format.detect(p), false, null)) {
                assertEquals(four.tensors().size(), one.tensors().size(), p.toString());
                assertEquals(four.metadata(), one.metadata(), p.toString());
                for (int i = 0; i < one.tensors().size(); i++) {
                    ForeignTensor a = one.tensors().get(i);
                    ForeignTensor b = four.tensors().get(i);
                    assertEquals(b.name(), a.name());
                    assertEquals(b.dtype(), a.dtype());
                    assertEquals(TestSupport.hex(b.data()), TestSupport.hex(a.data()));
                }
            }
        }
        assertThrows(ForeignFormatException.class, () -> ForeignFormats.read(file("mystery", new byte[] {1, 2, 3})));
        assertThrows(IllegalArgumentException.class,
                () -> ForeignFormats.read(file("y.hrry", "HRRYFILE\0\1".getBytes(StandardCharsets.US_ASCII))));
    }

    @Test
    void namesParse() {
        assertEquals(Format.HRRYFILE, Format.parse("HRRYFILE"));
        assertEquals(Format.HRRYFILE, Format.parse("hrry"));
        assertEquals(Format.NPZ, Format.parse("NPZ"));
        assertThrows(IllegalArgumentException.class, () -> Format.parse("onnx"));
        assertEquals(Format.ARROW, Format.parse("arrow"));
    }

    @Test
    void arrowIpcFilesByMagicAndStreamsByName() throws IOException {
        assertEquals(Format.ARROW, Format.detect(file("table", "ARROW1\0\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII))));
        assertEquals(Format.ARROW, Format.detect(file("t.arrows", new byte[] {-1, -1, -1, -1, 16, 0, 0, 0})));
        assertEquals(Format.ARROW, Format.byName(Path.of("t.arrow")));
        assertTrue(Format.ARROW.writable());
    }
}
