package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.testing.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
        Path lib = ChildJvm.olderLibraryStub(dir);
        // A one-element float32 npy file (version 1.0: magic, version, header length, header).
        String header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
        header += " ".repeat(64 - (10 + header.length() + 1) % 64) + "\n";
        byte[] h = header.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        java.io.ByteArrayOutputStream npy = new java.io.ByteArrayOutputStream();
        npy.writeBytes(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (byte) h.length, 0});
        npy.writeBytes(h);
        npy.writeBytes(new byte[] {0, 0, (byte) 0x80, 0x3f});
        Path in = Files.write(dir.resolve("x.npy"), npy.toByteArray());

        ChildJvm.Result r = ChildJvm.run(List.of("-Dhurray.library.path=" + lib), Main.class.getName(), "convert",
                in.toString(), dir.resolve("x.hrry").toString());
        String out = r.out();
        assertEquals(ExitCode.INTERNAL, r.exit(), out);
        assertTrue(out.lines().anyMatch(l -> l.startsWith("hurray: error: libhurray has no hurray_")), out);
        assertFalse(out.contains("\tat "), out);
        assertFalse(Files.exists(dir.resolve("x.hrry")), out);
    }
}
