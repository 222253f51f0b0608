package dev.hurray.formats;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteFeature;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON for the foreign formats, on jackson-core's streaming parser. Parses into plain Java
 * values: {@link Map} (insertion-ordered), {@link List}, {@link String}, {@link BigInteger}
 * (every integer), {@link Double} (every number with a fraction or exponent), {@link Boolean}
 * and {@code null}. Hostile input is bounded: nesting depth 64, strings of 16 MiB, numbers of
 * 1000 digits; duplicate object keys are an error. Callers bound the document size themselves
 * before reading it.
 */
final class Json {
    static final JsonFactory FACTORY = new JsonFactoryBuilder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxNestingDepth(64)
                    .maxStringLength(16 << 20)
                    .maxNumberLength(1000)
                    .build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
            .disable(StreamWriteFeature.AUTO_CLOSE_TARGET)
            .build();

    private Json() {
    }

    /** The shared, configured factory (thread-safe). */
    static JsonFactory factory() {
        return FACTORY;
    }

    /**
     * Parses one JSON document. {@code what} names the source in error messages.
     *
     * @throws ForeignFormatException on malformed JSON, a limit exceeded, a duplicate key, or
     *                                trailing content after the document
     */
    static Object parse(byte[] bytes, int offset, int length, String what) throws ForeignFormatException {
        try (JsonParser p = FACTORY.createParser(bytes, offset, length)) {
            JsonToken first = p.nextToken();
            if (first == null) {
                throw new ForeignFormatException(what + ": empty JSON");
            }
            Object v = value(p, first);
            if (p.nextToken() != null) {
                throw new ForeignFormatException(what + ": unexpected content after the JSON document");
            }
            return v;
        } catch (JsonProcessingException e) {
            // Stream-constraint violations (nesting, number or name length) carry no location.
            JsonLocation at = e.getLocation();
            throw new ForeignFormatException(what + ": invalid JSON: " + oneLine(e.getOriginalMessage())
                    + (at == null || at.getByteOffset() < 0 ? "" : " at byte " + at.getByteOffset()), e);
        } catch (ForeignFormatException e) {
            throw e;
        } catch (IOException e) {
            throw new ForeignFormatException(what + ": invalid JSON: " + oneLine(e.getMessage()), e);
        }
    }

    private static Object value(JsonParser p, JsonToken t) throws IOException {
        switch (t) {
            case START_OBJECT: {
                Map<String, Object> m = new LinkedHashMap<>();
                JsonToken k;
                while ((k = p.nextToken()) == JsonToken.FIELD_NAME) {
                    String key = p.currentName();
                    m.put(key, value(p, p.nextToken()));
                }
                if (k != JsonToken.END_OBJECT) {
                    throw new IOException("unterminated object");
                }
                return m;
            }
            case START_ARRAY: {
                List<Object> l = new ArrayList<>();
                JsonToken e;
                while ((e = p.nextToken()) != JsonToken.END_ARRAY) {
                    if (e == null) {
                        throw new IOException("unterminated array");
                    }
                    l.add(value(p, e));
                }
                return l;
            }
            case VALUE_STRING:
                return p.getText();
            case VALUE_NUMBER_INT:
                return p.getBigIntegerValue();
            case VALUE_NUMBER_FLOAT:
                return p.getDoubleValue();
            case VALUE_TRUE:
                return Boolean.TRUE;
            case VALUE_FALSE:
                return Boolean.FALSE;
            case VALUE_NULL:
                return null;
            default:
                throw new IOException("unexpected token " + t);
        }
    }

    /** Appends {@code s} as a JSON string literal (quoted and escaped). */
    static void quote(StringBuilder sb, String s) {
        sb.append('"').append(com.fasterxml.jackson.core.io.JsonStringEncoder.getInstance().quoteAsString(s)).append('"');
    }

    static String oneLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return (nl < 0 ? s : s.substring(0, nl)).trim();
    }

    /** JSON type name of a parsed value, for error messages. */
    static String typeOf(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Map) {
            return "object";
        }
        if (v instanceof List) {
            return "array";
        }
        if (v instanceof String) {
            return "string";
        }
        if (v instanceof Boolean) {
            return "boolean";
        }
        return "number";
    }

    /** The value as a JSON number (integer or not), or {@code null} when it is none. */
    static Double number(Object v) {
        if (v instanceof BigInteger b) {
            return b.doubleValue();
        }
        if (v instanceof Double d) {
            return d;
        }
        return null;
    }
}
