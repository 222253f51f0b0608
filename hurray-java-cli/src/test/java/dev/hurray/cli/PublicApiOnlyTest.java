package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * The command is an application of the public API. Checked on what the compiler produced, not
 * on the source text: every class of the command is parsed, and every type it names anywhere
 * in its constant pool (references, signatures, string constants used for reflection) that
 * lies in a Hurray package must lie in a package the Hurray modules export to everyone, as
 * their compiled module descriptors say. Imports, fully qualified names, static imports and
 * reflection by name are all caught alike.
 */
class PublicApiOnlyTest {
    /** A Hurray type in internal form ({@code dev/hurray/x/Y}) or as a binary name ({@code dev.hurray.x.Y}). */
    private static final Pattern HURRAY_TYPE = Pattern.compile("dev[/.]hurray[/.]((?:[a-z_][a-z0-9_]*[/.])*)[A-Z]");

    @Test
    void theCommandsClassesNameOnlyPackagesTheLibrariesExportToEveryone() throws Exception {
        Set<String> exported = new TreeSet<>();
        for (Class<?> c : new Class<?>[] {dev.hurray.Tensor.class, dev.hurray.formats.Format.class}) {
            ModuleDescriptor d = descriptorOf(c);
            // A qualified export would let one module reach another's internals: none is allowed.
            for (ModuleDescriptor.Exports e : d.exports()) {
                assertTrue(!e.isQualified(), d.name() + " exports " + e.source() + " only to " + e.targets());
                exported.add(e.source());
            }
        }
        assertEquals(Set.of("dev.hurray", "dev.hurray.formats"), exported);
        // hurray-kafka has no module descriptor: it is one package, all of it public API.
        assertEquals(dev.hurray.kafka.HurrayTensorSerializer.class.getPackageName(), "dev.hurray.kafka");
        exported.add("dev.hurray.kafka");
        // hurray-arrow likewise: one package of public API, no module descriptor.
        assertEquals(dev.hurray.arrow.ArrowTensors.class.getPackageName(), "dev.hurray.arrow");
        exported.add("dev.hurray.arrow");

        Path classes = Path.of("target/classes");
        assertTrue(Files.isDirectory(classes), "run from the module folder after compiling (surefire does)");
        List<String> found = new ArrayList<>();
        int files = 0;
        try (Stream<Path> all = Files.walk(classes)) {
            for (Path p : (Iterable<Path>) all.filter(f -> f.toString().endsWith(".class"))::iterator) {
                files++;
                for (String s : utf8Constants(Files.newInputStream(p))) {
                    Matcher m = HURRAY_TYPE.matcher(s);
                    while (m.find()) {
                        String pkg = ("dev.hurray." + m.group(1).replace('/', '.')).replaceAll("\\.$", "");
                        if (!pkg.startsWith("dev.hurray.cli") && !exported.contains(pkg)) {
                            found.add(classes.relativize(p) + " names " + pkg + " (in \"" + s + "\")");
                        }
                    }
                }
            }
        }
        assertTrue(files > 20, "found only " + files + " class files");
        assertEquals(List.of(), found);
    }

    /** The compiled module descriptor of the module (a directory or a jar) that holds {@code c}. */
    private static ModuleDescriptor descriptorOf(Class<?> c) throws IOException, URISyntaxException {
        Path where = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
        if (Files.isDirectory(where)) {
            try (InputStream in = Files.newInputStream(where.resolve("module-info.class"))) {
                return ModuleDescriptor.read(in);
            }
        }
        try (ZipFile z = new ZipFile(where.toFile()); InputStream in = z.getInputStream(z.getEntry("module-info.class"))) {
            return ModuleDescriptor.read(in);
        }
    }

    /** Every CONSTANT_Utf8 of a class file (JVMS §4.4): class names, descriptors, signatures, strings. */
    static List<String> utf8Constants(InputStream raw) throws IOException {
        List<String> out = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(raw))) {
            if (in.readInt() != 0xCAFEBABE) {
                throw new IOException("not a class file");
            }
            in.readUnsignedShort();
            in.readUnsignedShort();
            int count = in.readUnsignedShort();
            for (int i = 1; i < count; i++) {
                int tag = in.readUnsignedByte();
                switch (tag) {
                    case 1 -> out.add(in.readUTF());
                    case 7, 8, 16, 19, 20 -> in.skipNBytes(2);
                    case 15 -> in.skipNBytes(3);
                    case 3, 4, 9, 10, 11, 12, 17, 18 -> in.skipNBytes(4);
                    case 5, 6 -> {
                        in.skipNBytes(8);
                        i++; // a long or double takes two slots
                    }
                    default -> throw new IOException("unknown constant pool tag " + tag);
                }
            }
        }
        return out;
    }
}
