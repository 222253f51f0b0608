package dev.hurray.internal;

import dev.hurray.HurrayException;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/** {@code hurray_name_check}: the core's tensor-name rule (docs/spec/descriptor.md §Names). */
public final class NativeNames {
    private NativeNames() {
    }

    /**
     * Checks {@code name} against the rule, as a portable relative path too when {@code path}.
     *
     * @throws HurrayException {@code INVALID_ARGUMENT} or {@code LIMIT_EXCEEDED} with the core's reason
     */
    public static void check(String name, boolean path) throws HurrayException {
        byte[] utf8 = Utf8.encode(name, "name");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = utf8.length == 0 ? MemorySegment.NULL : a.allocateFrom(ValueLayout.JAVA_BYTE, utf8);
            Native.check(hurray_h.hurray_name_check(s, utf8.length, path ? hurray_h.HURRAY_NAME_PATH() : 0));
        }
    }
}
