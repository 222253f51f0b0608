package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import static dev.hurray.formats.TestSupport.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Hand-built npy files: header syntax, versions and hostile input. */
class NpyTest {
    @TempDir
    Path tmp;

    /** An npy file built by hand (version 1.0 unless {@code major} says otherwise). */
    static byte[] npy(int major, String header, byte[] data) {
        byte[] h = header.getBytes(major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', (byte) major, 0});
        out.write(h.length & 0xFF);
        out.write((h.length >>> 8) & 0xFF);
        if (major > 1) {
            out.write((h.length >>> 16) & 0xFF);
            out.write((h.length >>> 24) & 0xFF);
        }
        out.writeBytes(h);
        out.writeBytes(data);
        return out.toByteArray();
    }

    private Path write(byte[] content) throws IOException {
        Path p = tmp.resolve("t.npy");
        Files.write(p, content);
        return p;
    }

    @Test
    void acceptsHeaderVariantsNumpyAccepts() throws IOException {
        byte[] data = {1, 2, 3, 4, 5, 6, 7, 8};
        // Double quotes, no trailing comma, Python 2 long suffix, odd spacing, no padding.
        String[] headers = {
            "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}\n",
            "{'shape': (2L,), 'fortran_order': False, 'descr': '<i4'}",
            "{ 'descr' : '<i4' ,'fortran_order':False,'shape':( 2 , ) , }      \n",
        };
        for (String h : headers) {
            try (ForeignModel m = Npy.read(write(npy(1, h, data)), "x")) {
                ForeignTensor t = m.tensors().get(0);
                assertEquals(ElementType.INT32, t.dtype(), h);
                assertArrayEquals(new long[] {2}, t.shape(), h);
                assertArrayEquals(data, bytes(t.data()), h);
            }
        }
        try (ForeignModel m = Npy.read(write(npy(3, "{'descr': '<u2', 'fortran_order': True, 'shape': (2, 2), }\n",
                data)), "x")) {
            assertEquals(Layout.Kind.COLUMN_MAJOR, m.tensors().get(0).layout());
        }
    }

    @Test
    void bigEndianIsSwappedPerElementNotPerValue() throws IOException {
        // NaN with a payload and a signalling NaN: a float conversion would change these bits.
        byte[] be = {0x7F, (byte) 0x80, 0x00, 0x01, (byte) 0xFF, (byte) 0xC1, 0x23, 0x45};
        try (ForeignModel m = Npy.read(write(npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", be)), "x")) {
            assertArrayEquals(new byte[] {0x01, 0x00, (byte) 0x80, 0x7F, 0x45, 0x23, (byte) 0xC1, (byte) 0xFF},
                    bytes(m.tensors().get(0).data()));
            assertEquals(0, m.tensors().get(0).data().address() % Payloads.ALIGNMENT, "swapped copy is aligned");
        }
        byte[] c8 = {1, 2, 3, 4, 5, 6, 7, 8};
        try (ForeignModel m = Npy.read(write(npy(1, "{'descr': '>c8', 'fortran_order': False, 'shape': (), }", c8)), "x")) {
            assertArrayEquals(new byte[] {4, 3, 2, 1, 8, 7, 6, 5}, bytes(m.tensors().get(0).data()), "per component");
        }
        try (ForeignModel m = Npy.read(write(npy(1, "{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }",
                new byte[] {9, 8})), "x")) {
            assertArrayEquals(new byte[] {9, 8}, bytes(m.tensors().get(0).data()), "one byte: nothing to swap");
        }
    }

    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '#', quoteCharacter = '`', value = {
        "{'descr': '|O', 'fortran_order': False, 'shape': (1,), } # 8 # '|O' (object array",
        "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), } # 4 # structured npy dtype [('a', '<i4')]",
        "{'descr': '<f16', 'fortran_order': False, 'shape': (1,), } # 16 # '<f16' has no Hurray element type",
        "{'descr': '=f4', 'fortran_order': False, 'shape': (1,), } # 4 # no explicit byte order",
        "{'descr': '|f4', 'fortran_order': False, 'shape': (1,), } # 4 # has no byte order",
        "{'descr': '<V8', 'fortran_order': False, 'shape': (1,), } # 8 # void/structured",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1, } # 4 # expected exactly",
        "{'descr': '<f4', 'fortran_order': False, } # 4 # expected exactly",
        "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), } # 4 # not True or False",
        "{'descr': '<f4', 'fortran_order': False, 'shape': [1], } # 4 # not a tuple",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), } # 4 # not a non-negative integer",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1.0,), } # 4 # only decimal integers",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'descr': '<f4'} # 4 # duplicate key",
        "{'descr': '<f4', 'fortran_order': False, 'shape': __import__('os'), } # 4 # unexpected character",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } junk # 4 # unexpected text",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), } # 4 # overflows",
        "['descr', '<f4'] # 4 # not a dict",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } # 4 # needs 8 data bytes, the file has 4 (truncated)",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } # 5 # (trailing bytes)",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } # 0 # (truncated)",
    })
    void hostileHeaders(String header, int dataBytes, String expect) throws IOException {
        assertRejects(npy(1, header.strip(), new byte[dataBytes]), expect);
    }

    @Test
    void hostilePrefixes() throws IOException {
        assertRejects("not numpy at all".getBytes(StandardCharsets.US_ASCII), "not an npy file");
        assertRejects(new byte[] {(byte) 0x93, 'N', 'U'}, "not an npy file");
        assertRejects(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1}, "truncated npy header");
        assertRejects(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 4, 0, 0, 0}, "version 4.0");
        assertRejects(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 100, 0, '{'}, "truncated npy header");
        // A version-2 header length of 4 GiB - 1 on a tiny file: refused before allocating.
        assertRejects(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, -1, -1, -1, -1}, "exceeds the limit");
    }

    private void assertRejects(byte[] content, String expect) throws IOException {
        Path p = write(content);
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Npy.read(p, "x"));
        assertTrue(e.getMessage().contains(expect), "expected '" + expect + "' in: " + e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line");
    }

    @Test
    void writerRefusesTypesNpyLacksAndLeavesNoFile() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            for (ElementType t : List.of(ElementType.BFLOAT16, ElementType.FLOAT8_E4M3FN, ElementType.FLOAT8_E5M2, ElementType.INT4, ElementType.UINT4)) {
                ForeignTensor x = Models.random(arena, new Random(1), "x", t, Layout.Kind.ROW_MAJOR, 4);
                Path out = tmp.resolve("o.npy");
                ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Npy.write(x, out, null));
                assertTrue(e.getMessage().contains(t.formatName()), e.getMessage());
                assertFalse(Files.exists(out));
            }
            assertEquals(0, Files.list(tmp).count());
        }
    }

    @Test
    void writesVersionTwoWhenTheHeaderNeedsIt() throws IOException {
        // 30000 dims of 1 make a header over 64 KiB: the writer switches to version 2.0.
        long[] shape = new long[30000];
        Arrays.fill(shape, 1);
        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor t = Models.random(arena, new Random(3), "x", ElementType.FLOAT32, Layout.Kind.ROW_MAJOR, shape);
            byte[] h = Npy.header(t);
            assertEquals(2, h[6]);
            assertEquals(0, h.length % 64);
            assertEquals('\n', h[h.length - 1]);
        }
    }

    @Test
    void npzHostileArchives() throws IOException {
        Path notZip = tmp.resolve("a.npz");
        Files.writeString(notZip, "PK but not really a zip archive");
        assertNpzRejects(notZip, "not an npz (zip) file");

        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor t = Models.random(arena, new Random(5), "w", ElementType.FLOAT32, Layout.Kind.ROW_MAJOR, 64);
            Path good = tmp.resolve("g.npz");
            Npz.write(Models.model(List.of(t), Map.of()), good, false, null);
            byte[] zip = Files.readAllBytes(good);

            // Flip one payload byte of the stored entry: the CRC check catches it.
            byte[] corrupt = zip.clone();
            int at = indexOf(corrupt, "w.npy".getBytes(StandardCharsets.US_ASCII)) + 200;
            corrupt[at] ^= 0x55;
            Path c = tmp.resolve("c.npz");
            Files.write(c, corrupt);
            assertNpzRejects(c, "CRC mismatch");

            // The central directory lies: the entry's local header lies past the end of the
            // archive (java.util.zip throws a bare EOFException), or its compressed size is too
            // short for the deflate stream (EOFException "Unexpected end of ZLIB input stream").
            byte[] far = zip.clone();
            int cenAt = indexOf(far, new byte[] {'P', 'K', 1, 2});
            java.nio.ByteBuffer.wrap(far).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(cenAt + 42, 0x7FFFFFF0);
            Path f = tmp.resolve("far.npz");
            Files.write(f, far);
            assertNpzRejects(f, "truncated or corrupt zip entry");

            Path deflated = tmp.resolve("d.npz");
            Npz.write(Models.model(List.of(t), Map.of()), deflated, true, null);
            byte[] dz = Files.readAllBytes(deflated);
            int dcen = indexOf(dz, new byte[] {'P', 'K', 1, 2});
            java.nio.ByteBuffer.wrap(dz).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(dcen + 20, 3);
            Path shortC = tmp.resolve("short.npz");
            Files.write(shortC, dz);
            assertNpzRejects(shortC, "truncated or corrupt zip entry");

            Path cut = tmp.resolve("cut.npz");
            Files.write(cut, Arrays.copyOf(zip, zip.length / 2));
            assertThrows(ForeignFormatException.class, () -> Npz.read(cut, null));
        }

        Path other = tmp.resolve("o.npz");
        try (var z = new java.util.zip.ZipOutputStream(Files.newOutputStream(other))) {
            z.putNextEntry(new java.util.zip.ZipEntry("readme.txt"));
            z.write("hello".getBytes(StandardCharsets.US_ASCII));
        }
        assertNpzRejects(other, "must be NAME.npy");

        // An entry whose npy header claims 1 TiB but whose zip entry holds a few bytes.
        Path lie = tmp.resolve("l.npz");
        try (var z = new java.util.zip.ZipOutputStream(Files.newOutputStream(lie))) {
            z.putNextEntry(new java.util.zip.ZipEntry("x.npy"));
            z.write(npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1099511627776,), }", new byte[0]));
        }
        assertNpzRejects(lie, "its npy header says 1099511627");

        // A deflated entry whose central directory and npy header agree on ~3.75 GiB, from a
        // few compressed bytes: refused by the deflate ratio bound before any allocation.
        long claimed = 0xF0000000L;
        String header = "{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }";
        int headerBytes = npy(1, String.format(header, claimed), new byte[0]).length;
        byte[] entry = npy(1, String.format(header, claimed - headerBytes), new byte[0]);
        assertEquals(headerBytes, entry.length);
        Path bomb = tmp.resolve("b.npz");
        try (var z = new java.util.zip.ZipOutputStream(Files.newOutputStream(bomb))) {
            z.putNextEntry(new java.util.zip.ZipEntry("x.npy"));
            z.write(entry);
        }
        byte[] b = Files.readAllBytes(bomb);
        int cen = indexOf(b, new byte[] {'P', 'K', 1, 2});
        java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(cen + 24, (int) claimed);
        Files.write(bomb, b);
        assertNpzRejects(bomb, "more than deflate can produce");
        // The scipy.sparse reader reads npz members too and applies the same checks before
        // allocating, rather than allocating what the header declares.
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> ScipySparse.read(bomb));
        assertTrue(e.getMessage().contains("more than deflate can produce"), e.getMessage());
    }

    /** Opening {@code p}, or reading its payloads (a member's CRC is checked when it is read), fails with {@code expect}. */
    private static void assertNpzRejects(Path p, String expect) {
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> {
            try (ForeignModel m = Npz.read(p, null)) {
                for (ForeignTensor t : m.tensors()) {
                    t.load();
                }
            }
        });
        assertTrue(e.getMessage().contains(expect), "expected '" + expect + "' in: " + e.getMessage());
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        throw new AssertionError("not found");
    }
}
