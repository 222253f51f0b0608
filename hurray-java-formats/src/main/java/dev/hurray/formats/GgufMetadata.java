package dev.hurray.formats;

import dev.hurray.formats.Gguf.ValueType;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The typed text form of GGUF metadata (documented in {@link Gguf}, §Metadata): a value as text
 * plus a type record, and back to GGUF's binary encoding. Reading makes both from a
 * {@link Gguf.Value}; writing parses them again, checking every value against its type and
 * encoding it directly (no boxed element lists, so the bytes produced stay proportional to the
 * text given).
 */
final class GgufMetadata {
    /** The most arrays nested in one value (the reader's bound). */
    static final int MAX_ARRAY_DEPTH = 4;
    private static final BigInteger U64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
    private static final Pattern INTEGER = Pattern.compile("-?(0|[1-9][0-9]{0,19})");
    private static final Pattern DECIMAL = Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?");

    private GgufMetadata() {
    }

    /**
     * A parsed type record: a scalar type; an array of a scalar element type
     * ({@code elements == null}); or an array of arrays, one type per element.
     */
    record Type(ValueType type, ValueType elementType, List<Type> elements) {
    }

    // ------------------------------------------------------------------ read side: value -> text

    /** The type record of {@code v}: {@code uint32}, {@code array[string]}, {@code array[array[int32],array[bool]]}. */
    static String typeRecord(Gguf.Value v) {
        StringBuilder sb = new StringBuilder();
        appendType(sb, v);
        return sb.toString();
    }

    private static void appendType(StringBuilder sb, Gguf.Value v) {
        sb.append(name(v.type()));
        if (v.type() != ValueType.ARRAY) {
            return;
        }
        sb.append('[');
        if (v.elementType() != ValueType.ARRAY) {
            sb.append(name(v.elementType()));
        } else {
            boolean first = true;
            for (Object o : (List<?>) v.value()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                appendType(sb, (Gguf.Value) o);
            }
        }
        sb.append(']');
    }

    static String name(ValueType t) {
        return t.name().toLowerCase(Locale.ROOT);
    }

    /** The text of a FLOAT32: Java's shortest decimal that reads back as the same float. */
    static String float32Text(double v) {
        return Float.toString((float) v);
    }

    // ------------------------------------------------------------------ write side: text -> bytes

    /**
     * Parses a type record (the grammar in {@link Gguf}).
     *
     * @throws ForeignFormatException naming {@code key} if the record is malformed or nests
     *     arrays deeper than {@value #MAX_ARRAY_DEPTH}
     */
    static Type parseType(String record, String key) throws ForeignFormatException {
        Text c = new Text(record, key, "type record '" + clip(record) + "'");
        Type t = type(c, 0);
        if (c.pos != record.length()) {
            throw c.error("unexpected '" + clip(record.substring(c.pos)) + "'");
        }
        return t;
    }

    private static Type type(Text c, int depth) throws ForeignFormatException {
        ValueType t = typeName(c);
        if (t != ValueType.ARRAY) {
            return new Type(t, null, null);
        }
        if (depth >= MAX_ARRAY_DEPTH) {
            throw c.error("arrays nested deeper than " + MAX_ARRAY_DEPTH);
        }
        c.expect('[');
        if (c.peek() == ']') {
            c.pos++;
            return new Type(ValueType.ARRAY, ValueType.ARRAY, List.of());
        }
        int start = c.pos;
        ValueType first = typeName(c);
        if (first != ValueType.ARRAY) {
            c.expect(']');
            return new Type(ValueType.ARRAY, first, null);
        }
        c.pos = start;
        List<Type> elements = new ArrayList<>();
        while (true) {
            int at = c.pos;
            Type e = type(c, depth + 1);
            if (e.type() != ValueType.ARRAY) {
                c.pos = at;
                throw c.error("an array of arrays lists only array types, not " + name(e.type()));
            }
            elements.add(e);
            if (c.peek() == ']') {
                c.pos++;
                return new Type(ValueType.ARRAY, ValueType.ARRAY, elements);
            }
            c.expect(',');
        }
    }

