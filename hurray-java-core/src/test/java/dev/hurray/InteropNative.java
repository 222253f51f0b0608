package dev.hurray;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The interop tests' native helper ({@code src/test/c/interop_helpers.c}), compiled with gcc (or
 * {@code $CC}) into {@code target/} on first use and loaded through FFM.
 */
public final class InteropNative {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIB = load();

    static final MethodHandle CALL_ON_NEW_THREAD = fn("interop_call_on_new_thread",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle DLPACK_CONSUME = fn("interop_dlpack_consume",
            FunctionDescriptor.of(JAVA_DOUBLE, ADDRESS, ADDRESS, JAVA_INT));
    static final MethodHandle DLPACK_MAKE_F32 = fn("interop_dlpack_make_f32",
            FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS));
    static final MethodHandle FREE = fn("interop_free", FunctionDescriptor.ofVoid(ADDRESS));

    private InteropNative() {
    }

    /** Calls {@code int32_t fn(void **slot)} (a {@code hurray_*_destroy}) on a new native thread with {@code handle} in the slot. */
    static int destroyOnNativeThread(MemorySegment destroyFn, MemorySegment handle) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment slot = a.allocate(ADDRESS);
            slot.set(ADDRESS, 0, handle);
            return (int) CALL_ON_NEW_THREAD.invokeExact(destroyFn, slot);
        }
    }

    /** The address of a libhurray function. */
    static MemorySegment hurrayFunction(String name) {
        return dev.hurray.ffm.NativeLibrary.lookup().find(name).orElseThrow();
    }

    private static MethodHandle fn(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(LIB.find(name).orElseThrow(), d);
    }

    private static SymbolLookup load() {
        try {
            Path root = Path.of("").toAbsolutePath();
            while (root != null && !Files.isRegularFile(root.resolve("hurray.h"))) {
                root = root.getParent();
            }
            if (root == null) {
                throw new AssertionError("hurray.h not found above " + Path.of("").toAbsolutePath());
            }
            Path src = root.resolve("hurray-java-core/src/test/c/interop_helpers.c");
            Path lib = root.resolve("hurray-java-core/target/libinterop_helpers.so");
            Files.createDirectories(lib.getParent());
            String cc = System.getenv().getOrDefault("CC", "gcc");
            run(List.of(cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC", "-pthread",
                    src.toString(), "-o", lib.toString()));
            return SymbolLookup.libraryLookup(lib, Arena.global());
        } catch (IOException | InterruptedException e) {
            throw new AssertionError("could not build the interop test helper with gcc (install gcc or set CC)", e);
        }
    }

    private static void run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new AssertionError(String.join(" ", cmd) + " failed:\n" + out);
        }
    }
}
