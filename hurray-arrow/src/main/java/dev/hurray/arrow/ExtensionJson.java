package dev.hurray.arrow;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.extension.InvalidExtensionMetadataException;

/**
 * Parsing and writing the tensor extension types' JSON metadata. Errors are Arrow's
 * {@link InvalidExtensionMetadataException}, which is what Arrow's IPC reader lets through when a
 * file declares a registered type with metadata it cannot take; every message names the type.
 */
final class ExtensionJson {
    /** The metadata is a handful of short arrays; anything nested deeper or longer is hostile. */
    private static final ObjectMapper MAPPER = new ObjectMapper(new JsonFactoryBuilder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxNestingDepth(8).maxNumberLength(32).maxStringLength(1 << 16).maxDocumentLength(1 << 20).build())
            .build());
    /** Hurray's rank limit bounds every array the metadata may hold. */
    static final int MAX_RANK = dev.hurray.Shape.MAX_RANK;

    private ExtensionJson() {
    }

    static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    static String write(ObjectNode node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialize " + node, e);
        }
    }

    static JsonNode parse(String type, String json) {
        JsonNode n;
        try {
            n = MAPPER.readTree(json == null ? "" : json);
        } catch (JsonProcessingException e) {
            throw bad(type, "metadata is not valid JSON (" + e.getOriginalMessage() + ")");
        }
        if (n == null || !n.isObject()) {
            throw bad(type, "metadata must be a JSON object, got " + abbreviate(json));
        }
        return n;
    }

    static InvalidExtensionMetadataException bad(String type, String what) {
        return new InvalidExtensionMetadataException(type + ": " + what);
    }

    /** A non-negative integer array of at most {@link #MAX_RANK} entries. */
    static long[] dims(String type, JsonNode obj, String key) {
        JsonNode a = obj.get(key);
        if (a == null || a.isNull()) {
            return null;
        }
        ArrayNode arr = array(type, a, key);
        long[] out = new long[arr.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode v = arr.get(i);
            if (!v.isIntegralNumber() || !v.canConvertToLong()) {
                throw bad(type, key + "[" + i + "] is not an integer: " + abbreviate(v.toString()));
            }
            out[i] = v.longValue();
            if (out[i] < 0) {
                throw bad(type, key + "[" + i + "] is negative: " + out[i]);
            }
        }
        return out;
    }

    /** {@code uniform_shape}: integers or nulls. */
    static Long[] optionalDims(String type, JsonNode obj, String key) {
        JsonNode a = obj.get(key);
        if (a == null || a.isNull()) {
            return null;
        }
        ArrayNode arr = array(type, a, key);
        Long[] out = new Long[arr.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode v = arr.get(i);
            if (v.isNull()) {
                continue;
            }
            if (!v.isIntegralNumber() || !v.canConvertToInt()) {
                throw bad(type, key + "[" + i + "] is not a 32-bit integer or null: " + abbreviate(v.toString()));
            }
            if (v.intValue() < 0) {
                throw bad(type, key + "[" + i + "] is negative: " + v.intValue());
            }
            out[i] = v.longValue();
        }
        return out;
    }

    static List<String> strings(String type, JsonNode obj, String key) {
        JsonNode a = obj.get(key);
        if (a == null || a.isNull()) {
            return null;
        }
        ArrayNode arr = array(type, a, key);
        List<String> out = new ArrayList<>(arr.size());
        for (int i = 0; i < arr.size(); i++) {
            JsonNode v = arr.get(i);
            if (!v.isTextual()) {
                throw bad(type, key + "[" + i + "] is not a string: " + abbreviate(v.toString()));
            }
            out.add(v.textValue());
        }
        return List.copyOf(out);
    }

    static int[] permutation(String type, JsonNode obj) {
        long[] p = dims(type, obj, "permutation");
        if (p == null) {
            return null;
        }
        int[] out = new int[p.length];
        for (int i = 0; i < p.length; i++) {
            out[i] = (int) Math.min(p[i], Integer.MAX_VALUE);
        }
        checkPermutation(type, out, out.length);
        return out;
    }

    /** Throws unless {@code p} holds each of 0..ndim-1 once. */
    static void checkPermutation(String type, int[] p, int ndim) {
        if (p.length != ndim) {
            throw bad(type, "permutation has " + p.length + " entries for " + ndim + " dimensions");
        }
        boolean[] seen = new boolean[ndim];
        for (int v : p) {
            if (v < 0 || v >= ndim || seen[v]) {
                throw bad(type, "permutation " + java.util.Arrays.toString(p) + " is not a permutation of 0.." + (ndim - 1));
            }
            seen[v] = true;
        }
    }

    static void checkRank(String type, int rank) {
        if (rank > MAX_RANK) {
            throw bad(type, rank + " dimensions exceed the maximum rank " + MAX_RANK);
        }
    }

    static void put(ObjectNode o, String key, long[] values) {
        ArrayNode a = o.putArray(key);
        for (long v : values) {
            a.add(v);
        }
    }

    static void put(ObjectNode o, String key, int[] values) {
        ArrayNode a = o.putArray(key);
        for (int v : values) {
            a.add(v);
        }
    }

    static void put(ObjectNode o, String key, List<String> values) {
        ArrayNode a = o.putArray(key);
        values.forEach(a::add);
    }

    private static ArrayNode array(String type, JsonNode a, String key) {
        if (!a.isArray()) {
            throw bad(type, key + " must be a JSON array, got " + abbreviate(a.toString()));
        }
        if (a.size() > MAX_RANK) {
            throw bad(type, key + " has " + a.size() + " entries; at most " + MAX_RANK + " dimensions are supported");
        }
        return (ArrayNode) a;
    }

    /** {@code ["a","b"]}. */
    static String stringArray(List<String> values) {
        ArrayNode a = MAPPER.createArrayNode();
        values.forEach(a::add);
        try {
            return MAPPER.writeValueAsString(a);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The strings of a JSON array, or null when {@code json} is not an array of strings. */
    static List<String> parseStringArray(String json) {
        try {
            JsonNode n = MAPPER.readTree(json);
            if (n == null || !n.isArray() || n.size() > MAX_RANK) {
                return null;
            }
            List<String> out = new ArrayList<>();
            for (JsonNode v : n) {
                if (!v.isTextual()) {
                    return null;
                }
                out.add(v.textValue());
            }
            return List.copyOf(out);
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    static String abbreviate(String s) {
        if (s == null) {
            return "null";
        }
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
    }
}
