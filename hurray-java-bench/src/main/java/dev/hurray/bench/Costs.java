package dev.hurray.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.ffm.hurray_h;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Unit costs that explain per-tensor overheads on this machine: an FFM downcall, an upcall, making an
 * upcall stub, a confined arena, a shared arena, and first touch of fresh memory against reused memory. Each
 * is an {@link Sampler.Op} so {@link SideBySide} times them like everything else.
 */
final class Costs {
    private Costs() {
    }

    private static final MethodHandle QSORT;
    private static final MethodHandle COMPARE;

    static {
        Linker linker = Linker.nativeLinker();
        QSORT = linker.downcallHandle(linker.defaultLookup().find("qsort").orElseThrow(),
                FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
        try {
            COMPARE = MethodHandles.lookup().findStatic(Costs.class, "compare",
                    MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static int compare(MemorySegment a, MemorySegment b) {
        return Integer.compare(a.reinterpret(4).get(JAVA_INT, 0), b.reinterpret(4).get(JAVA_INT, 0));
    }

    /** The unit-cost operations, by name; {@code arena} owns what they keep. */
    static Map<String, Sampler.Op> ops(Arena arena, int freshBytes) {
        Map<String, Sampler.Op> m = new LinkedHashMap<>();
        m.put("downcall (hurray_c_abi_version)", () -> hurray_h.hurray_c_abi_version() * 0L);
        MemorySegment pair = arena.allocate(JAVA_INT, 2);
        pair.setAtIndex(JAVA_INT, 0, 2);
        pair.setAtIndex(JAVA_INT, 1, 1);
        MemorySegment cmp = Linker.nativeLinker().upcallStub(COMPARE,
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), arena);
        m.put("downcall + 1 upcall (qsort of 2 ints)", () -> {
            try {
                pair.setAtIndex(JAVA_INT, 0, 2);
                pair.setAtIndex(JAVA_INT, 1, 1);
                QSORT.invokeExact(pair, 2L, 4L, cmp);
                return 0;
            } catch (Throwable t) {
                throw new IOException(t);
            }
        });
        m.put("Arena.ofConfined + allocate 1 KiB + close", () -> {
            try (Arena a = Arena.ofConfined()) {
                return a.allocate(1024, 64).byteSize();
            }
        });
        m.put("upcall stub: create + free (confined arena)", () -> {
            try (Arena a = Arena.ofConfined()) {
                return Linker.nativeLinker().upcallStub(COMPARE, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), a)
                        .byteSize();
            }
        });
        m.put("Arena.ofShared + close", () -> {
            Arena a = Arena.ofShared();
            a.close();
            return 0;
        });
        m.put("fresh " + (freshBytes >> 20) + " MiB: allocate, fill, free", () -> {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment s = a.allocate(freshBytes, 64);
                s.fill((byte) 1);
                return freshBytes;
            }
        });
        MemorySegment reused = arena.allocate(freshBytes, 64);
        reused.fill((byte) 0);
        m.put("reused " + (freshBytes >> 20) + " MiB: fill", () -> {
            reused.fill((byte) 1);
            return freshBytes;
        });
        return m;
    }
}
