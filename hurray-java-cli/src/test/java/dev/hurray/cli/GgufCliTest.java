package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.HurrayFile;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.ForeignTensor;
import dev.hurray.formats.Gguf;
import dev.hurray.formats.TestSupport;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GGUF through the command: detected by content, written and read back bit-exact, Q8_0/Q4_0
 * blocks kept, typed metadata and raw k-quant rows back to the same GGUF bytes.
 */
class GgufCliTest {
    @TempDir
    Path tmp;

    @Test
    void npyToGgufAndBackIsBitExact() throws IOException {
        Path npy = TestSupport.resourceDir("npy").resolve("float32_c.npy");
        Path gguf = tmp.resolve("m.gguf");
        Path back = tmp.resolve("back.npy");
        CliTest.run("convert", npy.toString(), gguf.toString()).assertOk();
        CliTest.Result r = CliTest.run("inspect", gguf.toString());
        r.assertOk();
        assertTrue(r.out().contains(": gguf, 1 tensor"), r.out());
        CliTest.run("convert", "--to", "npy", gguf.toString(), back.toString()).assertOk();
        assertArrayEquals(Files.readAllBytes(npy), Files.readAllBytes(back));
    }

    /**
     * GGUF Q8_0/Q4_0 tensors become Hurray GGUF block tensors: HRRYFILE keeps them, GGUF gets
     * back the same bytes, --dequantize computes d × q and d × (nibble − 8), and a format that
     * cannot record the blocks refuses them.
     */
    @Test
    void q8_0AndQ4_0CrossHrryfileBitExactAndDequantize() throws IOException {
        byte[] q8 = new byte[2 * 34]; // [2, 32]: block 0 has d = 0.5 and q = i − 16, block 1 d = −2 and q = i
        q8[1] = 0x38;
        q8[35] = (byte) 0xC0;
        byte[] q4 = new byte[18]; // [32]: d = 1, byte j = j (low nibble) | 15 − j (high nibble)
        q4[1] = 0x3C;
        float[] want8 = new float[64];
        float[] want4 = new float[32];
        for (int i = 0; i < 32; i++) {
            q8[2 + i] = (byte) (i - 16);
            q8[36 + i] = (byte) i;
            want8[i] = (i - 16) * 0.5f;
            want8[32 + i] = i * -2f;
        }
        for (int j = 0; j < 16; j++) {
            q4[2 + j] = (byte) (j | (15 - j) << 4);
            want4[j] = j - 8;
            want4[16 + j] = 7 - j;
        }
        Path gguf = tmp.resolve("q.gguf");
        try (Arena a = Arena.ofConfined()) {
            ForeignTensor t8 = new ForeignTensor("w8", ElementType.INT8, new long[] {2, 32}, Layout.Kind.ROW_MAJOR,
                    a.allocateFrom(ValueLayout.JAVA_BYTE, q8), Quantization.Block.of(Quantization.GgufFormat.Q8_0, 2), -1);
            ForeignTensor t4 = new ForeignTensor("w4", ElementType.UINT4, new long[] {32}, Layout.Kind.ROW_MAJOR,
                    a.allocateFrom(ValueLayout.JAVA_BYTE, q4), Quantization.Block.of(Quantization.GgufFormat.Q4_0, 1), -1);
            Gguf.write(new ForeignModel(List.of(t8, t4), Map.of(), null), gguf, null);
        }
        Path hrry = tmp.resolve("q.hrry");
        CliTest.run("convert", gguf.toString(), hrry.toString()).assertOk();
        CliTest.Result r = CliTest.run("inspect", "--json", hrry.toString());
        r.assertOk();
        assertTrue(r.out().replace(" ", "").contains("\"kind\":\"q8_0\""), r.out());
        assertTrue(r.out().replace(" ", "").contains("\"kind\":\"q4_0\""), r.out());
        Path back = tmp.resolve("back.gguf");
        CliTest.run("convert", hrry.toString(), back.toString()).assertOk();
        assertArrayEquals(Files.readAllBytes(gguf), Files.readAllBytes(back));

        Path values = tmp.resolve("values.hrry");
        CliTest.run("convert", "--dequantize", gguf.toString(), values.toString()).assertOk();
        try (HurrayFile f = HurrayFile.open(values); Tensor v8 = f.read("w8"); Tensor v4 = f.read("w4")) {
            assertEquals(ElementType.FLOAT32, v8.descriptor().elementType());
            assertArrayEquals(new long[] {2, 32}, v8.descriptor().shape().dims());
            assertArrayEquals(want8, v8.toFloatArray());
            assertArrayEquals(want4, v4.toFloatArray());
        }
        CliTest.run("convert", gguf.toString(), tmp.resolve("q.safetensors").toString())
                .assertError(ExitCode.BAD_INPUT, "pass --dequantize");
    }

