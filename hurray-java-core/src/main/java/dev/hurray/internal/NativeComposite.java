package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.ffm.HurrayIoSlice;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Composite handles through the C ABI (docs/spec/c-abi.md §Sparse, paged and composite
 * tensors): walking an owned {@code HurrayComposite*} and building a
 * {@code HurrayCompositeBuilder*} to write. No format logic: the native library assembles,
 * validates and frames composites.
 *
 * <p>Not thread-safe per handle; the public classes serialise access. No upcalls.
 */
public final class NativeComposite {
    private NativeComposite() {}

    /** One direct member: its role and either a borrowed tensor or a borrowed composite. */
    public record Member(String role, MemorySegment tensor, MemorySegment composite) {}

    /** The borrowed head descriptor of {@code c}. */
    public static MemorySegment head(MemorySegment c) throws HurrayException {
        return ScratchPool.outAddress(s -> hurray_h.hurray_composite_head(c, s));
    }

    /** Direct members of {@code c}, borrowed (valid until the root is destroyed). */
    public static Member[] members(MemorySegment c) throws HurrayException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(8 * 4, 8);
            Native.check(hurray_h.hurray_composite_member_count(c, out));
            int n = (int) out.get(JAVA_LONG, 0);
            Member[] m = new Member[n];
            for (int i = 0; i < n; i++) {
                Native.check(hurray_h.hurray_composite_member(c, i, out, out.asSlice(8), out.asSlice(16), out.asSlice(24)));
                String role = new String(out.get(ADDRESS, 0).reinterpret(out.get(JAVA_LONG, 8)).toArray(JAVA_BYTE),
                        StandardCharsets.UTF_8);
                MemorySegment t = out.get(ADDRESS, 16);
                MemorySegment k = out.get(ADDRESS, 24);
                m[i] = new Member(role, t.equals(MemorySegment.NULL) ? null : t, k.equals(MemorySegment.NULL) ? null : k);
            }
            return m;
        }
    }

    /** Destroys an owned composite and every member. */
    public static void destroy(MemorySegment c) {
        ScratchPool.destroyThroughSlot(c, hurray_h::hurray_composite_destroy);
    }

    /** A member to add to a builder: a tensor (descriptor + native payloads) or a nested builder spec. */
    public record Spec(String name, List<Entry> entries) {}

    /** One entry of a {@link Spec}: exactly one of {@code descriptor} or {@code nested} is set. */
    public record Entry(String role, MemorySegment descriptor, MemorySegment[] payloads, Spec nested) {}

    /**
     * Builds a native composite builder for {@code spec} in {@code arena} (the slice arrays and
     * strings live there; the payload segments are borrowed and must stay alive until the
     * builder is used and destroyed). The caller destroys the returned builder with
     * {@link #destroyBuilder}.
     */
    public static MemorySegment builder(Spec spec, Arena arena) throws HurrayException {
        MemorySegment slot = arena.allocate(ADDRESS);
        byte[] name = spec.name() == null ? new byte[0] : Utf8.encode(spec.name(), "composite name");
        Native.check(hurray_h.hurray_composite_builder_new(bytes(arena, name), name.length, slot));
        MemorySegment b = slot.get(ADDRESS, 0);
        try {
            for (Entry e : spec.entries()) {
                byte[] role = Utf8.encode(e.role(), "member role");
                if (e.nested() != null) {
                    MemorySegment child = builder(e.nested(), arena);
                    MemorySegment cs = arena.allocate(ADDRESS);
                    cs.set(ADDRESS, 0, child);
                    int rc = hurray_h.hurray_composite_builder_add_composite(b, bytes(arena, role), role.length, cs);
                    if (rc != Native.OK) {
                        destroyBuilder(child);
                        Native.check(rc);
                    }
                } else {
                    long size = HurrayIoSlice.layout().byteSize();
                    MemorySegment slices = arena.allocate(size * Math.max(1, e.payloads().length), 8);
                    for (int i = 0; i < e.payloads().length; i++) {
                        MemorySegment s = slices.asSlice(i * size, size);
                        MemorySegment p = e.payloads()[i];
                        HurrayIoSlice.ptr(s, p.byteSize() == 0 ? MemorySegment.NULL : p);
                        HurrayIoSlice.len(s, p.byteSize());
                    }
                    Native.check(hurray_h.hurray_composite_builder_add_tensor(b, bytes(arena, role), role.length,
                            e.descriptor(), slices, e.payloads().length));
                }
            }
            return b;
        } catch (HurrayException | RuntimeException | Error ex) {
            destroyBuilder(b);
            throw ex;
        }
    }

    /** Destroys a builder made by {@link #builder}. */
    public static void destroyBuilder(MemorySegment b) {
        ScratchPool.destroyThroughSlot(b, hurray_h::hurray_composite_builder_destroy);
    }

    private static MemorySegment bytes(Arena a, byte[] b) {
        return b.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, b);
    }
}
