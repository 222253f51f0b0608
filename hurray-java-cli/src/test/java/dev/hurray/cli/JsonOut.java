package dev.hurray.cli;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;

/** Reads the command's JSON output in tests: maps, lists, {@code BigInteger} integers, {@code Double} fractions. */
public final class JsonOut {
    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private JsonOut() {
    }

    /** One JSON document. */
    public static Object parse(byte[] bytes) {
        try {
            return JSON.readValue(bytes, Object.class);
        } catch (IOException e) {
            throw new UncheckedIOException("not a JSON document", e);
        }
    }
}
