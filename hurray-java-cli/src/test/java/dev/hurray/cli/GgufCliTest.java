package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.formats.TestSupport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** GGUF through the command: detected by content, written and read back bit-exact. */
class GgufCliTest {
    @TempDir
    Path tmp;

    @Test
    void npyToGgufAndBackIsBitExact() throws IOException {
        Path npy = TestSupport.resourceDir("npy").resolve("float32_c.npy");
        Path gguf = tmp.resolve("m.gguf");
        Path back = tmp.resolve("back.npy");
        CliTest.run("convert", npy.toString(), gguf.toString()).assertOk();
        CliTest.Result r = CliTest.run("inspect", gguf.toString());
        r.assertOk();
        assertTrue(r.out().contains(": gguf, 1 tensor"), r.out());
        CliTest.run("convert", "--to", "npy", gguf.toString(), back.toString()).assertOk();
        assertArrayEquals(Files.readAllBytes(npy), Files.readAllBytes(back));
    }

    @Test
    void uint16CannotBeGguf() throws IOException {
        Path npy = TestSupport.resourceDir("npy").resolve("uint16_c.npy");
        CliTest.run("convert", npy.toString(), tmp.resolve("u.gguf").toString())
                .assertError(ExitCode.BAD_INPUT, "GGUF has no type for uint16");
    }
}
