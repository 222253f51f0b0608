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
        assertEquals("META-INF/native/linux-x86_64/libhurray.so", s.resource());
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
                () -> NativeLibrary.resolve(null, null, "Mac OS X", "aarch64"));
        assertTrue(e.getMessage().contains("Mac OS X/aarch64"), e.getMessage());
        assertTrue(e.getMessage().contains("linux-x86_64"), e.getMessage());
        assertTrue(e.getMessage().contains("hurray.library.path"), e.getMessage());
        assertEquals("linux-x86_64", NativeLibrary.platform("Linux", "x86_64"));
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
