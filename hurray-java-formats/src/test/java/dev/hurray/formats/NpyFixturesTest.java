package dev.hurray.formats;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;
import static dev.hurray.formats.TestSupport.hex;
import static dev.hurray.formats.TestSupport.list;
import static dev.hurray.formats.TestSupport.longs;
import static dev.hurray.formats.TestSupport.map;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every fixture NumPy wrote (tools/npy-fixtures/make_fixtures.py) against the manifest NumPy
 * wrote with it, and against an independent decode of the file's raw bytes done here.
 */
class NpyFixturesTest {
    private static final Path DIR = TestSupport.resourceDir("npy");

    @TempDir
    Path tmp;

    private static List<Map<String, Object>> entries(String kind) throws IOException {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Object o : list(map(TestSupport.json(DIR.resolve("manifest.json"))).get("entries"))) {
            if (map(o).get("kind").equals(kind)) {
                out.add(map(o));
            }
        }
        return out;
    }

    /**
     * The test's own decode: the file's bytes from NumPy's data offset, byte-reversed per
     * element (per component for complex) when the descr says big-endian.
     */
    static byte[] independentDecode(Path file, long dataOffset, String descr) throws IOException {
        byte[] all = Files.readAllBytes(file);
        byte[] data = java.util.Arrays.copyOfRange(all, (int) dataOffset, all.length);
        if (descr.charAt(0) == '>') {
            int width = Integer.parseInt(descr.substring(2));
            if (descr.charAt(1) == 'c') {
                width /= 2;
            }
            for (int i = 0; i + width <= data.length; i += width) {
                for (int a = i, b = i + width - 1; a < b; a++, b--) {
                    byte t = data[a];
                    data[a] = data[b];
                    data[b] = t;
                }
            }
        }
        return data;
    }

    @TestFactory
    Stream<DynamicTest> arraysMatchNumpy() throws IOException {
        List<Map<String, Object>> es = entries("array");
        assertTrue(es.size() > 100, "manifest lists the fixtures");
        return es.stream().map(e -> DynamicTest.dynamicTest((String) e.get("file"), () -> checkArray(e)));
    }

    private void checkArray(Map<String, Object> e) throws IOException {
        Path file = DIR.resolve((String) e.get("file"));
        String descr = (String) e.get("source_descr");
        try (ForeignModel m = Npy.read(file, "x")) {
            ForeignTensor t = m.tensors().get(0);
            assertEquals(e.get("dtype"), t.dtype().formatName());
            assertArrayEquals(longs(e.get("shape")), t.shape());
            assertEquals(e.get("layout"), t.layout().formatName());
            assertEquals(e.get("storage_hex"), hex(t.data()), "bytes as NumPy sees them");
            byte[] own = independentDecode(file, ((Number) e.get("data_offset")).longValue(), descr);
            assertArrayEquals(own, TestSupport.bytes(t.data()), "bytes as this test decodes them");
            try (Arena a = Arena.ofConfined()) {
                assertEquals(e.get("c_order_hex"), hex(Payloads.toRowMajor(t, a).data()), "row-major reorder");
            }
            // Writing back: little-endian version-1.0 sources come out byte-identical to
            // NumPy's file (the writer picks 1.0 whenever the header fits, as np.save does).
            Path out = tmp.resolve("w.npy");
            Npy.write(t, out, null);
            byte[] original = Files.readAllBytes(file);
            if (descr.charAt(0) != '>' && original[6] == 1) {
                assertEquals(HexFormat.of().formatHex(original),
                        HexFormat.of().formatHex(Files.readAllBytes(out)), "writer reproduces np.save");
            }
            try (ForeignModel back = Npy.read(out, "x")) {
                ForeignTensor b = back.tensors().get(0);
                assertEquals(hex(t.data()), hex(b.data()));
                assertEquals(t.layout(), b.layout());
                assertArrayEquals(t.shape(), b.shape());
            }
        }
    }

    @TestFactory
    Stream<DynamicTest> rejectedDtypesAreNamed() throws IOException {
        List<Map<String, Object>> es = entries("reject");
        assertEquals(5, es.size());
        return es.stream().map(e -> DynamicTest.dynamicTest((String) e.get("file"), () -> {
            ForeignFormatException x = assertThrows(ForeignFormatException.class,
                    () -> Npy.read(DIR.resolve((String) e.get("file")), "x"));
            assertTrue(x.getMessage().contains((String) e.get("expect")), x.getMessage());
            assertTrue(x.getMessage().contains("not supported"), x.getMessage());
        }));
    }

    @TestFactory
    Stream<DynamicTest> npzMatchesNumpy() throws IOException {
        List<Map<String, Object>> es = entries("npz");
        assertEquals(2, es.size());
        return es.stream().map(e -> DynamicTest.dynamicTest((String) e.get("file"), () -> {
            Path file = DIR.resolve((String) e.get("file"));
            try (ForeignModel m = Npz.read(file, null)) {
                List<Object> members = list(e.get("members"));
                assertEquals(members.size(), m.tensors().size());
                for (int i = 0; i < members.size(); i++) {
                    Map<String, Object> x = map(members.get(i));
                    ForeignTensor t = m.tensors().get(i);
                    assertEquals(x.get("name"), t.name());
                    assertEquals(x.get("dtype"), t.dtype().formatName());
                    assertArrayEquals(longs(x.get("shape")), t.shape());
                    assertEquals(x.get("layout"), t.layout().formatName());
                    assertEquals(x.get("storage_hex"), hex(t.data()), t.name());
                    assertEquals(0, t.data().address() % Payloads.ALIGNMENT, "npz payloads are aligned");
                }
                for (boolean compress : new boolean[] {false, true}) {
                    Path out = tmp.resolve("rt" + compress + ".npz");
                    Npz.write(m, out, compress, null);
                    try (ForeignModel back = Npz.read(out, null)) {
                        assertEquals(m.tensors().size(), back.tensors().size());
                        for (int i = 0; i < members.size(); i++) {
                            ForeignTensor a = m.tensors().get(i);
                            ForeignTensor b = back.tensors().get(i);
                            assertEquals(a.name(), b.name());
                            assertEquals(a.dtype(), b.dtype());
                            assertEquals(a.layout(), b.layout());
                            assertArrayEquals(a.shape(), b.shape());
                            assertEquals(hex(a.data()), hex(b.data()));
                        }
                    }
                }
            }
        }));
    }
}
