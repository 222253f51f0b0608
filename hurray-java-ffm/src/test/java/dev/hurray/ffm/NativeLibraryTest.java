package dev.hurray.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLibraryTest {

    @Test
    void loadsAndReportsAbiVersion4() {
        NativeLibrary.load();
        assertEquals(4, NativeLibrary.abiVersion());
        assertEquals(4, hurray_h.HURRAY_C_ABI_VERSION());
        assertEquals(4, hurray_h.hurray_c_abi_version());
        assertTrue(NativeLibrary.source().contains("libhurray"), NativeLibrary.source());
    }

    @Test
    void concurrentFirstCallsSeeOneLibrary() throws Exception {
        List<Thread> threads = new ArrayList<>();
        List<Object> lookups = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < 8; i++) {
            threads.add(Thread.ofPlatform().start(() -> lookups.add(NativeLibrary.lookup())));
        }
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(8, lookups.size());
        assertTrue(lookups.stream().allMatch(l -> l == lookups.get(0)));
    }

    @Test
    void propertyOverridesEnvironmentAndJar(@TempDir Path dir) throws IOException {
        Path a = Files.createFile(dir.resolve("a.so"));
        Path b = Files.createFile(dir.resolve("b.so"));
        NativeLibrary.Source s = NativeLibrary.resolve(a.toString(), b.toString(), "Linux", "amd64");
        assertEquals(a, s.file());
        assertNull(s.resource());
        assertTrue(s.origin().startsWith("-Dhurray.library.path="), s.origin());

        s = NativeLibrary.resolve(null, b.toString(), "Linux", "amd64");
        assertEquals(b, s.file());
        assertTrue(s.origin().startsWith("HURRAY_LIBRARY_PATH="), s.origin());

        s = NativeLibrary.resolve("", " ", "Linux", "amd64");
        assertNull(s.file());
        assertEquals("META-INF/native/linux-x86_64/" + System.mapLibraryName("hurray"), s.resource());
    }

    @Test
    void missingOverrideFileIsAClearError(@TempDir Path dir) {
        String missing = dir.resolve("nope/libhurray.so").toString();
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class,
                () -> NativeLibrary.resolve(missing, null, "Linux", "amd64"));
        assertTrue(e.getMessage().contains("hurray.library.path=" + missing), e.getMessage());
        assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
    }

    @Test
    void unsupportedPlatformIsNamed() {
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class,
                () -> NativeLibrary.resolve(null, null, "SunOS", "sparcv9"));
        assertTrue(e.getMessage().contains("SunOS/sparcv9"), e.getMessage());
        assertTrue(e.getMessage().contains("hurray.library.path"), e.getMessage());
        assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.platform("Linux", "s390x"));
        assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.platform(null, null));
    }

    /** os.name/os.arch values the JDKs report, and the folder each maps to (native/build.sh's names). */
    @Test
    void platformsMapToOneFolderEach() {
        String[][] table = {
            {"Linux", "amd64", "linux-x86_64"}, {"Linux", "x86_64", "linux-x86_64"},
            {"Linux", "aarch64", "linux-aarch64"}, {"Linux", "riscv64", "linux-riscv64"},
            {"Linux", "ppc64le", "linux-ppc64le"},
            {"Mac OS X", "aarch64", "macos-aarch64"}, {"Mac OS X", "x86_64", "macos-x86_64"},
            {"Darwin", "arm64", "macos-aarch64"},
            {"Windows 11", "amd64", "windows-x86_64"}, {"Windows Server 2022", "aarch64", "windows-aarch64"},
            {"FreeBSD", "amd64", "freebsd-x86_64"},
        };
        for (String[] r : table) {
            assertEquals(r[2], NativeLibrary.platform(r[0], r[1]), r[0] + "/" + r[1]);
        }
        assertEquals("META-INF/native/macos-aarch64/libhurray.dylib", NativeLibrary.resource("macos-aarch64", "libhurray.dylib"));
        // The running JVM's own mapping is the one the build packed (hurray.native.platform/lib).
        String here = NativeLibrary.platform(System.getProperty("os.name"), System.getProperty("os.arch"));
        assertTrue(getClass().getClassLoader().getResource(NativeLibrary.resource(here, System.mapLibraryName("hurray"))) != null,
                "the jar resource for " + here);
    }

    /** native/build.sh stages the library under the same folder and file name the loader looks for. */
    @Test
    void buildScriptUsesTheLoadersMapping() throws Exception {
        Path script = Path.of("../native/build.sh");
        Assumptions.assumeTrue(Files.isRegularFile(script), "no native/build.sh next to this module");
        Process p = new ProcessBuilder("bash", script.toString(), "--print-platform").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).strip();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(NativeLibrary.platform(System.getProperty("os.name"), System.getProperty("os.arch"))
                + " " + System.mapLibraryName("hurray"), out);
    }

    @Test
    void abiMismatchIsAClearError() {
        NativeLibrary.checkAbiVersion(4, 4, "x");
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class,
                () -> NativeLibrary.checkAbiVersion(5, 4, "-Dhurray.library.path=/tmp/libhurray.so"));
        assertTrue(e.getMessage().contains("version 5"), e.getMessage());
        assertTrue(e.getMessage().contains("version 4"), e.getMessage());
        assertTrue(e.getMessage().contains("/tmp/libhurray.so"), e.getMessage());
    }

    @Test
    void nativeAccessMessageNamesTheFlag() {
        String m = NativeLibrary.nativeAccessMessage(NativeLibrary.class.getModule());
        assertTrue(m.contains("--enable-native-access=ALL-UNNAMED"), m);
        assertTrue(NativeLibrary.nativeAccessMessage(Object.class.getModule())
                .contains("--enable-native-access=java.base"));
    }

    /** A child JVM without the flag: the first call fails with the flag in the message. */
    @Test
    void withoutNativeAccessTheErrorNamesTheFlag() throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                "-D" + NativeLibrary.LIBRARY_PATH_PROPERTY + "=" + System.getProperty(NativeLibrary.LIBRARY_PATH_PROPERTY, ""),
                NoNativeAccessMain.class.getName());
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("IllegalCallerException"), out);
        assertTrue(out.contains("--enable-native-access=ALL-UNNAMED"), out);
    }

    /** A child JVM with no override loads the copy packed under META-INF/native/. */
    @Test
    void loadsThePackedLibraryWithoutOverride() throws Exception {
        assertTrue(getClass().getClassLoader().getResource("META-INF/native/linux-x86_64/libhurray.so") != null,
                "the build packs libhurray.so as a resource");
        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), PackedMain.class.getName());
        pb.environment().remove(NativeLibrary.LIBRARY_PATH_ENV);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("abi=4 source=jar resource META-INF/native/linux-x86_64/libhurray.so"), out);
    }

    /** Entry point of the child JVM above. */
    static final class PackedMain {
        public static void main(String[] args) {
            NativeLibrary.load();
            System.out.println("abi=" + hurray_h.hurray_c_abi_version() + " source=" + NativeLibrary.source());
        }
    }

    /** Entry point of the child JVM above. */
    static final class NoNativeAccessMain {
        public static void main(String[] args) {
            try {
                NativeLibrary.load();
                System.out.println("loaded without native access?");
                System.exit(3);
            } catch (IllegalCallerException e) {
                System.out.println(e.getClass().getName() + ": " + e.getMessage());
            }
        }
    }
}
