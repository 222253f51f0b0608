package dev.hurray.formats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tiny application module, compiled and run on the module path with the Hurray modules, their
 * dependencies (slf4j-api, jackson-core) and an SLF4J provider, and exactly the one flag the
 * README documents: {@code --enable-native-access=dev.hurray.ffm,dev.hurray}. It must run, and
 * print nothing on stderr (no native-access or SLF4J warning).
 */
class ModulePathAppTest {
    @TempDir
    Path tmp;

    private static final String MODULE_INFO = """
            module app {
                requires dev.hurray.formats;
            }
            """;

    private static final String MAIN = """
            package app;

            import dev.hurray.BufferSpec;
            import dev.hurray.ElementType;
            import dev.hurray.HurrayFile;
            import dev.hurray.TensorDescriptor;
            import java.lang.foreign.MemorySegment;
            import dev.hurray.Tensor;
            import dev.hurray.formats.ForeignModel;
            import dev.hurray.formats.ForeignTensor;
            import dev.hurray.formats.Safetensors;
            import java.nio.file.Path;
            import java.util.Arrays;
            import java.util.List;
            import java.util.Map;

            public class Main {
                public static void main(String[] args) throws Exception {
                    Path dir = Path.of(args[0]);
                    TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).name("w")
                            .buffer(BufferSpec.cpu(24)).build();
                    try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(new float[] {1, 2, 3, 4, 5, 6}))) {
                        ForeignTensor f = ForeignTensor.of(t);
                        try (ForeignModel m = new ForeignModel(List.of(f), Map.of("k", "v"), null)) {
                            Safetensors.write(m, dir.resolve("m.safetensors"), null);
                        }
                    }
                    try (ForeignModel m = Safetensors.read(dir.resolve("m.safetensors"))) {
                        m.toHurrayFile(dir.resolve("m.hrry"));
                    }
                    try (HurrayFile file = HurrayFile.map(dir.resolve("m.hrry")); Tensor t = file.read("w")) {
                        System.out.println(t.descriptor() + " " + Arrays.toString(t.toFloatArray()));
                    }
                }
            }
            """;

    @Test
    void anApplicationModuleRunsWithTheDocumentedFlagAlone() throws Exception {
        List<String> modulePath = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String n = e.replace('\\', '/');
            if (n.contains("test-classes") || n.endsWith("-tests.jar")) {
                continue;
            }
            if (n.matches(".*/hurray-java-(ffm|core|formats)(/target/classes|[^/]*\\.jar)$")
                    || n.matches(".*/(slf4j-api|slf4j-nop|jackson-core)-[^/]*\\.jar$")) {
                modulePath.add(e);
            }
        }
        assertEquals(6, modulePath.size(), "module path entries found: " + modulePath);

        Path src = tmp.resolve("src/app");
        Files.createDirectories(src.resolve("app"));
        Files.writeString(src.resolve("module-info.java"), MODULE_INFO);
        Files.writeString(src.resolve("app/Main.java"), MAIN);
        Path out = tmp.resolve("out/app");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int rc = javac.run(null, null, null, "-d", out.toString(), "--module-path", String.join(File.pathSeparator, modulePath),
                src.resolve("module-info.java").toString(), src.resolve("app/Main.java").toString());
        assertEquals(0, rc, "javac failed");

        modulePath.add(out.toString());
        Path work = Files.createDirectories(tmp.resolve("work"));
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.hurray.ffm,dev.hurray",
                "-p", String.join(File.pathSeparator, modulePath),
                "-m", "app/app.Main", work.toString());
        pb.environment().remove("HURRAY_LIBRARY_PATH");
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        pb.environment().remove("JDK_JAVA_OPTIONS");
        pb.redirectOutput(tmp.resolve("stdout").toFile()).redirectError(tmp.resolve("stderr").toFile());
        Process p = pb.start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the application did not finish");
        String stdout = Files.readString(tmp.resolve("stdout"), StandardCharsets.UTF_8);
        String stderr = Files.readString(tmp.resolve("stderr"), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), "stdout: " + stdout + "\nstderr: " + stderr);
        assertEquals("", stderr);
        assertTrue(stdout.contains("[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]"), stdout);
    }

}
