package dev.hurray.ffm.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.NativeLibrary;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Test helpers for what only a fresh JVM shows (how the native library loads, or fails to):
 * a child JVM on the test class path, and a stand-in libhurray older than the bindings. Shared
 * with the tests of hurray-java-core, hurray-kafka and hurray-java-cli through this module's
 * test jar (never deployed).
 */
public final class ChildJvm {
    private ChildJvm() {
    }

    /** A child JVM's exit status and its standard output and error, interleaved. */
    public record Result(int exit, String out) {
    }

    /**
     * Builds, in {@code dir}, a shared library that says C ABI 4 ({@code hurray_c_abi_version})
     * and exports nothing else: a libhurray older than these bindings. Aborts the calling test
     * (skipped, not failed) where no C compiler ({@code cc}) is available.
     *
     * @return the library's path
     */
    public static Path olderLibraryStub(Path dir) throws IOException, InterruptedException {
        Path src = Files.writeString(dir.resolve("stub.c"), "int hurray_c_abi_version(void) { return 4; }\n");
        Path lib = dir.resolve("libstub.so");
        Process cc;
        try {
            cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-o", lib.toString(), src.toString())
                    .redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.abort("no C compiler: " + e.getMessage());
            return lib;
        }
        String out = new String(cc.getInputStream().readAllBytes());
        assertTrue(cc.waitFor(60, TimeUnit.SECONDS), "cc did not finish");
        Assumptions.assumeTrue(cc.exitValue() == 0, out);
        return lib;
    }

    /**
     * Runs {@code mainClass} with {@code args} in a child JVM on this JVM's test class path, with
     * {@code --enable-native-access=ALL-UNNAMED}, the given JVM options, and no
     * {@code HURRAY_LIBRARY_PATH} from the environment; waits at most 120 s.
     */
    public static Result run(List<String> jvmOptions, String mainClass, String... args)
            throws IOException, InterruptedException {
        return run(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")), jvmOptions,
                mainClass, args);
    }

    /**
     * Runs {@code mainClass} as {@link #run(List, String, String...)} does, with the library of
     * this JVM ({@code hurray.library.path}), and fails the calling test if the child crashed
     * (an {@code hs_err} file, which goes to {@code dir} instead of the working directory) or
     * exited with anything but 0.
     *
     * @return the child's output
     */
    public static String runWithoutCrash(Path dir, String mainClass, String... args)
            throws IOException, InterruptedException {
        Result r = run(List.of("-Dhurray.library.path=" + System.getProperty("hurray.library.path", ""),
                "-XX:ErrorFile=" + dir.resolve("hs_err_pid%p.log")), mainClass, args);
        try (var files = Files.list(dir)) {
            List<Path> crashes = files.filter(f -> f.getFileName().toString().startsWith("hs_err")).toList();
            assertTrue(crashes.isEmpty(), "the child JVM crashed (" + crashes + "): " + r.out());
        }
        assertTrue(r.exit() == 0, "the child JVM exited with " + r.exit() + ": " + r.out());
        return r.out();
    }

    /** As {@link #run(List, String, String...)}, on class path {@code cp}. */
    public static Result run(String cp, List<String> jvmOptions, String mainClass, String... args)
            throws IOException, InterruptedException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED"));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", cp, mainClass));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove(NativeLibrary.LIBRARY_PATH_ENV);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child JVM did not finish: " + out);
        return new Result(p.exitValue(), out);
    }
}
