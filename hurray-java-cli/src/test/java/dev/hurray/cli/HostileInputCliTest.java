package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.formats.SafetensorsTestAccess;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile inputs (docs/reliability.md) get a clear failure from every command: exit 2 and one
 * line for a stream declaring far more than it carries, tensor names against the one name rule
 * (docs/spec/descriptor.md §Names), JSON headers beyond the parser's limits and escape
 * sequences in names; exit 4 from {@code verify} for composites that lie about their members.
 */
class HostileInputCliTest {
    @TempDir
    Path dir;

    private static byte[] le(int bytes, long v) {
        ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v);
        byte[] out = new byte[bytes];
        System.arraycopy(b.array(), 0, out, 0, bytes);
        return out;
    }

    private static int crc(byte[] b) {
        CRC32C c = new CRC32C();
        c.update(b);
        return (int) c.getValue();
    }

    /** A 152-byte stream whose one tensor declares {@code declared} bytes of uint8 payload. */
    static byte[] tinyStreamDeclaring(long declared) throws IOException {
        ByteArrayOutputStream d = new ByteArrayOutputStream();
        d.write("HRDS".getBytes(StandardCharsets.US_ASCII));
        d.write(le(2, 1));
        d.write(le(2, 0));
        d.write(new byte[] {5, 0, 1, 1}); // uint8, row-major, rank 1, one buffer
        d.write(le(4, 0));
        d.write(le(8, 0));
        d.write(le(8, declared)); // dims[0]
        d.write(le(8, declared)); // buffer byte_size
        d.write(le(4, 64));
        d.write(new byte[] {0, 0, 0, 0});
        byte[] desc = d.toByteArray();
        ByteArrayOutputStream s = new ByteArrayOutputStream();
        byte[] h = new byte[12];
        System.arraycopy("HRRYSTRM".getBytes(StandardCharsets.US_ASCII), 0, h, 0, 8);
        h[8] = 1;
        s.write(h);
        s.write(le(4, crc(h)));
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write("HRTN".getBytes(StandardCharsets.US_ASCII));
        f.write(le(4, 0));
        f.write(le(8, desc.length));
        f.write(le(4, crc(desc)));
        byte[] frame = f.toByteArray();
        s.write(frame);
        s.write(le(4, crc(frame)));
        s.write(desc);
        while (s.size() < 152) {
            s.write(7);
        }
        return s.toByteArray();
    }

    @Test
    void aTinyStreamDeclaring60GiBIsBadInputNotAnIoError() throws IOException {
        Path p = dir.resolve("huge.hrrys");
        byte[] bytes = tinyStreamDeclaring(60L << 30);
        assertEquals(152, bytes.length);
        Files.write(p, bytes);
        CliTest.run("inspect", p.toString()).assertError(ExitCode.BAD_INPUT, "TRUNCATED");
        CliTest.run("convert", p.toString(), dir.resolve("out.hrry").toString()).assertError(ExitCode.BAD_INPUT, "TRUNCATED");
        assertFalse(Files.exists(dir.resolve("out.hrry")));
    }

    @Test
    void aRankOver32IsRefusedAlikeByInspectVerifyAndConvert() throws IOException {
        String ones = String.join(",", java.util.Collections.nCopies(33, "1"));
        byte[] h = ("{\"a\":{\"dtype\":\"F32\",\"shape\":[" + ones + "],\"data_offsets\":[0,4]}}")
                .getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write(le(8, h.length));
        f.write(h);
        f.write(new byte[4]);
        Path p = dir.resolve("rank33.safetensors");
        Files.write(p, f.toByteArray());
        String why = "rank 33 exceeds 32";
        CliTest.run("inspect", p.toString()).assertError(ExitCode.BAD_INPUT, why);
        CliTest.run("convert", p.toString(), dir.resolve("o.hrry").toString()).assertError(ExitCode.BAD_INPUT, why);
        CliTest.Result v = CliTest.run("verify", p.toString());
        assertTrue(v.code() == ExitCode.VERIFY_FAILED && v.err().contains(why), v.err());
        assertFalse(Files.exists(dir.resolve("o.hrry")));
    }

    @Test
    void aNameWithNulIsRefusedAlikeByInspectVerifyAndConvert() throws IOException {
        String header = "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write(le(8, h.length));
        f.write(h);
        f.write(new byte[8]);
        Path p = dir.resolve("nul.safetensors");
        Files.write(p, f.toByteArray());
        CliTest.run("inspect", p.toString()).assertError(ExitCode.BAD_INPUT, "NUL");
        CliTest.run("convert", p.toString(), dir.resolve("o.hrry").toString()).assertError(ExitCode.BAD_INPUT, "NUL");
        CliTest.Result v = CliTest.run("verify", p.toString());
        assertTrue(v.code() != ExitCode.OK && v.err().contains("NUL"), v.err());
    }

    /** A name over the limit is named in the refusal by its start and its length, not whole. */
    @Test
    void aLongNameIsClippedInEveryRefusal() throws IOException {
        for (String name : new String[] {"a".repeat(4097), "é".repeat(3000), "x".repeat(2000) + "\\u0000" + "y".repeat(3000)}) {
            String header = "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
            byte[] h = header.getBytes(StandardCharsets.UTF_8);
            ByteArrayOutputStream f = new ByteArrayOutputStream();
            f.write(le(8, h.length));
            f.write(h);
            f.write(new byte[8]);
            Path p = dir.resolve("long.safetensors");
            Files.write(p, f.toByteArray());
            String decoded = name.replace("\\u0000", "\u0000");
            String bytes = "(" + decoded.getBytes(StandardCharsets.UTF_8).length + " bytes)";
            for (String[] args : new String[][] {{"inspect", p.toString()}, {"verify", p.toString()},
                    {"convert", p.toString(), dir.resolve("o.hrry").toString()}}) {
                CliTest.Result r = CliTest.run(args);
                assertTrue(r.code() == ExitCode.BAD_INPUT || r.code() == ExitCode.VERIFY_FAILED, args[0] + ": " + r.err());
                assertTrue(r.err().contains(bytes), r.err());
                assertTrue(r.err().length() < 600, args[0] + " printed " + r.err().length() + " characters: " + r.err());
                assertEquals(1, r.err().strip().lines().count(), r.err());
            }
            assertFalse(Files.exists(dir.resolve("o.hrry")));
        }
    }

    @Test
    void anNpzMemberNameThatIsNotAPortablePathIsNeverWrittenBack() throws IOException {
        Path in = dir.resolve("slip.npz");
        try (ZipOutputStream z = new ZipOutputStream(Files.newOutputStream(in))) {
            z.putNextEntry(new ZipEntry("../x.npy"));
            byte[] npyHeader = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }".getBytes(StandardCharsets.US_ASCII);
            int total = 10 + npyHeader.length + 1;
            int pad = (64 - total % 64) % 64;
            ByteArrayOutputStream npy = new ByteArrayOutputStream();
            npy.write(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0});
            npy.write(le(2, npyHeader.length + pad + 1));
            npy.write(npyHeader);
            for (int i = 0; i < pad; i++) {
                npy.write(' ');
            }
            npy.write('\n');
            npy.write(new byte[4]);
            z.write(npy.toByteArray());
            z.closeEntry();
        }
        // Reading keeps the name (inside Hurray it is an opaque key) ...
        CliTest.run("inspect", in.toString()).assertOk();
        Path hrry = dir.resolve("slip.hrry");
        CliTest.run("convert", in.toString(), hrry.toString()).assertOk();
        // ... but writing it as a zip member name is refused, from either source.
        for (Path src : new Path[] {in, hrry}) {
            Path out = dir.resolve("out.npz");
            CliTest.run("convert", src.toString(), out.toString()).assertError(ExitCode.BAD_INPUT, "\"..\" path segment");
            assertFalse(Files.exists(out), "nothing written from " + src);
        }
    }

    /**
     * Escape sequences in a file's metadata keys, values and tensor names (here a GGUF file's:
     * clear the screen, retitle the terminal, write the clipboard with OSC 52; a right-to-left
     * override) reach the terminal as visible {@code \\xNN} / {@code <U+NNNN>} text, from
     * inspect's table and from error messages.
     */
    @Test
    void escapeSequencesInNamesAndMetadataDoNotReachTheTerminal() throws IOException {
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write("GGUF".getBytes(StandardCharsets.US_ASCII));
        f.write(le(4, 3));
        f.write(le(8, 1));
        f.write(le(8, 1));
        ggufString(f, "key\u001b]0;retitled\u0007");
        f.write(le(4, 8));
        ggufString(f, "red\u001b[31m clipboard\u001b]52;c;aGk=\u0007 c1\u009b2J txt\u202Egpj.exe");
        ggufString(f, "w\u001b[2J");
        f.write(le(4, 1));
        f.write(le(8, 32));
        f.write(le(4, 8)); // Q8_0
        f.write(le(8, 0));
        while (f.size() % 32 != 0) {
            f.write(0);
        }
        f.write(new byte[34]);
        Path gguf = Files.write(dir.resolve("escapes.gguf"), f.toByteArray());

        CliTest.Result r = CliTest.run("inspect", gguf.toString());
        r.assertOk();
        assertFalse(r.out().chars().anyMatch(c -> c == 0x1b || c == 0x07 || c == 0x9b || c == 0x202E), r.out());
        assertTrue(r.out().contains("key\\x1b]0;retitled\\x07 = red\\x1b[31m clipboard\\x1b]52;c;aGk=\\x07 c1\\x9b2J"
                + " txt<U+202E>gpj.exe"), r.out());
        assertTrue(r.out().contains("w\\x1b[2J  int8"), r.out());

        r = CliTest.run("convert", gguf.toString(), dir.resolve("x.safetensors").toString());
        r.assertError(ExitCode.BAD_INPUT, "tensor 'w\\x1b[2J' is quantized");
        assertFalse(r.err().chars().anyMatch(c -> c == 0x1b), r.err());
    }

    @Test
    void jsonBeyondTheParserLimitsIsBadInput() throws IOException {
        String[] headers = {
            "{\"a\":" + "[".repeat(1500) + "]".repeat(1500) + "}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[1" + "0".repeat(1500) + "],\"data_offsets\":[0,4]}}",
            "{\"" + "k".repeat(60_000) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        };
        for (String h : headers) {
            Path st = dir.resolve("x.safetensors");
            Files.write(st, SafetensorsTestAccess.file(h, new byte[4]));
            CliTest.Result r = CliTest.run("inspect", st.toString());
            r.assertError(ExitCode.BAD_INPUT, "invalid JSON");
            assertEquals(1, r.err().strip().lines().count(), r.err());
        }
    }

    /**
     * Composites whose head lies about its member count pass the flat view; verify checks the
     * assembled view too (fixtures written by a hostile-input pass: a head declaring 1 member
     * followed by 2, and a head declaring 1,024 members followed by the end marker).
     */
    @Test
    void compositesWithLyingMemberCountsFailVerification() throws IOException {
        for (String name : new String[] {"composite_member_count_too_small.hrrys", "composite_member_count_too_large.hrrys"}) {
            Path f = dir.resolve(name);
            try (var in = HostileInputCliTest.class.getResourceAsStream("/hostile/" + name)) {
                Files.copy(in, f);
            }
            CliTest.Result r = CliTest.run("verify", f.toString());
            r.assertError(ExitCode.VERIFY_FAILED, "composite");
        }
        Path ok = Path.of(System.getProperty("hurray.golden.dir", "../src/golden"), "stream_v2_sparse_composite.hrry");
        if (Files.exists(ok)) {
            assertEquals(0, CliTest.run("verify", ok.toString()).code());
        }
    }

    private static void ggufString(ByteArrayOutputStream f, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        f.write(le(8, b.length));
        f.write(b);
    }

    /**
     * A heap exhausted by tensor headers (20,000 tensors with 3,000-byte names, converted to
     * safetensors, which keeps every header until it writes the file) in a 24 MiB JVM: exit 3
     * ("out of memory", the -Xmx hint), one line, no Java stack (hurray-java-cli/README.md §Exit codes).
     */
    @Test
    void aHeapExhaustedByTensorHeadersExitsThreeWithOneLine() throws Exception {
        Path in = dir.resolve("many.hrrys");
        String prefix = "n".repeat(3000);
        try (java.io.OutputStream os = Files.newOutputStream(in); dev.hurray.Writer w = dev.hurray.Writer.of(os)) {
            dev.hurray.TensorDescriptor base = dev.hurray.TensorDescriptor.of(dev.hurray.ElementType.FLOAT32, 1);
            java.lang.foreign.MemorySegment payload = java.lang.foreign.MemorySegment.ofArray(new byte[4]);
            for (int i = 0; i < 20_000; i++) {
                w.write(base.withName(prefix + i), payload);
            }
            w.finish();
        }
        dev.hurray.ffm.testing.ChildJvm.Result r = dev.hurray.ffm.testing.ChildJvm.run(java.util.List.of("-Xmx24m"),
                Main.class.getName(), "convert", in.toString(), dir.resolve("many.safetensors").toString());
        String out = r.out();
        assertEquals(ExitCode.IO_ERROR, r.exit(), out);
        assertTrue(out.contains("hurray: error: out of memory") && out.contains("HURRAY_JAVA_OPTS=-Xmx"), out);
        assertFalse(out.contains("\tat ") || out.contains("Exception in thread"), out);
        assertFalse(Files.exists(dir.resolve("many.safetensors")), "no partial output");
    }
}
