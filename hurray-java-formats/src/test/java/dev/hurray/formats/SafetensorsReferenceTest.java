package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * safetensors against the reference implementation: safetensors 0.8 (its Rust core through
 * {@code safetensors.deserialize}) and ml_dtypes 0.6 for the fp8 values. Skipped when they are
 * not installed. The rules themselves are also tested without Python, in
 * {@link #subByteCountsNotEndingOnAByteAreRefusedOnReadAndWrite()}.
 */
class SafetensorsReferenceTest {
    @TempDir
    Path tmp;

    private static long bytesOf(int bits, long n) {
        return (n * bits + 7) / 8;
    }

    private Path handMade(String dtype, long n, int bits) throws IOException {
        long nb = bytesOf(bits, n);
        String header = "{\"t\":{\"dtype\":\"" + dtype + "\",\"shape\":[" + n + "],\"data_offsets\":[0," + nb + "]}}";
        Path p = tmp.resolve(dtype + "-" + n + ".safetensors");
        Files.write(p, SafetensorsTest.file(header, new byte[(int) nb]));
        return p;
    }

    private static boolean javaReads(Path p) throws IOException {
        try (ForeignModel m = Safetensors.read(p)) {
            return true;
        } catch (ForeignFormatException e) {
            return false;
        }
    }

    private boolean javaWrites(ElementType t, long n) throws IOException {
        ForeignTensor ft = new ForeignTensor("t", t, new long[] {n}, Layout.Kind.ROW_MAJOR,
                MemorySegment.ofArray(new byte[(int) t.byteSizeOf(n)]), null, -1);
        try {
            Safetensors.write(Models.model(List.of(ft), Map.of()), tmp.resolve("w.safetensors"), null);
            return true;
        } catch (ForeignFormatException e) {
            return false;
        }
    }

    @Test
    void subByteCountsNotEndingOnAByteAreRefusedOnReadAndWrite() throws IOException {
        // F4: 3 elements are 12 bits; F6: 2 elements are 12 bits. safetensors 0.8 refuses both.
        assertEquals(false, javaReads(handMade("F4", 3, 4)));
        assertEquals(false, javaReads(handMade("F6_E2M3", 2, 6)));
        assertEquals(true, javaReads(handMade("F4", 4, 4)));
        assertEquals(true, javaReads(handMade("F6_E3M2", 8, 6)));
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Safetensors.write(Models.model(List.of(
                new ForeignTensor("odd", ElementType.FLOAT4_E2M1FN, new long[] {5}, Layout.Kind.ROW_MAJOR,
                        MemorySegment.ofArray(new byte[3]), null, -1)), Map.of()), tmp.resolve("x.safetensors"), null));
        assertEquals(true, e.getMessage().contains("byte boundary"), e.getMessage());
        assertEquals(false, javaWrites(ElementType.FLOAT6_E2M3FN, 6));
        assertEquals(true, javaWrites(ElementType.FLOAT6_E2M3FN, 12));
    }

    @Test
    void subByteRulesMatchSafetensors08() throws IOException {
        ReferencePython.assume("safetensors");
        String script = """
                import sys, safetensors
                from safetensors import deserialize
                for p in sys.argv[1:]:
                    try:
                        deserialize(open(p, 'rb').read()); print('ok')
                    except Exception as e:
                        print('refused')
                """;
        Object[][] kinds = {{"F4", 4, ElementType.FLOAT4_E2M1FN}, {"F6_E2M3", 6, ElementType.FLOAT6_E2M3FN},
                {"F6_E3M2", 6, ElementType.FLOAT6_E3M2FN}};
        for (Object[] k : kinds) {
            String[] paths = new String[10];
            for (int n = 0; n < 10; n++) {
                paths[n] = handMade((String) k[0], n, (int) k[1]).toString();
            }
            String[] py = ReferencePython.run(script, paths).strip().split("\n");
            for (int n = 0; n < 10; n++) {
                boolean ref = py[n].equals("ok");
                assertEquals(ref, javaReads(Path.of(paths[n])), k[0] + " x" + n + " read");
                assertEquals(ref, javaWrites((ElementType) k[2], n), k[0] + " x" + n + " write");
            }
        }
    }

    @Test
    void fnuzFloat8TypesRoundTripThroughSafetensorsAndMatchMlDtypes() throws IOException {
        ReferencePython.assume("safetensors", "ml_dtypes", "numpy");
        byte[] codes = new byte[256];
        for (int i = 0; i < 256; i++) {
            codes[i] = (byte) i;
        }
        for (ElementType t : List.of(ElementType.FLOAT8_E4M3FNUZ, ElementType.FLOAT8_E5M2FNUZ)) {
            Path p = tmp.resolve(t.formatName() + ".safetensors");
            Safetensors.write(Models.model(List.of(new ForeignTensor("v", t, new long[] {256}, Layout.Kind.ROW_MAJOR,
                    MemorySegment.ofArray(codes), null, -1)), Map.of()), p, null);
            // The reference reads Hurray's file, names the dtype and decodes the bytes with ml_dtypes.
            String out = ReferencePython.run("""
                    import sys, numpy as np, ml_dtypes
                    from safetensors import deserialize
                    (name, t), = deserialize(open(sys.argv[1], 'rb').read())
                    v = np.frombuffer(bytes(t['data']), dtype=getattr(ml_dtypes, sys.argv[2])).astype(np.float32)
                    print(t['dtype'], t['shape'], bytes(t['data']).hex())
                    print(v.tobytes().hex())
                    """, p.toString(), t.formatName()).strip();
            String[] lines = out.split("\n");
            String[] head = lines[0].split(" ", 2);
            assertEquals(Safetensors.dtypeName(t), head[0]);
            assertEquals(HexFormat.of().formatHex(codes), lines[0].substring(lines[0].lastIndexOf(' ') + 1));
            try (ForeignModel m = Safetensors.read(p)) {
                ForeignTensor ft = m.tensor("v");
                assertEquals(t, ft.dtype());
                try (dev.hurray.Tensor ht = dev.hurray.Tensor.copyOf(Bridge.descriptor(ft), ft.data())) {
                    float[] ours = ht.toFloatArray();
                    MemorySegment ref = MemorySegment.ofArray(HexFormat.of().parseHex(lines[1]));
                    float[] want = ref.toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED);
                    assertArrayEquals(want, ours, t + " values against ml_dtypes");
                }
            }
        }
    }
}
