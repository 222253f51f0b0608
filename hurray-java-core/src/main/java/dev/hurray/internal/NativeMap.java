package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A read-only, shared memory map of a whole file made with the C library ({@code open},
 * {@code lseek}, {@code mmap}, {@code close}) and unmapped by an explicit {@link #unmap()}
 * ({@code munmap}), on any thread.
 *
 * <p>Why not {@code FileChannel.map}: a map made there belongs to an arena, and a map whose
 * last user may be on another thread needs a shared arena, whose close is a handshake with
 * every Java thread (tens of microseconds, most of the cost of mapping a small file). Here
 * nothing Java-visible points into the map unless its owner makes a segment over it (in an
 * arena it closes before {@link #unmap()}).
 *
 * <p>Linux on x86-64 and AArch64 only (the flag values below are theirs); elsewhere, and for
 * anything this cannot map (a missing or unreadable file, a directory, an empty file, a FIFO),
 * {@link #map} answers {@code null} and the caller maps through a channel, which reports the
 * reason as Java does. Opens with {@code O_NONBLOCK}, so a FIFO is not waited on here.
 */
public final class NativeMap {
    private static final int O_RDONLY = 0;
    private static final int O_NONBLOCK = 04000;
    private static final int O_CLOEXEC = 02000000;
    private static final int SEEK_END = 2;
    private static final int PROT_READ = 1;
    private static final int MAP_SHARED = 1;
    private static final long MAP_FAILED = -1L;

    private static final boolean SUPPORTED;
    private static final MethodHandle OPEN;
    private static final MethodHandle LSEEK;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle CLOSE;

    static {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        boolean supported = os.startsWith("linux") && (arch.equals("amd64") || arch.equals("aarch64"));
        MethodHandle open = null;
        MethodHandle lseek = null;
        MethodHandle mmap = null;
        MethodHandle munmap = null;
        MethodHandle close = null;
        if (supported) {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            // open(const char *, int, ...): called with its two fixed arguments only.
            open = linker.downcallHandle(libc.find("open").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), Linker.Option.firstVariadicArg(2));
            lseek = linker.downcallHandle(libc.find("lseek").orElseThrow(),
                    FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT));
            mmap = linker.downcallHandle(libc.find("mmap").orElseThrow(),
                    FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
            munmap = linker.downcallHandle(libc.find("munmap").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
            close = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        }
        SUPPORTED = supported;
        OPEN = open;
        LSEEK = lseek;
        MMAP = mmap;
        MUNMAP = munmap;
        CLOSE = close;
    }

    private final long address;
    private final long size;
    private final AtomicBoolean unmapped = new AtomicBoolean();

    private NativeMap(long address, long size) {
        this.address = address;
        this.size = size;
    }

    /**
     * Maps the whole file at {@code path} (its OS bytes, see {@link NativePaths}) read-only.
     *
     * @return the map, or {@code null} when this cannot map it (see the class comment)
     */
    public static NativeMap map(byte[] path) {
        if (!SUPPORTED) {
            return null;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(path.length + 1L);
            MemorySegment.copy(path, 0, p, JAVA_BYTE, 0, path.length);
            int fd = (int) OPEN.invokeExact(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0) {
                return null;
            }
            try {
                long size = (long) LSEEK.invokeExact(fd, 0L, SEEK_END);
                if (size <= 0) {
                    return null;
                }
                MemorySegment at = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, size, PROT_READ, MAP_SHARED,
                        fd, 0L);
                return at.address() == MAP_FAILED ? null : new NativeMap(at.address(), size);
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd); // the map keeps the file, not the descriptor
            }
        } catch (Throwable t) {
            throw new IllegalStateException("mapping a file through the C library failed", t);
        }
    }

    /** The first byte's address (page-aligned). */
    public long address() {
        return address;
    }

    /** The map's length in bytes: the file's size when it was mapped. */
    public long size() {
        return size;
    }

    /**
     * Unmaps. Once only (later calls do nothing); the caller guarantees that nothing reads the
     * map any more: every segment over it is closed and the native reader over it destroyed.
     */
    public void unmap() {
        if (unmapped.compareAndSet(false, true)) {
            try {
                int ignored = (int) MUNMAP.invokeExact(MemorySegment.ofAddress(address), size);
            } catch (Throwable t) {
                throw new IllegalStateException("munmap failed", t);
            }
        }
    }
}