    /**
     * gguf-py's typed fixtures (every metadata value type, k-quant tensors carried as raw rows,
     * alignment 32 and 64) go through the command to HRRYFILE, to a stream, and straight to GGUF,
     * and each comes back as the original bytes; no metadata is dropped on the way.
     */
    @Test
    void ggufPyFilesCrossHrryfileAndStreamByteForByte() throws IOException {
        for (String name : List.of("typed.gguf", "typed-align64.gguf")) {
            Path src = TestSupport.resourceDir("gguf").resolve(name);
            byte[] original = Files.readAllBytes(src);
            for (String via : List.of("hrry", "hrrys")) {
                Path mid = tmp.resolve(name + "." + via);
                Path back = tmp.resolve(name + "." + via + ".gguf");
                CliTest.Result r = CliTest.run("convert", src.toString(), mid.toString());
                r.assertOk();
                CliTest.Result b = CliTest.run("convert", mid.toString(), back.toString());
                b.assertOk();
                assertFalse(b.err().contains("dropped"), b.err());
                assertArrayEquals(original, Files.readAllBytes(back), name + " via " + via);
            }
            Path direct = tmp.resolve(name + ".direct.gguf");
            CliTest.run("convert", src.toString(), direct.toString()).assertOk();
            assertArrayEquals(original, Files.readAllBytes(direct), name + " direct");
        }
        try (HurrayFile f = HurrayFile.open(tmp.resolve("typed.gguf.hrry"))) {
            assertEquals("uint32", new String(f.metadata().get("gguf.type.llama.context_length"), StandardCharsets.UTF_8));
            assertEquals("q4_k", new String(f.metadata().get("gguf.tensor_type.blk.0.attn_k.weight"), StandardCharsets.UTF_8));
        }
    }

    /**
     * Raw ggml block rows (k-quants) cannot be dequantized: written to npz they stay bytes, and
     * the command says so instead of passing them off as values.
     */
    @Test
    void rawBlockRowsToNpzAreNamedInAWarning() throws IOException {
        Path src = TestSupport.resourceDir("gguf").resolve("typed.gguf");
        CliTest.Result r = CliTest.run("convert", "--dequantize", src.toString(), tmp.resolve("v.npz").toString());
        r.assertOk();
        assertTrue(r.err().contains("2 tensors are GGUF block rows Hurray cannot dequantize ('blk.0.attn_k.weight': q4_k, …)"),
                r.err());
        CliTest.Result g = CliTest.run("convert", src.toString(), tmp.resolve("again.gguf").toString());
        g.assertOk();
        assertFalse(g.err().contains("block rows"), g.err());
    }

    /** Plain file metadata (safetensors) becomes GGUF strings; a type record its value does not fit is refused. */
    @Test
    void fileMetadataReachesGgufAndBadRecordsAreRefused() throws IOException {
        Path gguf = tmp.resolve("m.gguf");
        try (ForeignModel m = Gguf.read(TestSupport.resourceDir("gguf").resolve("typed.gguf"))) {
            Map<String, String> meta = new LinkedHashMap<>(m.metadata());
            meta.put("llama.context_length", "4294967296");
            Path hrry = tmp.resolve("bad.hrry");
            new ForeignModel(m.tensors(), meta, null).toHurrayFile(hrry);
            CliTest.run("convert", hrry.toString(), gguf.toString())
                    .assertError(ExitCode.BAD_INPUT, "4294967296 is out of range for uint32");
            assertFalse(Files.exists(gguf));
        }
        try (Arena a = Arena.ofConfined()) {
            ForeignTensor t = new ForeignTensor("w", ElementType.FLOAT32, new long[] {2}, Layout.Kind.ROW_MAJOR,
                    a.allocate(8), null, -1);
            Path hrry = tmp.resolve("plain.hrry");
            new ForeignModel(List.of(t), Map.of("source", "safetensors", "general.alignment", "64"), null).toHurrayFile(hrry);
            CliTest.Result r = CliTest.run("convert", hrry.toString(), gguf.toString());
            r.assertOk();
            assertFalse(r.err().contains("dropped"), r.err());
        }
        Gguf.Header h = Gguf.readHeader(gguf);
        assertEquals(Gguf.ValueType.STRING, h.metadata().get("source").type());
        assertEquals("safetensors", h.metadata().get("source").value());
        assertEquals(Gguf.ValueType.UINT32, h.metadata().get("general.alignment").type());
        assertEquals(64, h.alignment());
    }

