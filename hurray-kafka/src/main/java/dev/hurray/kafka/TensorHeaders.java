package dev.hurray.kafka;

import dev.hurray.ElementType;
import dev.hurray.TensorDescriptor;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * The record headers {@link HurrayTensorSerializer} adds, so that consumers, interceptors and
 * stream processors can route or filter records without decoding them. All values are UTF-8
 * text. They describe the tensor the record carries (for a claim-check reference, the tensor
 * the reference names); the record value stays the source of truth, and the deserializer
 * ignores the headers.
 *
 * <table>
 * <caption>Headers</caption>
 * <tr><th>key</th><th>value</th><th>example</th></tr>
 * <tr><td>{@value #DTYPE}</td><td>element type, {@link ElementType#formatName()}</td><td>{@code float32}</td></tr>
 * <tr><td>{@value #SHAPE}</td><td>dimensions, outermost first, in brackets</td><td>{@code [2,768]}; a scalar is {@code []}</td></tr>
 * <tr><td>{@value #NAME}</td><td>the tensor's name, when it has one</td><td>{@code layer0/weights}</td></tr>
 * <tr><td>{@value #CLAIM_CHECK}</td><td>present only on claim-check references: the file's URI</td><td>{@code file:///mnt/tensors/emb-….hrry}</td></tr>
 * </table>
 *
 * <p>Thread-safe (static methods only).
 */
public final class TensorHeaders {
    /** Header key of the element type. */
    public static final String DTYPE = "hurray.dtype";
    /** Header key of the shape. */
    public static final String SHAPE = "hurray.shape";
    /** Header key of the tensor name. */
    public static final String NAME = "hurray.name";
    /** Header key present on claim-check references. */
    public static final String CLAIM_CHECK = "hurray.claim-check";

    private TensorHeaders() {
    }

    /** The shape as the {@value #SHAPE} header writes it: {@code [d0,d1,…]}. */
    public static String shapeText(long[] dims) {
        StringBuilder b = new StringBuilder(2 + dims.length * 4).append('[');
        for (int i = 0; i < dims.length; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(dims[i]);
        }
        return b.append(']').toString();
    }

    static void add(Headers headers, TensorDescriptor d, String claimCheckUri) {
        headers.remove(DTYPE).remove(SHAPE).remove(NAME).remove(CLAIM_CHECK);
        headers.add(DTYPE, d.elementType().formatName().getBytes(StandardCharsets.UTF_8));
        headers.add(SHAPE, shapeText(d.shape().dims()).getBytes(StandardCharsets.UTF_8));
        if (d.name().isPresent()) {
            headers.add(NAME, d.name().get().getBytes(StandardCharsets.UTF_8));
        }
        if (claimCheckUri != null) {
            headers.add(CLAIM_CHECK, claimCheckUri.getBytes(StandardCharsets.UTF_8));
        }
    }

    /** The last value of header {@code key} as text, if present. */
    public static Optional<String> text(Headers headers, String key) {
        if (headers == null) {
            return Optional.empty();
        }
        Header h = headers.lastHeader(key);
        return h == null || h.value() == null ? Optional.empty() : Optional.of(new String(h.value(), StandardCharsets.UTF_8));
    }

    /** The element type named by the {@value #DTYPE} header, if present and known. */
    public static Optional<ElementType> dtype(Headers headers) {
        return text(headers, DTYPE).flatMap(s -> {
            try {
                return Optional.of(ElementType.fromFormatName(s));
            } catch (IllegalArgumentException e) {
                return Optional.empty();
            }
        });
    }

    /**
     * The dimensions in the {@value #SHAPE} header, if present and well formed (at most 32
     * non-negative dimensions).
     */
    public static Optional<long[]> shape(Headers headers) {
        return text(headers, SHAPE).flatMap(TensorHeaders::parseShape);
    }

    static Optional<long[]> parseShape(String s) {
        if (s.length() < 2 || s.length() > 32 * 21 || s.charAt(0) != '[' || s.charAt(s.length() - 1) != ']') {
            return Optional.empty();
        }
        String body = s.substring(1, s.length() - 1);
        if (body.isEmpty()) {
            return Optional.of(new long[0]);
        }
        String[] parts = body.split(",", -1);
        if (parts.length > 32) {
            return Optional.empty();
        }
        long[] dims = new long[parts.length];
        try {
            for (int i = 0; i < parts.length; i++) {
                dims[i] = Long.parseLong(parts[i]);
                if (dims[i] < 0) {
                    return Optional.empty();
                }
            }
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
        return Optional.of(dims);
    }

    /** True if the record is a claim-check reference ({@value #CLAIM_CHECK} header present). */
    public static boolean isClaimCheck(Headers headers) {
        return headers != null && headers.lastHeader(CLAIM_CHECK) != null;
    }
}