    private static ValueType typeName(Text c) throws ForeignFormatException {
        int start = c.pos;
        while (c.pos < c.s.length() && (Character.isLetterOrDigit(c.s.charAt(c.pos)))) {
            c.pos++;
        }
        String n = c.s.substring(start, c.pos);
        for (ValueType t : ValueType.values()) {
            if (name(t).equals(n)) {
                return t;
            }
        }
        c.pos = start;
        throw c.error("unknown type '" + clip(n) + "' (uint8, int8, uint16, int16, uint32, int32, uint64, int64, "
                + "float32, float64, bool, string or array[…])");
    }

    /**
     * Encodes {@code text} as a value of type {@code t} (the value only, not its type code).
     *
     * @throws ForeignFormatException naming {@code key} if the text is not a value of that type
     */
    static void encode(Type t, String text, String key, Bytes out) throws ForeignFormatException {
        if (t.type() == ValueType.STRING) {
            out.string(text, "metadata '" + dev.hurray.TensorNames.forMessage(key) + "'");
            return;
        }
        Text c = new Text(text, key, "value '" + clip(text) + "'");
        if (t.type() == ValueType.ARRAY) {
            c.ws();
            array(c, t, out);
            c.ws();
        } else {
            scalar(c, t.type(), out);
        }
        if (c.pos != text.length()) {
            throw c.error("is not one " + describe(t) + " (unexpected '" + clip(text.substring(c.pos)) + "')");
        }
    }

    private static String describe(Type t) {
        return t.type() != ValueType.ARRAY ? name(t.type())
                : t.elements() == null ? "array of " + name(t.elementType())
                : "array of " + t.elements().size() + " arrays";
    }

    private static void array(Text c, Type t, Bytes out) throws ForeignFormatException {
        c.expect('[');
        out.u32(t.elementType().code());
        int countAt = out.size();
        out.u64(0); // patched below, once the elements are counted
        long n = 0;
        c.ws();
        if (c.peek() == ']') {
            c.pos++;
        } else {
            while (true) {
                if (t.elements() != null) {
                    if (n == t.elements().size()) {
                        throw c.error("has more elements than the " + n + " arrays its type record lists");
                    }
                    array(c, t.elements().get((int) n), out);
                } else {
                    scalar(c, t.elementType(), out);
                }
                n++;
                c.ws();
                if (c.peek() == ']') {
                    c.pos++;
                    break;
                }
                c.expect(',');
                c.ws();
            }
        }
        if (t.elements() != null && n != t.elements().size()) {
            throw c.error("has " + n + " elements, its type record lists " + t.elements().size() + " arrays");
        }
        out.patchU64(countAt, n);
    }

    private static void scalar(Text c, ValueType t, Bytes out) throws ForeignFormatException {
        switch (t) {
            case STRING -> out.string(c.jsonString(), "metadata '" + dev.hurray.TensorNames.forMessage(c.key) + "'");
            case BOOL -> {
                if (c.s.startsWith("true", c.pos)) {
                    c.pos += 4;
                    out.u8(1);
                } else if (c.s.startsWith("false", c.pos)) {
                    c.pos += 5;
                    out.u8(0);
                } else {
                    throw c.error("has no bool (true or false) at character " + c.pos);
                }
            }
            case FLOAT32 -> out.u32(Float.floatToIntBits(floatToken(c, true).floatValue()));
            case FLOAT64 -> out.u64(Double.doubleToLongBits(floatToken(c, false).doubleValue()));
            case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> {
                long v = integer(c, t);
                switch (t.minBytes()) {
                    case 1 -> out.u8((int) v);
                    case 2 -> out.u16((int) v);
                    case 4 -> out.u32((int) v);
                    default -> out.u64(v);
                }
            }
            case ARRAY -> throw new AssertionError("arrays are parsed by array()");
        }
    }

