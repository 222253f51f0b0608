package dev.hurray.formats;

import java.util.List;
import java.util.Map;

/** Renders parsed Python literals back to Python syntax, for error messages. */
final class PyLiteralFormat {
    private PyLiteralFormat() {
    }

    static String repr(Object v) {
        StringBuilder b = new StringBuilder();
        append(b, v);
        String s = b.toString();
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    private static void append(StringBuilder b, Object v) {
        if (v == null) {
            b.append("None");
        } else if (v instanceof String s) {
            b.append('\'').append(s).append('\'');
        } else if (v instanceof Boolean z) {
            b.append(z ? "True" : "False");
        } else if (v instanceof PyLiteral.Tuple t) {
            b.append('(');
            join(b, t.items());
            if (t.items().size() == 1) {
                b.append(',');
            }
            b.append(')');
        } else if (v instanceof List<?> l) {
            b.append('[');
            join(b, l);
            b.append(']');
        } else if (v instanceof Map<?, ?> m) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    b.append(", ");
                }
                first = false;
                append(b, e.getKey());
                b.append(": ");
                append(b, e.getValue());
            }
            b.append('}');
        } else {
            b.append(v);
        }
    }

    private static void join(StringBuilder b, List<?> items) {
        for (int i = 0; i < items.size(); i++) {
            if (i > 0) {
                b.append(", ");
            }
            append(b, items.get(i));
        }
    }
}
