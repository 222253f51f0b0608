package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A libhurray that lacks the functions a command needs (here a stub that exports only
 * {@code hurray_c_abi_version}) ends the command with one {@code hurray: error:} line and exit
 * code 70, not a Java stack trace and exit code 1 (which means a usage error). Runs the command
 * in a child JVM; needs a C compiler for the stub.
 */
class LibraryErrorCliTest {
    @Test
    void aLibraryWithoutTheNeededFunctionIsOneErrorLine(@TempDir Path dir) throws Exception {
        Path src = Files.writeString(dir.resolve("stub.c"), "int hurray_c_abi_version(void) { return 4; }\n");
        Path lib = dir.resolve("libstub.so");
        Process cc;
        try {
            cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-o", lib.toString(), src.toString())
                    .redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.abort("no C compiler: " + e.getMessage());
            return;
        }
        String ccOut = new String(cc.getInputStream().readAllBytes());
        assertTrue(cc.waitFor(60, TimeUnit.SECONDS));
        Assumptions.assumeTrue(cc.exitValue() == 0, ccOut);
        // A one-element float32 npy file (version 1.0: magic, version, header length, header).
        String header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
        header += " ".repeat(64 - (10 + header.length() + 1) % 64) + "\n";
        byte[] h = header.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        java.io.ByteArrayOutputStream npy = new java.io.ByteArrayOutputStream();
        npy.writeBytes(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (byte) h.length, 0});
        npy.writeBytes(h);
        npy.writeBytes(new byte[] {0, 0, (byte) 0x80, 0x3f});
        Path in = Files.write(dir.resolve("x.npy"), npy.toByteArray());

        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                "-Dhurray.library.path=" + lib, Main.class.getName(), "convert", in.toString(),
                dir.resolve("x.hrry").toString()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove("HURRAY_LIBRARY_PATH");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(ExitCode.INTERNAL, p.exitValue(), out);
        assertTrue(out.lines().anyMatch(l -> l.startsWith("hurray: error: libhurray has no hurray_")), out);
        assertFalse(out.contains("\tat "), out);
        assertFalse(Files.exists(dir.resolve("x.hrry")), out);
    }
}
