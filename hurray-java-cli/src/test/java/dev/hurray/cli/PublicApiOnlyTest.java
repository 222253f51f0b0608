package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The command is an application of the public API: no source file of it names an internal
 * package of the libraries ({@code dev.hurray.internal}, the generated bindings
 * {@code dev.hurray.ffm}), in an import or a fully qualified name.
 */
class PublicApiOnlyTest {
    private static final Pattern INTERNAL = Pattern.compile("\\bdev\\.hurray\\.(internal|ffm|formats\\.internal)\\b");

    @Test
    void noSourceFileNamesAnInternalPackage() throws IOException {
        Path src = Path.of("src/main/java");
        assertTrue(Files.isDirectory(src), "run from the module folder (surefire does)");
        List<String> found = new ArrayList<>();
        int files = 0;
        try (Stream<Path> all = Files.walk(src)) {
            for (Path p : (Iterable<Path>) all.filter(f -> f.toString().endsWith(".java"))::iterator) {
                files++;
                List<String> lines = Files.readAllLines(p);
                for (int i = 0; i < lines.size(); i++) {
                    Matcher m = INTERNAL.matcher(lines.get(i));
                    if (m.find()) {
                        found.add(src.relativize(p) + ":" + (i + 1) + ": " + lines.get(i).trim());
                    }
                }
            }
        }
        assertTrue(files > 20, "found only " + files + " source files");
        assertEquals(List.of(), found);
    }
}
