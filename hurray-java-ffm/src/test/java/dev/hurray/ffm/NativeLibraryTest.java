package dev.hurray.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.testing.ChildJvm;
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
        assertTrue(m.contains("--enable-native-access=ALL-UNNAMED") && m.contains("manifest"), m);
        // On the module path both modules that call restricted methods, and no manifest hint.
        String named = NativeLibrary.nativeAccessMessage(Object.class.getModule());
        assertTrue(named.contains("--enable-native-access=java.base,dev.hurray") && !named.contains("manifest"), named);
    }

    /**
     * A child JVM whose native access the JDK denies (JDK 24+: {@code --illegal-native-access=deny};
     * JDK 22-23: an {@code --enable-native-access} list without this module): the first call
     * fails with the flag in the message.
     */
    @Test
    void whenTheJdkDeniesNativeAccessTheErrorNamesTheFlag() throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        String deny = Runtime.version().feature() >= 24 ? "--illegal-native-access=deny" : "--enable-native-access=java.base";
        ProcessBuilder pb = new ProcessBuilder(java, deny, "-cp", System.getProperty("java.class.path"),
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

    /**
     * A child JVM without {@code --enable-native-access} under {@code --illegal-native-access=allow}
     * (JDK 24+), and under the default {@code warn}: the JDK allows the calls, so the library loads.
     */
    @Test
    void withoutTheFlagTheJdkRuleDecides() throws Exception {
        Assumptions.assumeTrue(Runtime.version().feature() >= 24, "--illegal-native-access is JDK 24+");
        String java = ProcessHandle.current().info().command().orElseThrow();
        for (String mode : new String[] {"--illegal-native-access=allow", "--illegal-native-access=warn"}) {
            ProcessBuilder pb = new ProcessBuilder(java, mode, "-cp", System.getProperty("java.class.path"),
                    "-D" + NativeLibrary.LIBRARY_PATH_PROPERTY + "=" + System.getProperty(NativeLibrary.LIBRARY_PATH_PROPERTY, ""),
                    PackedMain.class.getName());
            pb.redirectErrorStream(true);
            pb.environment().remove(NativeLibrary.LIBRARY_PATH_ENV);
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes());
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), mode + ": " + out);
            assertTrue(out.contains("abi=4"), mode + ": " + out);
            assertEquals(mode.endsWith("warn"), out.contains("WARNING: A restricted method"), mode + ": " + out);
        }
    }

    /** A child JVM with no override loads the copy packed under META-INF/native/. */
    @Test
    void loadsThePackedLibraryWithoutOverride() throws Exception {
        assertTrue(getClass().getClassLoader().getResource("META-INF/native/linux-x86_64/libhurray.so") != null,
                "the build packs libhurray.so as a resource");
        String out = runPackedMain(System.getProperty("java.class.path"));
        assertTrue(out.contains("abi=4 source=jar resource META-INF/native/linux-x86_64/libhurray.so"), out);
    }

    /** Runs {@link PackedMain} in a child JVM on {@code classPath} with no override; its output. */
    private static String runPackedMain(String classPath, String... jvmOptions) throws Exception {
        return runChild(PackedMain.class, classPath, jvmOptions);
    }

    /** Runs {@code main} in a child JVM on {@code classPath} (see {@link ChildJvm#run}); its output, after a 0 exit. */
    private static String runChild(Class<?> main, String classPath, String... jvmOptions) throws Exception {
        ChildJvm.Result r = ChildJvm.run(classPath, List.of(jvmOptions), main.getName());
        assertEquals(0, r.exit(), r.out());
        return r.out();
    }

    /** The cache folder: property, then environment, then XDG, then home; "none" turns it off. */
    @Test
    void cacheFolderFollowsPropertyEnvironmentXdgHome() {
        assertEquals(Path.of("/p"), NativeLibrary.cacheDir(" /p ", "/e", "/x", "/h"));
        assertEquals(Path.of("/e"), NativeLibrary.cacheDir("", "/e", "/x", "/h"));
        assertEquals(Path.of("/x/hurray/native"), NativeLibrary.cacheDir(null, null, "/x", "/h"));
        assertEquals(Path.of("/h/.cache/hurray/native"), NativeLibrary.cacheDir(null, null, "relative", "/h"));
        assertNull(NativeLibrary.cacheDir("none", "/e", "/x", "/h"));
        assertNull(NativeLibrary.cacheDir(null, "NONE", "/x", "/h"));
        assertNull(NativeLibrary.cacheDir(null, null, null, null));
    }

    /** A jar holding one fake library entry, and the jar: URL of that entry. */
    private static java.net.URL fakeJar(Path dir, byte[] content) throws IOException {
        Path jar = dir.resolve("fake.jar");
        try (java.util.jar.JarOutputStream out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar))) {
            out.putNextEntry(new java.util.jar.JarEntry("META-INF/native/x/libhurray.so"));
            out.write(content);
            out.closeEntry();
        }
        return java.net.URI.create("jar:" + jar.toUri() + "!/META-INF/native/x/libhurray.so").toURL();
    }

    /**
     * The first use extracts into the cache under the entry's size and CRC-32; a second use
     * reuses the file as it is; a corrupted or truncated file is written again; a folder that
     * cannot be created gives null (the caller then extracts to a temporary file).
     */
    @Test
    void extractionCacheWritesOnceChecksAndRepairs(@TempDir Path dir) throws Exception {
        byte[] content = new byte[100_000];
        new java.util.Random(7).nextBytes(content);
        java.net.URL url = fakeJar(dir, content);
        Path cache = dir.resolve("cache/a/b");
        NativeLibrary.Cached made = NativeLibrary.cacheFile(url, cache);
        assertTrue(made.written());
        Path first = made.path();
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(content);
        assertEquals(cache.resolve("libhurray-100000-" + Long.toHexString(crc.getValue()) + ".so"), first);
        assertTrue(java.util.Arrays.equals(content, Files.readAllBytes(first)));
        assertEquals(List.of(first), Files.list(cache).toList(), "no temporary files left behind");
        if (cache.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                    Files.getPosixFilePermissions(cache)));
            // Owner-only whatever the umask (a group-writable copy would never be trusted again).
            assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(
                    Files.getPosixFilePermissions(first)));
        }

        java.nio.file.attribute.FileTime stamp = java.nio.file.attribute.FileTime.fromMillis(1_000_000L);
        Files.setLastModifiedTime(first, stamp);
        assertEquals(new NativeLibrary.Cached(first, false), NativeLibrary.cacheFile(url, cache));
        assertEquals(stamp, Files.getLastModifiedTime(first), "a matching cached file is reused, not rewritten");

        byte[] corrupt = content.clone();
        corrupt[5000] ^= 1;
        Files.write(first, corrupt);
        assertEquals(new NativeLibrary.Cached(first, true), NativeLibrary.cacheFile(url, cache));
        assertTrue(java.util.Arrays.equals(content, Files.readAllBytes(first)), "a corrupted copy is replaced");

        Files.write(first, java.util.Arrays.copyOf(content, 10));
        assertEquals(new NativeLibrary.Cached(first, true), NativeLibrary.cacheFile(url, cache));
        assertEquals(content.length, Files.size(first), "a truncated copy is replaced");

        Path blocked = dir.resolve("plain-file");
        Files.writeString(blocked, "not a folder");
        assertNull(NativeLibrary.cacheFile(url, blocked.resolve("sub")));
        assertNull(NativeLibrary.cacheFile(url, null));
        assertNull(NativeLibrary.cacheFile(dir.toUri().toURL(), cache), "a file: URL has no jar entry to key on");

        if (cache.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            // A folder or a copy others may write is not trusted: a copy is rewritten privately, a
            // shared folder is not used at all (the caller extracts to a temporary file instead).
            Files.setPosixFilePermissions(first, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
            assertEquals(new NativeLibrary.Cached(first, true), NativeLibrary.cacheFile(url, cache));
            var perms = Files.getPosixFilePermissions(first);
            assertTrue(!perms.contains(java.nio.file.attribute.PosixFilePermission.GROUP_WRITE)
                    && !perms.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_WRITE),
                    "rewritten without write access for others: " + perms);
            Path shared = dir.resolve("shared");
            Files.createDirectories(shared);
            Files.setPosixFilePermissions(shared, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
            assertNull(NativeLibrary.cacheFile(url, shared));
            assertEquals(0, Files.list(shared).count(), "nothing written into a shared folder");
        }
    }

    /**
     * A new extraction removes other builds' copies older than 30 days and abandoned temporary
     * files older than a day; recent copies, unrelated files, links and folders stay.
     */
    @Test
    void extractionPrunesStaleCopiesOfOtherBuilds(@TempDir Path dir) throws Exception {
        Path cache = dir.resolve("cache");
        Files.createDirectories(cache);
        long now = System.currentTimeMillis();
        long day = 24L * 60 * 60 * 1000;
        Path oldCopy = cache.resolve("libhurray-123-abc.so");
        Path recentCopy = cache.resolve("libhurray-456-def.so");
        Path oldTmp = cache.resolve("libhurray-123-abc.so.4242.99.tmp");
        Path recentTmp = cache.resolve("libhurray-456-def.so.4243.100.tmp");
        Path unrelated = cache.resolve("notes-libhurray-1-a.so");
        Path oldFolder = cache.resolve("libhurray-789-aaa.so");
        for (Path p : List.of(oldCopy, recentCopy, oldTmp, recentTmp, unrelated)) {
            Files.writeString(p, "x");
        }
        Files.createDirectory(oldFolder);
        Files.setLastModifiedTime(oldCopy, java.nio.file.attribute.FileTime.fromMillis(now - 31 * day));
        Files.setLastModifiedTime(recentCopy, java.nio.file.attribute.FileTime.fromMillis(now - 29 * day));
        Files.setLastModifiedTime(oldTmp, java.nio.file.attribute.FileTime.fromMillis(now - 2 * day));
        Files.setLastModifiedTime(recentTmp, java.nio.file.attribute.FileTime.fromMillis(now - day / 2));
        Files.setLastModifiedTime(unrelated, java.nio.file.attribute.FileTime.fromMillis(now - 400 * day));
        Files.setLastModifiedTime(oldFolder, java.nio.file.attribute.FileTime.fromMillis(now - 400 * day));

        byte[] content = new byte[1000];
        new java.util.Random(3).nextBytes(content);
        NativeLibrary.Cached made = NativeLibrary.cacheFile(fakeJar(dir, content), cache);
        assertTrue(made.written());
        try (var files = Files.list(cache)) {
            assertEquals(java.util.Set.of(made.path(), recentCopy, recentTmp, unrelated, oldFolder),
                    files.collect(java.util.stream.Collectors.toSet()));
        }

        // Reusing a cached copy prunes nothing: only an extraction does.
        Files.setLastModifiedTime(recentCopy, java.nio.file.attribute.FileTime.fromMillis(now - 90 * day));
        assertEquals(new NativeLibrary.Cached(made.path(), false), NativeLibrary.cacheFile(fakeJar(dir, content), cache));
        assertTrue(Files.exists(recentCopy));
        // The copy just written is never removed, however old its time stamp.
        Files.setLastModifiedTime(made.path(), java.nio.file.attribute.FileTime.fromMillis(now - 90 * day));
        NativeLibrary.pruneStale(made.path(), now);
        assertTrue(Files.exists(made.path()));
        assertTrue(Files.notExists(recentCopy));
    }

    /**
     * Pruning never reaches outside the cache folder: links named like stale copies or
     * temporaries (to a file, to a folder, dangling) stay, and so do their targets; a cache
     * folder that is itself a link is not used at all, so nothing behind it is pruned.
     */
    @Test
    void pruningLeavesLinksAndWhatTheyPointTo(@TempDir Path dir) throws Exception {
        long now = System.currentTimeMillis();
        java.nio.file.attribute.FileTime old = java.nio.file.attribute.FileTime.fromMillis(now - 400L * 24 * 60 * 60 * 1000);
        Path outside = Files.createDirectories(dir.resolve("outside"));
        Path precious = Files.writeString(outside.resolve("precious.txt"), "keep");
        Path folder = Files.createDirectories(outside.resolve("folder"));
        Files.writeString(folder.resolve("inner"), "keep");
        Path othersCopy = Files.writeString(outside.resolve("libhurray-1-a.so"), "keep");
        for (Path p : List.of(precious, folder, othersCopy)) {
            Files.setLastModifiedTime(p, old);
        }
        Path cache = Files.createDirectories(dir.resolve("cache"));
        List<Path> links = List.of(
                Files.createSymbolicLink(cache.resolve("libhurray-11-abc.so"), precious),
                Files.createSymbolicLink(cache.resolve("libhurray-12-abc.so"), folder),
                Files.createSymbolicLink(cache.resolve("libhurray-13-abc.so.1.2.tmp"), precious),
                Files.createSymbolicLink(cache.resolve("libhurray-14-abc.so"), dir.resolve("nothing-here")));

        byte[] content = new byte[1000];
        new java.util.Random(4).nextBytes(content);
        NativeLibrary.Cached made = NativeLibrary.cacheFile(fakeJar(dir, content), cache);
        assertTrue(made.written());
        for (Path l : links) {
            assertTrue(Files.isSymbolicLink(l), l.toString());
        }
        assertEquals("keep", Files.readString(precious));
        assertEquals("keep", Files.readString(folder.resolve("inner")));

        // A cache folder that is a link: refused (null: a temporary copy is used), nothing pruned.
        Path linkedCache = Files.createSymbolicLink(dir.resolve("linked-cache"), outside);
        assertEquals(null, NativeLibrary.cacheFile(fakeJar(dir, content), linkedCache));
        assertEquals("keep", Files.readString(othersCopy));
    }

    /** Two child JVMs loading from a jar share one cached copy; the second loads it as it is. */
    @Test
    void jarLoadsGoThroughTheCache(@TempDir Path dir) throws Exception {
        java.net.URL res = getClass().getClassLoader().getResource("META-INF/native/linux-x86_64/libhurray.so");
        Assumptions.assumeTrue(res != null);
        byte[] lib;
        try (java.io.InputStream in = res.openStream()) {
            lib = in.readAllBytes();
        }
        Path jar = dir.resolve("lib.jar");
        try (java.util.jar.JarOutputStream out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar))) {
            out.putNextEntry(new java.util.jar.JarEntry("META-INF/native/linux-x86_64/libhurray.so"));
            out.write(lib);
            out.closeEntry();
        }
        Path cache = dir.resolve("cache");
        String cp = jar + java.io.File.pathSeparator + System.getProperty("java.class.path");
        for (int round = 0; round < 2; round++) {
            String out = runPackedMain(cp, "-D" + NativeLibrary.CACHE_DIR_PROPERTY + "=" + cache);
            assertTrue(out.contains("abi=4 source=jar resource META-INF/native/linux-x86_64/libhurray.so ("
                    + (round == 0 ? "extracted to" : "reused from") + " the cache: " + cache), out);
            try (var files = Files.list(cache)) {
                assertEquals(1, files.count(), "one cached copy");
            }
        }
    }

    /**
     * A library older than the bindings (it reports ABI 4 but lacks later additions): every call
     * of a missing function fails with the same clear error, naming the function and the
     * library's origin, and the functions it has keep working. Needs a C compiler for the stub.
     */
    @Test
    void functionMissingFromAnOlderLibraryIsAClearErrorOnEveryCall(@TempDir Path dir) throws Exception {
        Path lib = ChildJvm.olderLibraryStub(dir);
        String out = runChild(MissingSymbolMain.class, System.getProperty("java.class.path"),
                "-D" + NativeLibrary.LIBRARY_PATH_PROPERTY + "=" + lib);
        String expected = "java.lang.UnsatisfiedLinkError: libhurray has no hurray_decoder_reset: the library loaded from -D"
                + NativeLibrary.LIBRARY_PATH_PROPERTY + "=" + lib + " is older than these bindings";
        assertEquals(2, out.lines().filter(l -> l.startsWith(expected)).count(), out);
        assertTrue(out.contains("abi=4"), out);
        assertTrue(out.contains("handle: java.lang.UnsatisfiedLinkError: libhurray has no hurray_decoder_reset"), out);
    }

    /**
     * A library that cannot be loaded (here: the named file does not exist) gives its load
     * failure on every call of every function, not a NoClassDefFoundError after the first.
     */
    @Test
    void aLoadFailureIsRepeatedOnEveryCall(@TempDir Path dir) throws Exception {
        Path absent = dir.resolve("no-such-libhurray.so");
        String out = runChild(LoadFailureMain.class, System.getProperty("java.class.path"),
                "-D" + NativeLibrary.LIBRARY_PATH_PROPERTY + "=" + absent);
        List<String> lines = out.lines().filter(l -> l.startsWith("call ")).toList();
        assertEquals(4, lines.size(), out);
        for (String l : lines) {
            assertTrue(l.contains("java.lang.UnsatisfiedLinkError") && l.contains(absent.toString()), out);
        }
    }

    /** Entry point of the child JVM above: two functions, twice each. */
    static final class LoadFailureMain {
        public static void main(String[] args) {
            for (int i = 0; i < 2; i++) {
                try {
                    hurray_h.hurray_decoder_reset(java.lang.foreign.MemorySegment.NULL);
                    System.out.println("call loaded?");
                } catch (Throwable t) {
                    System.out.println("call " + t);
                }
                try {
                    hurray_h.hurray_status_name(0);
                    System.out.println("call loaded?");
                } catch (Throwable t) {
                    System.out.println("call " + t);
                }
            }
        }
    }

    /** Entry point of the child JVM above. */
    static final class MissingSymbolMain {
        public static void main(String[] args) {
            for (int i = 0; i < 2; i++) {
                try {
                    hurray_h.hurray_decoder_reset(java.lang.foreign.MemorySegment.NULL);
                    System.out.println("called a missing function?");
                } catch (Throwable t) {
                    System.out.println(t);
                }
            }
            System.out.println("abi=" + hurray_h.hurray_c_abi_version());
            try {
                hurray_h.hurray_decoder_reset$handle();
            } catch (Throwable t) {
                System.out.println("handle: " + t);
            }
        }
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