    @Test
    void uint16CannotBeGguf() throws IOException {
        Path npy = TestSupport.resourceDir("npy").resolve("uint16_c.npy");
        CliTest.run("convert", npy.toString(), tmp.resolve("u.gguf").toString())
                .assertError(ExitCode.BAD_INPUT, "GGUF has no type for uint16");
    }

    /**
     * The table prints the head of a long metadata value, decoded from the head of its bytes:
     * a GGUF file whose header is one 8 MiB uint8 array (32 MiB of text) must not cost a UTF-16
     * copy and a String of the whole text (at 64 MiB that takes 'inspect' past a 1 GiB heap).
     */
    @Test
    void inspectDecodesOnlyTheHeadOfALongMetadataValue() throws IOException {
        int n = 8 << 20;
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 + 4 + 8 + 8 + 8 + 3 + 4 + 4 + 8 + n)
                .order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).putInt(3).putLong(0).putLong(1);
        b.putLong(3).put("big".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).putInt(9).putInt(0).putLong(n);
        while (b.hasRemaining()) {
            b.put((byte) 200);
        }
        Path gguf = Files.write(tmp.resolve("big.gguf"), b.array());
        long before = allocatedBytes();
        CliTest.Result r = CliTest.run("inspect", gguf.toString());
        long allocated = allocatedBytes() - before;
        r.assertOk();
        String line = r.out().lines().filter(l -> l.startsWith("  big = ")).findFirst().orElseThrow();
        assertEquals("  big = [" + "200,".repeat(39) + "200… (" + (4L * n + 1) + " bytes; --json prints it whole)", line);
        // Reading the model builds the text (4n characters, about 17n bytes with its builder's
        // growth) and the command keeps it as UTF-8 (4n): some 19n in all. Decoding the whole
        // value again for the table added 28n (47n in all).
        assertTrue(allocated < 30L * n, "inspect allocated " + allocated + " bytes for a " + n + "-byte array");

        // The head is what the whole value's text starts with, across the decoder's buffer and
        // for text that is not UTF-8.
        byte[] accents = "é".repeat(5000).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        assertEquals("é".repeat(320), InspectCommand.head(accents, 320));
        assertEquals("short", InspectCommand.head("short".getBytes(java.nio.charset.StandardCharsets.UTF_8), 320));
        assertEquals("", InspectCommand.head(new byte[0], 320));
        byte[] bad = java.util.Arrays.copyOf(accents, accents.length + 1);
        bad[bad.length - 1] = (byte) 0xC3;
        assertEquals(InspectCommand.text(bad).substring(0, 320), InspectCommand.head(bad, 320));
        assertEquals(InspectCommand.text(new byte[] {(byte) 0xFF}), InspectCommand.head(new byte[] {(byte) 0xFF}, 320));
    }

    /**
     * File metadata survives GGUF -> HRRYFILE -> GGUF: the GGUF writer records it as string
     * values, so the sink keeps it rather than dropping it with a warning that GGUF cannot hold
     * file metadata.
     */
    @Test
    void fileMetadataReachesGgufOutput() throws IOException {
        byte[] name = "general.name".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] value = "tiny llama".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] tensor = "w".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(512).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).putInt(3).putLong(1).putLong(1);
        b.putLong(name.length).put(name).putInt(8).putLong(value.length).put(value);
        b.putLong(tensor.length).put(tensor).putInt(1).putLong(4).putInt(0).putLong(0);
        b.position((b.position() + 31) / 32 * 32);
        b.putFloat(1).putFloat(2).putFloat(3).putFloat(4);
        Path gguf = Files.write(tmp.resolve("named.gguf"), java.util.Arrays.copyOf(b.array(), b.position()));
        Path hrry = tmp.resolve("named.hrry");
        Path back = tmp.resolve("back.gguf");
        CliTest.run("convert", gguf.toString(), hrry.toString()).assertOk();
        CliTest.Result r = CliTest.run("convert", hrry.toString(), back.toString());
        r.assertOk();
        assertTrue(r.err().isEmpty(), r.err());
        try (ForeignModel m = Gguf.read(back)) {
            assertEquals("tiny llama", m.metadata().get("general.name"));
            assertEquals(List.of("w"), m.tensors().stream().map(ForeignTensor::name).toList());
        }
    }

    /** The bytes this thread has allocated so far. */
    private static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean())
                .getCurrentThreadAllocatedBytes();
    }
}
