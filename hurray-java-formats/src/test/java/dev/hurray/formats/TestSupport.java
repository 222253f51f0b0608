package dev.hurray.formats;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/** Shared helpers for the format tests. */
public final class TestSupport {
    private TestSupport() {
    }

    /**
     * A test resource folder on disk: the first of the folders in system property
     * {@code hurray.testdata.dirs} (path-separator list, set by the POMs) that holds NAME,
     * else src/test/resources/NAME as copied to test-classes.
     */
    public static Path resourceDir(String name) {
        for (String d : System.getProperty("hurray.testdata.dirs", "").split(java.io.File.pathSeparator)) {
            if (!d.isEmpty() && java.nio.file.Files.isDirectory(Path.of(d, name))) {
                return Path.of(d, name);
            }
        }
        try {
            return Path.of(TestSupport.class.getResource("/" + name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The bundled face-api models (main resources). */
    public static Path faceApiDir() {
        return resourceDir("models/face-api");
    }

    public static byte[] bytes(MemorySegment seg) {
        return seg.toArray(ValueLayout.JAVA_BYTE);
    }

    public static String hex(MemorySegment seg) {
        return HexFormat.of().formatHex(bytes(seg));
    }

    public static byte[] unhex(String s) {
        return HexFormat.of().parseHex(s);
    }

    /** Parses a JSON file into plain Java values (maps, lists, strings, numbers). */
    public static Object json(Path file) throws IOException {
        byte[] b = Files.readAllBytes(file);
        return Json.parse(b, 0, b.length, file.toString());
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    public static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    public static long[] longs(Object jsonList) {
        List<Object> l = list(jsonList);
        long[] r = new long[l.size()];
        for (int i = 0; i < r.length; i++) {
            r[i] = ((Number) l.get(i)).longValue();
        }
        return r;
    }
}
