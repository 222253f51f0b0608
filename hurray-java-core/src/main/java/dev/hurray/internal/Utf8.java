package dev.hurray.internal;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import java.nio.charset.StandardCharsets;

/**
 * Strict UTF-8 for names, metadata keys and text values: a Java string with an unpaired
 * UTF-16 surrogate has no UTF-8 form, and {@link String#getBytes} would silently put {@code ?}
 * in its place, so two different Java names could become one name in the format.
 */
public final class Utf8 {
    private Utf8() {
    }

    /**
     * The UTF-8 bytes of {@code s}.
     *
     * @param what what {@code s} is, for the message (e.g. "name")
     * @throws HurrayException {@link Status#INVALID_ARGUMENT} if {@code s} holds an unpaired
     *     surrogate
     */
    public static byte[] encode(String s, String what) throws HurrayException {
        int bad = unpairedSurrogate(s);
        if (bad >= 0) {
            throw new HurrayException(Status.INVALID_ARGUMENT, what + " has an unpaired UTF-16 surrogate (U+"
                    + Integer.toHexString(s.charAt(bad)).toUpperCase(java.util.Locale.ROOT) + " at index " + bad
                    + "), which UTF-8 cannot encode", null);
        }
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The UTF-8 bytes of {@code s}, or null if it holds an unpaired surrogate (so no stored name can equal it). */
    public static byte[] encodeOrNull(String s) {
        return unpairedSurrogate(s) >= 0 ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    /** The index of the first unpaired surrogate in {@code s}, or -1. */
    static int unpairedSurrogate(String s) {
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                } else {
                    return i;
                }
            }
        }
        return -1;
    }
}