    /** A JSON integer in {@code t}'s range, as its two's-complement bits. */
    private static long integer(Text c, ValueType t) throws ForeignFormatException {
        int start = c.pos;
        String tok = c.number();
        if (!INTEGER.matcher(tok).matches()) {
            c.pos = start;
            throw c.error("has no " + name(t) + " (a decimal integer) at character " + start);
        }
        BigInteger v = new BigInteger(tok);
        BigInteger lo;
        BigInteger hi;
        boolean unsigned = t == ValueType.UINT8 || t == ValueType.UINT16 || t == ValueType.UINT32 || t == ValueType.UINT64;
        int bits = t.minBytes() * 8;
        if (unsigned) {
            lo = BigInteger.ZERO;
            hi = bits == 64 ? U64_MAX : BigInteger.ONE.shiftLeft(bits).subtract(BigInteger.ONE);
        } else {
            lo = BigInteger.ONE.shiftLeft(bits - 1).negate();
            hi = BigInteger.ONE.shiftLeft(bits - 1).subtract(BigInteger.ONE);
        }
        if (v.compareTo(lo) < 0 || v.compareTo(hi) > 0) {
            c.pos = start;
            throw c.error(tok + " is out of range for " + name(t));
        }
        return v.longValue();
    }

    /** A JSON number, NaN, Infinity or -Infinity, as a float32 or float64. */
    private static Number floatToken(Text c, boolean single) throws ForeignFormatException {
        int start = c.pos;
        String tok = c.number();
        String type = single ? "float32" : "float64";
        switch (tok) {
            case "NaN" -> {
                return single ? (Number) Float.NaN : (Number) Double.NaN;
            }
            case "Infinity" -> {
                return single ? (Number) Float.POSITIVE_INFINITY : (Number) Double.POSITIVE_INFINITY;
            }
            case "-Infinity" -> {
                return single ? (Number) Float.NEGATIVE_INFINITY : (Number) Double.NEGATIVE_INFINITY;
            }
            default -> {
            }
        }
        if (!DECIMAL.matcher(tok).matches()) {
            c.pos = start;
            throw c.error("has no " + type + " (a decimal number, NaN, Infinity or -Infinity) at character " + start);
        }
        Number v = single ? (Number) Float.parseFloat(tok) : (Number) Double.parseDouble(tok);
        if (Double.isInfinite(v.doubleValue())) {
            c.pos = start;
            throw c.error(clip(tok) + " is out of range for " + type);
        }
        return v;
    }

    /** Parses a JSON array of strings (the key order record). */
    static List<String> stringArray(String text, String key) throws ForeignFormatException {
        Text c = new Text(text, key, "value '" + clip(text) + "'");
        List<String> out = new ArrayList<>();
        c.ws();
        c.expect('[');
        c.ws();
        if (c.peek() == ']') {
            c.pos++;
        } else {
            while (true) {
                out.add(c.jsonString());
                c.ws();
                if (c.peek() == ']') {
                    c.pos++;
                    break;
                }
                c.expect(',');
                c.ws();
            }
        }
        c.ws();
        if (c.pos != text.length()) {
            throw c.error("is not one JSON array of strings");
        }
        return out;
    }

    static String clip(String s) {
        return s.length() <= 40 ? s : s.substring(0, 37) + "...";
    }

    /** A position in one record's text, with errors that name the key and the record. */
    private static final class Text {
        final String s;
        final String key;
        final String what;
        int pos;

        Text(String s, String key, String what) {
            this.s = s;
            this.key = key;
            this.what = what;
        }

        ForeignFormatException error(String problem) {
            return new ForeignFormatException(("metadata '" + clip(key) + "': " + what + " " + problem)
                    .replace('\n', ' ').replace('\r', ' '));
        }

        int peek() {
            return pos < s.length() ? s.charAt(pos) : -1;
        }

        void expect(char ch) throws ForeignFormatException {
            if (peek() != ch) {
                throw error("needs '" + ch + "' at character " + pos);
            }
            pos++;
        }

        void ws() {
            while (pos < s.length() && (s.charAt(pos) == ' ' || s.charAt(pos) == '\t' || s.charAt(pos) == '\n'
                    || s.charAt(pos) == '\r')) {
                pos++;
            }
        }

