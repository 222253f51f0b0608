package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import static dev.hurray.formats.TestSupport.bytes;
import static dev.hurray.formats.TestSupport.longs;
import static dev.hurray.formats.TestSupport.map;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SafetensorsTest {
    @TempDir
    Path tmp;

    /** A safetensors file built by hand: length, header (padded to 8 with spaces), data. */
    static byte[] file(String header, byte[] data) {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).array());
        out.writeBytes(h);
        out.writeBytes(data);
        return out.toByteArray();
    }

    private Path write(String name, byte[] content) throws IOException {
        Path p = tmp.resolve(name);
        Files.write(p, content);
        return p;
    }

    @Test
    void readsAHandBuiltFileExactly() throws IOException {
        byte[] data = new byte[16 + 24 + 1];
        new Random(1).nextBytes(data);
        String header = "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"x\"},"
                + "\"b\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[16,40]},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                + "\"flag\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[40,41]},"
                + "\"none\":{\"dtype\":\"F16\",\"shape\":[0,7],\"data_offsets\":[41,41]}}  ";
        Path p = write("h.safetensors", file(header, data));
        try (ForeignModel m = Safetensors.read(p)) {
            assertEquals(Map.of("format", "pt", "note", "x"), m.metadata());
            List<String> names = m.tensors().stream().map(ForeignTensor::name).toList();
            assertEquals(List.of("a", "b", "flag", "none"), names, "data-offset order");
            long base = 8 + header.getBytes(StandardCharsets.UTF_8).length;
            ForeignTensor a = m.tensor("a");
            assertEquals(ElementType.FLOAT32, a.dtype());
            assertArrayEquals(new long[] {2, 2}, a.shape());
            assertArrayEquals(Arrays.copyOfRange(data, 0, 16), bytes(a.data()));
            assertEquals(base, a.sourceOffset());
            ForeignTensor b = m.tensor("b");
            assertEquals(ElementType.INT64, b.dtype());
            assertArrayEquals(Arrays.copyOfRange(data, 16, 40), bytes(b.data()));
            assertEquals(base + 16, b.sourceOffset());
            assertEquals(0, m.tensor("flag").rank());
            assertEquals(0, m.tensor("none").byteSize());
        }
    }

    @Test
    void roundTripsEveryDtypeWithColumnMajorReordered() throws IOException {
        Random rnd = new Random(7);
        List<ForeignTensor> ts = new ArrayList<>();
        List<ElementType> types = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            for (ElementType t : ElementType.values()) {
                if (Safetensors.dtypeName(t) == null) {
                    continue;
                }
                types.add(t);
                ts.add(Models.random(arena, rnd, "t_" + t, t, Layout.Kind.ROW_MAJOR, 3, 5));
            }
            ts.add(Models.random(arena, rnd, "scalar", ElementType.FLOAT64, Layout.Kind.ROW_MAJOR));
            ts.add(Models.random(arena, rnd, "empty", ElementType.INT16, Layout.Kind.ROW_MAJOR, 4, 0));
            ForeignTensor col = Models.random(arena, rnd, "col", ElementType.FLOAT32, Layout.Kind.COLUMN_MAJOR, 2, 3, 4);
            ts.add(col);
            Map<String, String> meta = new LinkedHashMap<>();
            meta.put("format", "pt");
            meta.put("unicode", "\u00e9\u4e2d");
            Path out = tmp.resolve("rt.safetensors");
            Safetensors.write(Models.model(ts, meta), out, null);
            assertEquals(16, types.size(), "every safetensors dtype with a Hurray type");

            // The test's own look at the file: header length, alignment, offsets.
            byte[] all = Files.readAllBytes(out);
            long hlen = ByteBuffer.wrap(all, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
            assertEquals(0, (8 + hlen) % 8, "data starts 8-aligned");
            Map<String, Object> header = map(Json.parse(all, 8, (int) hlen, "t"));
            assertEquals(meta, header.get("__metadata__"));
            for (ForeignTensor t : ts) {
                Map<String, Object> e = map(header.get(t.name()));
                long[] off = longs(e.get("data_offsets"));
                assertEquals(0, off[0] % Payloads.byteWidth(t.dtype()), t.name() + " offset aligned to its width");
                byte[] stored = Arrays.copyOfRange(all, (int) (8 + hlen + off[0]), (int) (8 + hlen + off[1]));
                byte[] expect = t.layout() == Layout.Kind.COLUMN_MAJOR
                        ? Models.rowMajorOf(bytes(t.data()), t.shape(), Payloads.byteWidth(t.dtype()))
                        : bytes(t.data());
                assertArrayEquals(expect, stored, t.name());
                assertArrayEquals(t.shape(), longs(e.get("shape")));
                assertEquals(Safetensors.dtypeName(t.dtype()), e.get("dtype"));
            }
            try (ForeignModel back = Safetensors.read(out)) {
                assertEquals(meta, back.metadata());
                assertEquals(ts.size(), back.tensors().size());
                for (ForeignTensor t : ts) {
                    ForeignTensor b = back.tensor(t.name());
                    assertEquals(t.dtype(), b.dtype());
                    assertArrayEquals(t.shape(), b.shape());
                    assertEquals(Layout.Kind.ROW_MAJOR, b.layout());
                    byte[] expect = t.layout() == Layout.Kind.COLUMN_MAJOR
                            ? Models.rowMajorOf(bytes(t.data()), t.shape(), 4)
                            : bytes(t.data());
                    assertArrayEquals(expect, bytes(b.data()), t.name());
                }
            }
            assertEquals(List.of(out), Files.list(tmp).toList(), "no temporary file left behind");
        }
    }

    @Test
    void refusesWhatItCannotRecord() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            ForeignTensor c128 = Models.random(arena, new Random(1), "c", ElementType.COMPLEX128, Layout.Kind.ROW_MAJOR, 2);
            Path out = tmp.resolve("x.safetensors");
            ForeignFormatException e = assertThrows(ForeignFormatException.class,
                    () -> Safetensors.write(Models.model(List.of(c128), Map.of()), out, null));
            assertTrue(e.getMessage().contains("complex128"), e.getMessage());
            ForeignTensor raw = Models.random(arena, new Random(1), "q", ElementType.UINT8, Layout.Kind.ROW_MAJOR, 4);
            ForeignTensor q = new ForeignTensor("q", ElementType.UINT8, new long[] {4}, Layout.Kind.ROW_MAJOR, raw.data(),
                    new Quantization.PerTensorAffine(0.5, -1, ElementType.FLOAT32), -1);
            e = assertThrows(ForeignFormatException.class,
                    () -> Safetensors.write(Models.model(List.of(q), Map.of()), out, null));
            assertTrue(e.getMessage().contains("quantiz"), e.getMessage());
            assertFalse(Files.exists(out));
            assertEquals(0, Files.list(tmp).count(), "nothing written");
        }
    }

    @Test
    void missingFileIsNoSuchFile() {
        assertThrows(NoSuchFileException.class, () -> Safetensors.read(tmp.resolve("absent.safetensors")));
    }

    @Test
    void hostileHeaderLengths() throws IOException {
        assertRejects(new byte[5], "shorter than the 8-byte header length");
        byte[] huge = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 1L << 60).array();
        assertRejects(huge, "exceeds the limit");
        byte[] neg = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, -1L).array();
        assertRejects(neg, "exceeds the limit");
        byte[] lies = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 1000).array();
        assertRejects(lies, "exceeds the 8 bytes after it");
        assertRejects(file("[1,2]   ", new byte[0]), "does not start with '{'");
    }

    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}               | 4 | invalid JSON",
        "{\"a\":1}                                                                 | 0 | not an object",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{}}     | 4 | invalid JSON",
        "{\"a\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}               | 1 | F4 has no Hurray element type",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}             | 4 | out of range",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}            | 4 | not an integer",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}              | 4 | run past the 4 data bytes",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}              | 4 | needs 8 bytes",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}              | 4 | end before they begin",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551615]}} | 4 | out of range",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}} | 4 | overlap",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}               | 4 | gap of 2 bytes",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}               | 4 | trailing bytes",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4],\"x\":1}}       | 4 | unknown field 'x'",
        "{\"a\":{\"shape\":[4],\"data_offsets\":[0,4]}}                                | 4 | dtype is missing",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4]}}                                      | 4 | data_offsets is missing",
        "{\"__metadata__\":{\"k\":1}}                                                  | 0 | not a string",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,4]}} | 4 | overflows",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}} trailing      | 4 | invalid JSON",
    })
    void hostileHeaders(String header, int dataBytes, String expect) throws IOException {
        assertRejects(file(header.strip(), new byte[dataBytes]), expect);
    }

    @Test
    void truncatedFileIsRejected() throws IOException {
        byte[] good = file("{\"a\":{\"dtype\":\"F64\",\"shape\":[4],\"data_offsets\":[0,32]}}", new byte[32]);
        for (int cut : new int[] {good.length - 1, good.length - 32, 20, 9}) {
            Path p = write("cut" + cut + ".safetensors", Arrays.copyOf(good, cut));
            assertThrows(ForeignFormatException.class, () -> Safetensors.read(p), "cut at " + cut);
        }
    }

    private void assertRejects(byte[] content, String expect) throws IOException {
        Path p = write("bad.safetensors", content);
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Safetensors.read(p));
        assertTrue(e.getMessage().contains(expect), "expected '" + expect + "' in: " + e.getMessage());
        assertTrue(e.getMessage().startsWith(p.toString()), "names the file: " + e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line");
    }

    @Test
    void mappedPayloadIsUnusableAfterClose() throws IOException {
        Path p = write("c.safetensors", file("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", new byte[4]));
        ForeignModel m = Safetensors.read(p);
        ForeignTensor t = m.tensors().get(0);
        m.close();
        m.close();
        assertThrows(IllegalStateException.class, () -> bytes(t.data()));
        assertNull(m.tensor("absent"));
    }
}
