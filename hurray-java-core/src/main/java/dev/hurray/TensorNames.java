package dev.hurray;

import dev.hurray.internal.NativeNames;
import java.util.Objects;

/**
 * The one rule for tensor names (docs/spec/descriptor.md, "Names"), applied by the native core
 * so every reader, writer and tool agrees.
 *
 * <p>A tensor name is at most 4096 bytes of UTF-8 with no NUL character. Inside Hurray it is an
 * opaque key: {@code /}, {@code .} and {@code ..} mean nothing, so {@code "../x"} is a valid
 * name. Code that turns a name into a path (an npz member name, a file next to a manifest) must
 * first call {@link #checkPath}: it refuses anything but a portable relative path, so a hostile
 * name is reported, never written verbatim. Readers of foreign formats apply {@link #check} to
 * every name they take, so {@code inspect}, {@code verify} and {@code convert} refuse the same
 * inputs. Thread-safe; stateless.
 */
public final class TensorNames {
    private TensorNames() {
    }

    /**
     * Checks a tensor name: at most 4096 UTF-8 bytes, no NUL.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} (a NUL, with its byte offset in the
     *     message) or {@link Status#LIMIT_EXCEEDED} (too long)
     */
    public static void check(String name) throws HurrayException {
        NativeNames.check(Objects.requireNonNull(name, "name"), false);
    }

    /**
     * Checks that a tensor name can be used verbatim as a relative path in an archive or folder:
     * a valid name, non-empty, {@code /}-separated segments none of which is empty, {@code .} or
     * {@code ..}, and no {@code \}, {@code :}, control character or leading {@code /}.
     *
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} naming the offending part, or as
     *     {@link #check}
     */
    public static void checkPath(String name) throws HurrayException {
        NativeNames.check(Objects.requireNonNull(name, "name"), true);
    }

    /** The most characters of a name {@link #forMessage} shows. */
    public static final int MESSAGE_CHARS = 64;

    /**
     * {@code name} as an error message shows it: control characters as {@code \xHH}, and a
     * name longer than {@link #MESSAGE_CHARS} characters clipped to its first ones followed by
     * {@code "… (N bytes)"}, N its UTF-8 length, so that no message carries a whole long name.
     * Any string is accepted (also one the name rule refuses).
     */
    public static String forMessage(String name) {
        if (name == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(Math.min(name.length(), MESSAGE_CHARS + 24));
        int shown = 0;
        int i = 0;
        while (i < name.length()) {
            int c = name.codePointAt(i);
            if (shown == MESSAGE_CHARS) {
                long bytes = name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
                return b.append("… (").append(bytes).append(" bytes)").toString();
            }
            if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
                b.append(String.format("\\x%02x", c));
            } else {
                b.appendCodePoint(c);
            }
            shown++;
            i += Character.charCount(c);
        }
        return b.toString();
    }

    /** Whether {@link #checkPath} accepts {@code name}. */
    public static boolean isPath(String name) {
        try {
            checkPath(name);
            return true;
        } catch (HurrayException e) {
            return false;
        }
    }
}
