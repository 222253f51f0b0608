package dev.hurray.formats;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict parser for the Python literal subset an npy header uses: dicts, tuples, lists,
 * single- or double-quoted strings (escapes {@code \\ \' \"} only), decimal integers (an
 * optional trailing {@code L}, as Python 2 NumPy wrote shape entries), {@code True},
 * {@code False} and {@code None}. Anything else — expressions, calls, floats, other escapes —
 * is an error: the header is data, and nothing in it is evaluated.
 *
 * <p>Values map to {@link Map} (insertion-ordered; duplicate keys are an error), {@link Tuple},
 * {@link List}, {@link String}, {@link BigInteger}, {@link Boolean} and {@code null}.
 */
final class PyLiteral {
    /** A Python tuple (kept apart from lists: npy shapes must be tuples). */
    record Tuple(List<Object> items) {
    }

    private static final int MAX_DEPTH = 32;
    private static final int MAX_INT_DIGITS = 40;

    private final String s;
    private int pos;

    private PyLiteral(String s) {
        this.s = s;
    }

    /**
     * Parses {@code text}, which must hold one literal and nothing else but whitespace.
     *
     * @throws IllegalArgumentException with a message naming the offending position
     */
    static Object parse(String text) {
        PyLiteral p = new PyLiteral(text);
        p.skipSpace();
        Object v = p.value(0);
        p.skipSpace();
        if (p.pos != text.length()) {
            throw p.error("unexpected text after the literal");
        }
        return v;
    }

    private IllegalArgumentException error(String msg) {
        return new IllegalArgumentException(msg + " at character " + pos);
    }

    private void skipSpace() {
        while (pos < s.length()) {
            char c = s.charAt(pos);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                pos++;
            } else {
                break;
            }
        }
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nesting deeper than " + MAX_DEPTH);
        }
        if (pos >= s.length()) {
            throw error("unexpected end");
        }
        char c = s.charAt(pos);
        switch (c) {
            case '{':
                return dict(depth);
            case '(': {
                pos++;
                List<Object> items = new ArrayList<>();
                boolean comma = sequence(')', items, depth);
                if (items.size() == 1 && !comma) {
                    return items.get(0); // a parenthesised value, not a tuple
                }
                return new Tuple(List.copyOf(items));
            }
            case '[': {
                pos++;
                List<Object> items = new ArrayList<>();
                sequence(']', items, depth);
                return items;
            }
            case '\'':
            case '"':
                return string(c);
            default:
                if (c == '-' || c == '+' || (c >= '0' && c <= '9')) {
                    return integer();
                }
                if (s.startsWith("True", pos)) {
                    pos += 4;
                    return Boolean.TRUE;
                }
                if (s.startsWith("False", pos)) {
                    pos += 5;
                    return Boolean.FALSE;
                }
                if (s.startsWith("None", pos)) {
                    pos += 4;
                    return null;
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    /** Parses items up to {@code close}; returns whether the last item was followed by a comma. */
    private boolean sequence(char close, List<Object> items, int depth) {
        boolean trailingComma = false;
        while (true) {
            skipSpace();
            if (pos < s.length() && s.charAt(pos) == close) {
                pos++;
                return trailingComma;
            }
            if (!items.isEmpty() && !trailingComma) {
                throw error("expected ',' or '" + close + "'");
            }
            items.add(value(depth + 1));
            skipSpace();
            trailingComma = pos < s.length() && s.charAt(pos) == ',';
            if (trailingComma) {
                pos++;
            }
        }
    }

    private Map<Object, Object> dict(int depth) {
        pos++; // '{'
        Map<Object, Object> m = new LinkedHashMap<>();
        boolean needComma = false;
        while (true) {
            skipSpace();
            if (pos < s.length() && s.charAt(pos) == '}') {
                pos++;
                return m;
            }
            if (needComma) {
                throw error("expected ',' or '}'");
            }
            Object key = value(depth + 1);
            if (!(key instanceof String)) {
                throw error("dict keys must be strings");
            }
            skipSpace();
            if (pos >= s.length() || s.charAt(pos) != ':') {
                throw error("expected ':'");
            }
            pos++;
            skipSpace();
            Object v = value(depth + 1);
            if (m.containsKey(key)) {
                throw error("duplicate key '" + dev.hurray.TensorNames.forMessage(String.valueOf(key)) + "'");
            }
            m.put(key, v);
            skipSpace();
            if (pos < s.length() && s.charAt(pos) == ',') {
                pos++;
                needComma = false;
            } else {
                needComma = true;
            }
        }
    }

    private String string(char quote) {
        pos++;
        StringBuilder b = new StringBuilder();
        while (true) {
            if (pos >= s.length()) {
                throw error("unterminated string");
            }
            char c = s.charAt(pos++);
            if (c == quote) {
                return b.toString();
            }
            if (c == '\n') {
                throw error("newline in string");
            }
            if (c == '\\') {
                if (pos >= s.length()) {
                    throw error("unterminated string");
                }
                char e = s.charAt(pos++);
                if (e != '\\' && e != '\'' && e != '"') {
                    throw error("unsupported escape '\\" + e + "'");
                }
                b.append(e);
            } else {
                b.append(c);
            }
        }
    }

    private BigInteger integer() {
        int start = pos;
        if (s.charAt(pos) == '-' || s.charAt(pos) == '+') {
            pos++;
        }
        int digits = pos;
        while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') {
            pos++;
        }
        if (pos == digits) {
            throw error("expected digits");
        }
        if (pos - digits > MAX_INT_DIGITS) {
            throw error("integer longer than " + MAX_INT_DIGITS + " digits");
        }
        if (pos - digits > 1 && s.charAt(digits) == '0') {
            throw error("integer with a leading zero");
        }
        BigInteger v = new BigInteger(s.substring(start, pos));
        if (pos < s.length() && (s.charAt(pos) == 'L' || s.charAt(pos) == 'l')) {
            pos++;
        }
        if (pos < s.length() && (s.charAt(pos) == '.' || s.charAt(pos) == 'e' || s.charAt(pos) == 'E'
                || s.charAt(pos) == 'x' || s.charAt(pos) == 'j' || s.charAt(pos) == '_')) {
            throw error("only decimal integers are allowed");
        }
        return v;
    }
}