        /** The characters of a number token (digits, signs, '.', exponent, NaN, Infinity). */
        String number() {
            int start = pos;
            while (pos < s.length() && pos - start < 1100) {
                char ch = s.charAt(pos);
                if ((ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || Character.isLetter(ch)) {
                    pos++;
                } else {
                    break;
                }
            }
            return s.substring(start, pos);
        }

        /** A JSON string literal (RFC 8259 escapes; raw control characters refused). */
        String jsonString() throws ForeignFormatException {
            expect('"');
            StringBuilder sb = new StringBuilder();
            while (true) {
                if (pos >= s.length()) {
                    throw error("has an unterminated string");
                }
                char ch = s.charAt(pos++);
                if (ch == '"') {
                    return sb.toString();
                }
                if (ch < 0x20) {
                    throw error("has a raw control character in a string at character " + (pos - 1));
                }
                if (ch != '\\') {
                    sb.append(ch);
                    continue;
                }
                if (pos >= s.length()) {
                    throw error("has an unterminated string");
                }
                char e = s.charAt(pos++);
                switch (e) {
                    case '"', '\\', '/' -> sb.append(e);
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'u' -> {
                        if (pos + 4 > s.length()) {
                            throw error("has a truncated \\u escape");
                        }
                        int cp = 0;
                        for (int i = 0; i < 4; i++) {
                            int d = Character.digit(s.charAt(pos + i), 16);
                            if (d < 0) {
                                throw error("has a malformed \\u escape at character " + (pos - 2));
                            }
                            cp = cp << 4 | d;
                        }
                        pos += 4;
                        sb.append((char) cp);
                    }
                    default -> throw error("has an unknown escape \\" + e + " at character " + (pos - 2));
                }
            }
        }
    }

    /** A growable little-endian byte buffer (the GGUF header being built). */
    static final class Bytes {
        private byte[] b = new byte[4096];
        /** Strict: an unpaired surrogate is an error, not a silent {@code ?}. One per writer, reset per string. */
        private final java.nio.charset.CharsetEncoder utf8 = java.nio.charset.StandardCharsets.UTF_8.newEncoder()
                .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
                .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT);
        private int n;

        int size() {
            return n;
        }

        private void ensure(int more) throws ForeignFormatException {
            if (more > Integer.MAX_VALUE - 16 - n) {
                throw new ForeignFormatException("the GGUF header would exceed 2 GiB");
            }
            if (n + more > b.length) {
                b = Arrays.copyOf(b, (int) Math.min(Integer.MAX_VALUE - 16L, Math.max((long) n + more, 2L * b.length)));
            }
        }

        void u8(int v) throws ForeignFormatException {
            ensure(1);
            b[n++] = (byte) v;
        }

        void u16(int v) throws ForeignFormatException {
            ensure(2);
            b[n++] = (byte) v;
            b[n++] = (byte) (v >>> 8);
        }

        void u32(int v) throws ForeignFormatException {
            ensure(4);
            for (int i = 0; i < 4; i++) {
                b[n++] = (byte) (v >>> (8 * i));
            }
        }

        void u64(long v) throws ForeignFormatException {
            ensure(8);
            for (int i = 0; i < 8; i++) {
                b[n++] = (byte) (v >>> (8 * i));
            }
        }

        void patchU64(int at, long v) {
            for (int i = 0; i < 8; i++) {
                b[at + i] = (byte) (v >>> (8 * i));
            }
        }

        /** A GGUF string: u64 length and UTF-8 bytes; text that is not valid Unicode is refused. */
        void string(String s, String what) throws ForeignFormatException {
            java.nio.ByteBuffer u;
            try {
                u = utf8.reset().encode(java.nio.CharBuffer.wrap(s));
            } catch (java.nio.charset.CharacterCodingException e) {
                throw new ForeignFormatException(what + ": a string that is not valid Unicode (an unpaired surrogate)");
            }
            int len = u.remaining();
            u64(len);
            ensure(len);
            u.get(b, n, len);
            n += len;
        }

        void pad(int alignment) throws ForeignFormatException {
            int p = (alignment - n % alignment) % alignment;
            ensure(p);
            n += p; // the array is zeroed beyond n
        }

        ByteBuffer toByteBuffer() {
            return ByteBuffer.wrap(b, 0, n);
        }
    }
}
