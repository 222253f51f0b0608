package dev.hurray.formats;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import static dev.hurray.formats.TestSupport.list;
import static dev.hurray.formats.TestSupport.longs;
import static dev.hurray.formats.TestSupport.map;

/**
 * The tests' own reading of a tfjs weights manifest, independent of {@link Tfjs}: walks the
 * manifest and shards and decodes every weight with {@link TfjsTest}'s reference arithmetic
 * (BigDecimal-exact products and sums rounded as JavaScript doubles, then once to float32).
 * For tests in other packages.
 */
public final class TfjsReference {
    private TfjsReference() {
    }

    /**
     * One weight as the manifest describes it.
     *
     * @param name the weight's name
     * @param dtype the manifest's (logical) dtype
     * @param storedType the stored type (the quantization dtype, else {@code dtype})
     * @param shape its shape
     * @param quantization the manifest's quantization object, or null
     * @param stored the stored bytes, sliced from the shards
     * @param values the logical values, little-endian: decoded for a quantized weight, else the stored bytes
     */
    public record Weight(String name, String dtype, String storedType, long[] shape, Map<String, Object> quantization,
                         byte[] stored, byte[] values) {
        public double scale() {
            return TfjsTest.num(quantization.get("scale"));
        }

        public double min() {
            return TfjsTest.num(quantization.get("min"));
        }
    }

    /** Every weight of the manifest, in manifest order. */
    public static Map<String, Weight> read(Path manifestFile) throws IOException {
        Map<String, Weight> out = new LinkedHashMap<>();
        for (Object g : list(TestSupport.json(manifestFile))) {
            ByteArrayOutputStream shards = new ByteArrayOutputStream();
            for (Object p : list(map(g).get("paths"))) {
                shards.writeBytes(Files.readAllBytes(manifestFile.resolveSibling((String) p)));
            }
            byte[] bin = shards.toByteArray();
            int offset = 0;
            for (Object wo : list(map(g).get("weights"))) {
                Map<String, Object> w = map(wo);
                long[] shape = longs(w.get("shape"));
                int count = (int) ForeignTensor.elementCount(shape);
                int size = count * TfjsTest.storedWidth(w);
                byte[] raw = Arrays.copyOfRange(bin, offset, offset + size);
                offset += size;
                String dtype = (String) w.get("dtype");
                Map<String, Object> q = w.get("quantization") == null ? null : map(w.get("quantization"));
                String stored = q == null ? dtype : (String) q.get("dtype");
                out.put((String) w.get("name"), new Weight((String) w.get("name"), dtype, stored, shape, q, raw,
                        q == null ? raw : decode(raw, count, dtype, q)));
            }
        }
        return out;
    }

    private static byte[] decode(byte[] raw, int count, String dtype, Map<String, Object> q) {
        ByteBuffer in = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer out = ByteBuffer.allocate(count * 4).order(ByteOrder.LITTLE_ENDIAN);
        String qd = (String) q.get("dtype");
        boolean u8 = qd.equals("uint8");
        // The decode of each stored value, computed once (BigDecimal is slow; models have millions of weights).
        int[] memo = new int[u8 ? 256 : 65536];
        boolean[] done = new boolean[memo.length];
        for (int k = 0; k < count; k++) {
            if (qd.equals("float16")) {
                out.putInt(TfjsTest.halfToFloatBits(in.getShort(2 * k)));
                continue;
            }
            int v = u8 ? Byte.toUnsignedInt(in.get(k)) : Short.toUnsignedInt(in.getShort(2 * k));
            if (!done[v]) {
                double scale = TfjsTest.num(q.get("scale"));
                double min = TfjsTest.num(q.get("min"));
                memo[v] = dtype.equals("int32") ? TfjsTest.expectInt(v, scale, min)
                        : Float.floatToRawIntBits(TfjsTest.expectFloat(v, scale, min));
                done[v] = true;
            }
            out.putInt(memo[v]);
        }
        return out.array();
    }
}
