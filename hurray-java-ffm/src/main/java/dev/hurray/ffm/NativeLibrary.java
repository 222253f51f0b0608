package dev.hurray.ffm;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Finds, loads and checks {@code libhurray}, the native library behind {@link hurray_h}.
 *
 * <h2>Where the library comes from</h2>
 * In this order:
 * <ol>
 *   <li>the system property {@value #LIBRARY_PATH_PROPERTY}, if set and not empty: the path of
 *       a {@code libhurray.so} (any platform the JVM runs on);</li>
 *   <li>the environment variable {@value #LIBRARY_PATH_ENV}, likewise;</li>
 *   <li>the copy inside this jar, at {@code META-INF/native/<platform>/<file>}, where
 *       {@code <platform>} is {@link #platform(String, String)} ({@code linux-x86_64},
 *       {@code linux-aarch64}, {@code macos-aarch64}, {@code macos-x86_64},
 *       {@code windows-x86_64}, …) and {@code <file>} is
 *       {@code System.mapLibraryName("hurray")} ({@code libhurray.so}, {@code libhurray.dylib},
 *       {@code hurray.dll}). A jar carries the library of the platform it was built on
 *       (native/build.sh and the POMs use the same mapping). Where the class path holds the
 *       library as a plain file (an exploded build), that file is loaded as it is. From a jar,
 *       the library is extracted once into a per-user cache folder and loaded from there by
 *       later JVMs: see <em>Extraction cache</em>.</li>
 * </ol>
 *
 * <h2>Extraction cache</h2>
 * The cache folder is the system property {@value #CACHE_DIR_PROPERTY}, else the environment
 * variable {@value #CACHE_DIR_ENV}, else {@code $XDG_CACHE_HOME/hurray/native}, else
 * {@code ~/.cache/hurray/native}; the value {@code none} turns the cache off. A cached file is
 * named after the jar entry's size and CRC-32 ({@code libhurray-<size>-<crc>.so}), so jars of
 * different builds never share one. Before loading a cached file its size and CRC-32 are
 * checked against the jar entry; a file that does not match (truncated, corrupted, replaced) is
 * written again. New files are written under a temporary name and moved into place atomically,
 * so concurrent JVMs never load a half-written file. The folder is created readable by its owner
 * only; on a POSIX file system the folder and the file must belong to the JVM's user and be
 * writable by nobody else (a folder others may write is not used, a file others may write is
 * rewritten), so another user cannot swap in a library. When the folder cannot be used (read-only home, no permission), the library is copied to
 * a temporary file, loaded and deleted, as without a cache: a first use then costs about 25 ms
 * more. An extraction removes other builds' copies written more than 30 days earlier and
 * temporary files of extractions more than a day old (regular files with the names it writes,
 * never links or folders); a JVM already using a removed copy keeps it, and one started later
 * extracts it again.
 * The library is loaded once per class loader, into the global arena (it is never unloaded),
 * on the first call of {@link #load()}, {@link #lookup()} or any {@link hurray_h} function.
 * Loading is thread-safe; concurrent first callers wait for one load.
 *
 * <h2>Checks</h2>
 * <ul>
 *   <li>Native access follows the JDK's rule: enable it with
 *       {@code --enable-native-access=ALL-UNNAMED} on the class path, or
 *       {@code --enable-native-access=dev.hurray.ffm} on the module path (the jar's
 *       {@code Automatic-Module-Name}). Without it the JDK allows the calls (with its own
 *       warning under the default {@code --illegal-native-access=warn}, silently under
 *       {@code allow}); where it refuses them ({@code --illegal-native-access=deny}, or an
 *       {@code --enable-native-access} list without this module), an
 *       {@link IllegalCallerException} names the flag to add.</li>
 *   <li>After loading, {@code hurray_c_abi_version()} must equal
 *       {@link hurray_h#HURRAY_C_ABI_VERSION()}, the version of the {@code hurray.h} these
 *       bindings were generated from; otherwise an {@link UnsatisfiedLinkError}.</li>
 * </ul>
 * A failed load is remembered: later calls throw a new error with the same message and the
 * first failure as cause (there is no retry within one class loader).
 *
 * <h2>Errors</h2>
 * {@link UnsatisfiedLinkError}: file missing or not loadable, unsupported platform, ABI
 * version mismatch, missing symbol. {@link IllegalCallerException}: native access disabled.
 */
public final class NativeLibrary {

    /** System property naming a {@code libhurray} file to load instead of the jar's copy. */
    public static final String LIBRARY_PATH_PROPERTY = "hurray.library.path";

    /** Environment variable consulted when {@value #LIBRARY_PATH_PROPERTY} is not set. */
    public static final String LIBRARY_PATH_ENV = "HURRAY_LIBRARY_PATH";

    /** System property naming the extraction cache folder ({@code none}: no cache). */
    public static final String CACHE_DIR_PROPERTY = "hurray.cache.dir";

    /** Environment variable naming the extraction cache folder ({@code none}: no cache). */
    public static final String CACHE_DIR_ENV = "HURRAY_CACHE_DIR";

    /** Name of this module when the jar is on the module path (its Automatic-Module-Name). */
    public static final String MODULE_NAME = "dev.hurray.ffm";

    static final String RESOURCE_DIR = "META-INF/native/";
    /** The library's base name, for {@code System.mapLibraryName}. */
    static final String LIBRARY_NAME = "hurray";

    private static final Object LOCK = new Object();
    private static volatile Loaded loaded;
    private static Throwable failure;

    private NativeLibrary() {
    }

    /** What was loaded: the lookup, a description of its origin, and the ABI version it reported. */
    private record Loaded(SymbolLookup lookup, String source, int abiVersion) {
    }

    /**
     * Where the library would be loaded from: an explicit file (property or environment), or
     * the jar resource for a supported platform.
     *
     * @param file the file to load, or null when {@code resource} is used
     * @param resource the class-path resource, or null when {@code file} is used
     * @param origin human-readable origin, for messages
     */
    record Source(Path file, String resource, String origin) {
    }

    /**
     * Loads the library if it is not loaded yet, and checks native access and the ABI version.
     *
     * @throws UnsatisfiedLinkError if the library cannot be found, loaded or does not match
     * @throws IllegalCallerException if native access is not enabled for this module
     */
    public static void load() {
        loaded();
    }

    /** The symbols of the loaded library; loads it first if needed (see {@link #load()}). */
    public static SymbolLookup lookup() {
        return loaded().lookup();
    }

    /** The C ABI version the loaded library reported (equal to {@link hurray_h#HURRAY_C_ABI_VERSION()}). */
    public static int abiVersion() {
        return loaded().abiVersion();
    }

    /**
     * Where the loaded library came from, e.g. {@code "-Dhurray.library.path=/x/libhurray.so"} or
     * {@code "jar resource META-INF/native/linux-x86_64/libhurray.so (reused from the cache: …)"};
     * {@code "(libhurray not loaded)"} before the first use (this method does not load it: call
     * {@link #load()} first to find out where it would come from).
     */
    public static String source() {
        Loaded l = loaded;
        return l == null ? "(libhurray not loaded)" : l.source();
    }

    private static Loaded loaded() {
        Loaded l = loaded;
        if (l != null) {
            return l;
        }
        synchronized (LOCK) {
            if (loaded != null) {
                return loaded;
            }
            if (failure != null) {
                throw rethrow(failure);
            }
            try {
                loaded = doLoad();
                return loaded;
            } catch (RuntimeException | Error e) {
                failure = e;
                throw e;
            }
        }
    }

    private static RuntimeException rethrow(Throwable first) {
        if (first instanceof IllegalCallerException) {
            throw new IllegalCallerException(first.getMessage(), first);
        }
        UnsatisfiedLinkError e = new UnsatisfiedLinkError(first.getMessage());
        e.initCause(first);
        throw e;
    }

    private static Loaded doLoad() {
        requireNativeAccess();
        Source src = resolve(System.getProperty(LIBRARY_PATH_PROPERTY), System.getenv(LIBRARY_PATH_ENV),
                System.getProperty("os.name"), System.getProperty("os.arch"));
        SymbolLookup lookup;
        String[] origin = {src.origin()};
        try {
            lookup = src.file() != null ? loadFile(src.file(), src.origin()) : loadResource(src, origin);
        } catch (IllegalCallerException e) {
            throw new IllegalCallerException(nativeAccessMessage(NativeLibrary.class.getModule()), e);
        }
        int version = callAbiVersion(lookup, origin[0]);
        checkAbiVersion(version, hurray_h.HURRAY_C_ABI_VERSION(), origin[0]);
        announce(origin[0], version);
        return new Loaded(lookup, origin[0], version);
    }

    /**
     * Logs the load (one INFO line on {@code dev.hurray.ffm.NativeLibrary}) when downcalls are
     * traced ({@code -Dhurray.trace.downcalls=true}); otherwise a successful load logs nothing,
     * so that loading the library does not start the application's SLF4J provider (in a fresh
     * JVM that start costs as much CPU as the library's own first use). {@link #source()} and
     * {@link #abiVersion()} say the same at any time.
     */
    private static void announce(String origin, int version) {
        if (hurray_h.TRACE_DOWNCALLS) {
            org.slf4j.LoggerFactory.getLogger(NativeLibrary.class)
                    .info("libhurray loaded from {} (C ABI version {})", origin, version);
        }
    }

    /**
     * Decides where to load from. Pure (no I/O besides checking that an explicit file exists),
     * so tests can exercise it without loading anything.
     *
     * @param property value of {@value #LIBRARY_PATH_PROPERTY} (may be null)
     * @param env value of {@value #LIBRARY_PATH_ENV} (may be null)
     * @param osName {@code os.name}
     * @param osArch {@code os.arch}
     * @throws UnsatisfiedLinkError if an explicit file does not exist, or no library is packed
     *         for this platform
     */
    static Source resolve(String property, String env, String osName, String osArch) {
        if (property != null && !property.isBlank()) {
            return explicit(property.strip(), "-D" + LIBRARY_PATH_PROPERTY + "=" + property.strip());
        }
        if (env != null && !env.isBlank()) {
            return explicit(env.strip(), LIBRARY_PATH_ENV + "=" + env.strip());
        }
        String resource = resource(platform(osName, osArch), System.mapLibraryName(LIBRARY_NAME));
        return new Source(null, resource, "jar resource " + resource);
    }

    private static Source explicit(String path, String origin) {
        Path p = Path.of(path);
        if (Files.isDirectory(p)) {
            throw new UnsatisfiedLinkError("libhurray not found: " + origin + " names a directory ("
                    + p.toAbsolutePath() + "): name the library file itself, e.g. "
                    + p.resolve(System.mapLibraryName(LIBRARY_NAME)));
        }
        if (!Files.isRegularFile(p)) {
            throw new UnsatisfiedLinkError("libhurray not found: " + origin + " names no file ("
                    + p.toAbsolutePath() + " does not exist or is not a regular file)");
        }
        return new Source(p, null, origin);
    }

    /**
     * The jar resource of the library for a platform folder and a file name.
     *
     * @param platform a {@link #platform(String, String)} value
     * @param fileName {@code System.mapLibraryName("hurray")} on that platform
     */
    static String resource(String platform, String fileName) {
        return RESOURCE_DIR + platform + "/" + fileName;
    }

    /**
     * The platform folder name for the jar resource: {@code OS-ARCH}, where OS is
     * {@code linux}, {@code macos}, {@code windows} or {@code freebsd} (from {@code os.name}) and
     * ARCH is {@code x86_64} ({@code amd64}, {@code x86_64}), {@code aarch64} ({@code aarch64},
     * {@code arm64}), {@code riscv64} or {@code ppc64le} (from {@code os.arch}). native/build.sh
     * and the POMs ({@code hurray.native.platform}) use the same names.
     *
     * @throws UnsatisfiedLinkError for an operating system or architecture outside that table
     */
    static String platform(String osName, String osArch) {
        String os = osName == null ? "" : osName.toLowerCase(Locale.ROOT);
        String arch = osArch == null ? "" : osArch.toLowerCase(Locale.ROOT);
        String o = os.startsWith("linux") ? "linux"
                : os.startsWith("mac") || os.startsWith("darwin") ? "macos"
                : os.startsWith("windows") ? "windows"
                : os.startsWith("freebsd") ? "freebsd"
                : null;
        String a = switch (arch) {
            case "amd64", "x86_64", "x86-64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            case "riscv64" -> "riscv64";
            case "ppc64le" -> "ppc64le";
            default -> null;
        };
        if (o == null || a == null) {
            throw new UnsatisfiedLinkError("hurray-java-ffm knows no native library folder for " + osName + "/" + osArch
                    + " (it maps linux, macos, windows and freebsd on x86_64, aarch64, riscv64 and ppc64le). Build native/ "
                    + "for this platform and pass its library with -D" + LIBRARY_PATH_PROPERTY
                    + "=/path/to/libhurray (or set " + LIBRARY_PATH_ENV + ").");
        }
        return o + "-" + a;
    }

    private static SymbolLookup loadFile(Path file, String origin) {
        try {
            return SymbolLookup.libraryLookup(file, Arena.global());
        } catch (IllegalArgumentException e) {
            throw linkError("cannot load libhurray from " + origin + ": " + e.getMessage(), e);
        }
    }

    /** Loads the jar's copy; {@code origin[0]} becomes where it was loaded from. */
    private static SymbolLookup loadResource(Source src, String[] origin) {
        ClassLoader cl = NativeLibrary.class.getClassLoader();
        java.net.URL url = cl == null ? ClassLoader.getSystemResource(src.resource()) : cl.getResource(src.resource());
        if (url == null) {
            throw new UnsatisfiedLinkError("libhurray not found: no " + src.resource()
                    + " on the class path (this hurray-java-ffm jar was built for another platform, or is incomplete)."
                    + " Build native/ here (native/build.sh) and set -D" + LIBRARY_PATH_PROPERTY
                    + "=/path/to/" + System.mapLibraryName(LIBRARY_NAME) + ".");
        }
        if ("file".equals(url.getProtocol())) {
            // An exploded class path (a build's target/classes): load the file in place.
            try {
                origin[0] = src.origin() + " (" + url.getPath() + ")";
                return loadFile(Path.of(url.toURI()), origin[0]);
            } catch (java.net.URISyntaxException | IllegalArgumentException e) {
                // Fall through to extraction.
            }
        }
        Cached cached = cacheFile(url, cacheDir(System.getProperty(CACHE_DIR_PROPERTY), System.getenv(CACHE_DIR_ENV),
                System.getenv("XDG_CACHE_HOME"), System.getProperty("user.home")));
        if (cached != null) {
            origin[0] = src.origin() + (cached.written() ? " (extracted to the cache: " : " (reused from the cache: ")
                    + cached.path() + ")";
            try {
                return loadFile(cached.path(), origin[0]);
            } catch (UnsatisfiedLinkError e) {
                // The copy went away between the check and the load (another JVM pruned or
                // replaced it): extract a private temporary copy instead.
                origin[0] = src.origin();
            }
        }
        try (InputStream in = url.openStream()) {
            Path tmp = Files.createTempFile("libhurray-", ".so");
            try {
                Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                origin[0] = src.origin() + " (extracted to " + tmp + ")";
                return loadFile(tmp, origin[0]);
            } finally {
                // Safe once loaded: the mapping outlives the directory entry on Linux.
                Files.deleteIfExists(tmp);
            }
        } catch (IOException e) {
            throw linkError("cannot extract " + src.resource() + " to a temporary file: " + e, e);
        }
    }

    /**
     * The extraction cache folder: the property, else the environment variable, else
     * {@code $XDG_CACHE_HOME/hurray/native}, else {@code <home>/.cache/hurray/native}; null when
     * turned off ({@code none}) or when no folder can be named.
     */
    static Path cacheDir(String property, String env, String xdgCacheHome, String userHome) {
        for (String v : new String[] {property, env}) {
            if (v != null && !v.isBlank()) {
                return v.strip().equalsIgnoreCase("none") ? null : Path.of(v.strip());
            }
        }
        if (xdgCacheHome != null && !xdgCacheHome.isBlank() && Path.of(xdgCacheHome.strip()).isAbsolute()) {
            return Path.of(xdgCacheHome.strip(), "hurray", "native");
        }
        if (userHome != null && !userHome.isBlank() && !userHome.equals("?")) {
            return Path.of(userHome, ".cache", "hurray", "native");
        }
        return null;
    }

    /** A usable cached copy, and whether this call wrote it. */
    record Cached(Path path, boolean written) {
    }

    /**
     * The cached copy of the jar entry at {@code url} in {@code dir}, written there first if it
     * is missing or does not match the entry's size and CRC-32; null when there is no cache, the
     * entry's size and CRC-32 cannot be read, or the folder cannot be used safely (the caller
     * then extracts to a temporary file). On a POSIX file system the folder and the file must
     * belong to this process's user and be writable by nobody else: another user who could
     * write there could swap in a library between the check and the load.
     */
    static Cached cacheFile(java.net.URL url, Path dir) {
        if (dir == null) {
            return null;
        }
        long size;
        long crc;
        try {
            java.net.URLConnection c = url.openConnection();
            if (!(c instanceof java.net.JarURLConnection j)) {
                return null;
            }
            java.util.jar.JarEntry e = j.getJarEntry();
            size = e.getSize();
            crc = e.getCrc();
            if (size < 0 || crc < 0) {
                return null;
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        String file = System.mapLibraryName(LIBRARY_NAME);
        int dot = file.lastIndexOf('.');
        String name = file.substring(0, dot) + "-" + size + "-" + Long.toHexString(crc) + file.substring(dot);
        Path target = dir.toAbsolutePath().resolve(name);
        try {
            createPrivateDirectories(target.getParent());
            if (!private_(target.getParent())) {
                return null;
            }
            if (matches(target, size, crc) && private_(target)) {
                return new Cached(target, false);
            }
            Path tmp = target.resolveSibling(name + "." + ProcessHandle.current().pid() + "." + System.nanoTime() + ".tmp");
            try {
                // Owner-only from the start, whatever the umask: a copy others may write is not trusted.
                try {
                    Files.createFile(tmp, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                            java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
                } catch (UnsupportedOperationException e) {
                    Files.createFile(tmp);
                }
                // Into the file just made (Files.copy would replace it, with default permissions).
                try (InputStream in = url.openStream();
                     java.io.OutputStream out = Files.newOutputStream(tmp, java.nio.file.StandardOpenOption.WRITE)) {
                    in.transferTo(out);
                }
                if (!matches(tmp, size, crc)) {
                    return null;
                }
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } finally {
                Files.deleteIfExists(tmp);
            }
            // The bytes were checked before the move; only who may write the result is left.
            if (!private_(target)) {
                return null;
            }
            pruneStale(target, System.currentTimeMillis());
            return new Cached(target, true);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** How old another build's cached copy must be before a new extraction removes it: 30 days. */
    static final long STALE_COPY_MILLIS = 30L * 24 * 60 * 60 * 1000;

    /** How old an abandoned temporary file (a crashed extraction) must be before it is removed: one day. */
    static final long STALE_TMP_MILLIS = 24L * 60 * 60 * 1000;

    /**
     * After {@code kept} was extracted, removes from its folder the copies of other builds
     * ({@code libhurray-<size>-<crc>.so}) written more than {@link #STALE_COPY_MILLIS} before
     * {@code now}, and temporary files of extractions older than {@link #STALE_TMP_MILLIS}.
     * Only names this class writes are touched; a failure to remove one is ignored. A JVM that
     * still uses an old build is unaffected (the loaded mapping outlives the file), and one that
     * starts later extracts its copy again.
     */
    static void pruneStale(Path kept, long now) {
        String file = System.mapLibraryName(LIBRARY_NAME);
        int dot = file.lastIndexOf('.');
        java.util.regex.Pattern ours = java.util.regex.Pattern.compile(
                java.util.regex.Pattern.quote(file.substring(0, dot)) + "-\\d+-[0-9a-f]+"
                + java.util.regex.Pattern.quote(file.substring(dot)) + "(\\.\\d+\\.-?\\d+\\.tmp)?");
        try (java.util.stream.Stream<Path> files = Files.list(kept.getParent())) {
            for (Path p : (Iterable<Path>) files::iterator) {
                java.util.regex.Matcher m = ours.matcher(p.getFileName().toString());
                if (p.equals(kept) || !m.matches()) {
                    continue;
                }
                try {
                    java.nio.file.attribute.BasicFileAttributes a = Files.readAttributes(p,
                            java.nio.file.attribute.BasicFileAttributes.class, java.nio.file.LinkOption.NOFOLLOW_LINKS);
                    long age = now - a.lastModifiedTime().toMillis();
                    if (a.isRegularFile() && age > (m.group(1) != null ? STALE_TMP_MILLIS : STALE_COPY_MILLIS)) {
                        Files.deleteIfExists(p);
                    }
                } catch (IOException | RuntimeException e) {
                    // Left for a later extraction.
                }
            }
        } catch (IOException | RuntimeException e) {
            // Pruning is housekeeping: never a reason to fail a load.
        }
    }

    /**
     * Whether {@code p} (not followed if a link) belongs to this process's user and no one else
     * may write it; true where the file system has no POSIX attributes.
     */
    private static boolean private_(Path p) throws IOException {
        java.nio.file.attribute.PosixFileAttributeView view = Files.getFileAttributeView(p,
                java.nio.file.attribute.PosixFileAttributeView.class, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        if (view == null) {
            return true;
        }
        java.nio.file.attribute.PosixFileAttributes a = view.readAttributes();
        java.nio.file.attribute.UserPrincipal me;
        try {
            // The process's own user: /proc/self belongs to it on Linux (even for a user with no
            // name, as in some containers); elsewhere the user the JVM names.
            Path self = Path.of("/proc/self");
            me = Files.exists(self) ? Files.getOwner(self)
                    : p.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(System.getProperty("user.name"));
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
        java.util.Set<java.nio.file.attribute.PosixFilePermission> perms = a.permissions();
        return !a.isSymbolicLink() && a.owner().equals(me)
                && !perms.contains(java.nio.file.attribute.PosixFilePermission.GROUP_WRITE)
                && !perms.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_WRITE);
    }

    /** Whether {@code file} is a regular file of {@code size} bytes whose CRC-32 is {@code crc}. */
    private static boolean matches(Path file, long size, long crc) throws IOException {
        if (!Files.isRegularFile(file) || Files.size(file) != size) {
            return false;
        }
        java.util.zip.CRC32 c = new java.util.zip.CRC32();
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file)) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocateDirect(1 << 16);
            while (ch.read(b) > 0) {
                b.flip();
                c.update(b);
                b.clear();
            }
        }
        return c.getValue() == crc;
    }

    private static void createPrivateDirectories(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            return;
        }
        try {
            Files.createDirectories(dir, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                    java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
        } catch (UnsupportedOperationException e) {
            Files.createDirectories(dir);
        }
    }

    private static int callAbiVersion(SymbolLookup lookup, String origin) {
        // Through hurray_call when the library has it: the same downcall shape every $raw
        // function uses, so the JDK links one stub for the load and the first tensors alike.
        MemorySegment call = lookup.find("hurray_call").orElse(null);
        if (call != null) {
            MethodHandle mh = Linker.nativeLinker().downcallHandle(call, FunctionDescriptor.of(ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG));
            try {
                return (int) mh.invokeExact(hurray_h.HURRAY_CALL_C_ABI_VERSION(), 0L, 0L, 0L, 0L, 0L, 0L, 0L, 0L);
            } catch (Throwable t) {
                throw linkError("hurray_call(HURRAY_CALL_C_ABI_VERSION) failed in " + origin, t);
            }
        }
        MemorySegment addr = lookup.find("hurray_c_abi_version").orElseThrow(() -> new UnsatisfiedLinkError(
                origin + " is not libhurray: it has no hurray_c_abi_version symbol"));
        MethodHandle mh = Linker.nativeLinker().downcallHandle(addr, FunctionDescriptor.of(ValueLayout.JAVA_INT));
        try {
            return (int) mh.invokeExact();
        } catch (Throwable t) {
            throw linkError("hurray_c_abi_version() failed in " + origin, t);
        }
    }

    /**
     * Fails unless the library's ABI version equals the one the bindings were generated for.
     *
     * @throws UnsatisfiedLinkError on a mismatch, naming both versions and the library's origin
     */
    static void checkAbiVersion(int found, int expected, String origin) {
        if (found != expected) {
            throw new UnsatisfiedLinkError("libhurray from " + origin + " implements C ABI version "
                    + Integer.toUnsignedString(found) + ", but these bindings were generated from hurray.h version "
                    + expected + ". Use the libhurray built with this hurray-java-ffm (or regenerate the bindings).");
        }
    }

    /** Set once a restricted call from this module went through. */
    private static volatile boolean nativeAccessAllowed;

    /**
     * Throws unless the JVM lets this module call restricted FFM methods, by the JDK's own rule:
     * a module without {@code --enable-native-access} may still call them, with a warning under
     * the default {@code --illegal-native-access=warn} and silently under {@code allow}, and is
     * refused under {@code deny} or by an {@code --enable-native-access} list that leaves it
     * out. So the JDK decides: a harmless restricted call is tried, and only its refusal fails.
     *
     * @throws IllegalCallerException naming the {@code --enable-native-access} flag to add, the
     *     JDK's refusal as its cause
     */
    static void requireNativeAccess() {
        if (nativeAccessAllowed) {
            return;
        }
        Module m = NativeLibrary.class.getModule();
        if (!m.isNativeAccessEnabled()) {
            try {
                MemorySegment.NULL.reinterpret(0);
            } catch (IllegalCallerException e) {
                throw new IllegalCallerException(nativeAccessMessage(m), e);
            }
        }
        nativeAccessAllowed = true;
    }

    /** The message for a module without native access, naming the exact flag. */
    static String nativeAccessMessage(Module m) {
        if (m.isNamed()) {
            // On the module path the API module (dev.hurray) calls restricted methods too.
            return "Hurray calls native code through java.lang.foreign (FFM), which needs native access: run java with "
                    + "--enable-native-access=" + m.getName() + ",dev.hurray";
        }
        return "Hurray calls native code through java.lang.foreign (FFM), which needs native access: run java with "
                + "--enable-native-access=ALL-UNNAMED (or add \"Enable-Native-Access: ALL-UNNAMED\" to an executable "
                + "jar's manifest).";
    }

    /**
     * The error for a call to a function the loaded library lacks: a build older than these
     * bindings (C ABI 4 grows by additions, so an older build reports the same version). Each
     * call of that function gets one; the other functions keep working. When the library could
     * not be loaded at all, the load failure is thrown instead, on every call.
     */
    static UnsatisfiedLinkError missingSymbol(String symbol) {
        // A library that failed to load: that failure (UnsatisfiedLinkError or
        // IllegalCallerException), again, on every call.
        load();
        return new UnsatisfiedLinkError("libhurray has no " + symbol + ": the library loaded from " + source()
                + " is older than these bindings (it reports C ABI " + abiVersion() + ", which later builds extend)."
                + " Use the library packed in hurray-java-ffm (unset -D" + LIBRARY_PATH_PROPERTY + " and "
                + LIBRARY_PATH_ENV + ") or rebuild native/ from the same source as these bindings.");
    }

    /** {@code address}, or {@link #missingSymbol} when it is null. */
    static MemorySegment requireSymbol(MemorySegment address, String symbol) {
        if (address == null) {
            throw missingSymbol(symbol);
        }
        return address;
    }

    private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
        UnsatisfiedLinkError e = new UnsatisfiedLinkError(message);
        e.initCause(cause);
        return e;
    }
}
