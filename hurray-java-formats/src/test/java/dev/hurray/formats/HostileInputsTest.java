package dev.hurray.formats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hostile inputs of the reliability review, through the library API: each is refused with
 * one {@link ForeignFormatException} line, never another exception, a large allocation or a
 * read outside the model folder.
 */
class HostileInputsTest {
    @TempDir
    Path tmp;

    private static String deep(int depth) {
        return "[".repeat(depth) + "]".repeat(depth);
    }

    private static void assertOneLine(ForeignFormatException e, String contains) {
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
        assertTrue(e.getMessage().contains(contains), e.getMessage());
    }

    /** Jackson's stream constraints (an exception without a location) end in one format error, not an NPE. */
    @Test
    void jsonBeyondTheStreamConstraintsIsAOneLineFormatError() throws IOException {
        String[] headers = {
            "{\"__metadata__\":{\"x\":\"y\"},\"a\":" + deep(1500) + "}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[1" + "0".repeat(1500) + "],\"data_offsets\":[0,4]}}",
            "{\"" + "k".repeat(60_000) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        };
        for (String h : headers) {
            Path st = tmp.resolve("x.safetensors");
            Files.write(st, SafetensorsTest.file(h, new byte[4]));
            assertOneLine(assertThrows(ForeignFormatException.class, () -> Safetensors.read(st)), "invalid JSON");

            Path mf = tmp.resolve("weights_manifest.json");
            Files.writeString(mf, "[{\"paths\":[],\"weights\":" + h + "}]");
            assertOneLine(assertThrows(ForeignFormatException.class, () -> Tfjs.read(mf, false, null)), "invalid JSON");
        }
    }

    /**
     * A deflated member whose npy header and zip sizes declare 3.75 GiB of float32 in a 4 MB
     * archive: refused before anything is allocated (the default limit is 2 GiB).
     */
    @Test
    void anNpzZipBombIsRefusedBeforeAllocation() throws IOException {
        long total = 0xF000_0000L;
        String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + (total - 128) / 4 + ",), }";
        byte[] header = npyHeader(dict);
        assertEquals(128, header.length);
        Deflater d = new Deflater(Deflater.DEFAULT_COMPRESSION, true); // raw deflate, as zip stores it
        d.setInput(header);
        byte[] buf = new byte[4096];
        int n = d.deflate(buf, 0, buf.length, Deflater.SYNC_FLUSH);
        byte[] compressed = new byte[n + 5 * (800 << 10)];
        System.arraycopy(buf, 0, compressed, 0, n);
        for (int i = n; i < compressed.length; i += 5) { // empty stored blocks: valid deflate, no output
            compressed[i + 3] = (byte) 0xFF;
            compressed[i + 4] = (byte) 0xFF;
        }
        Path npz = tmp.resolve("bomb.npz");
        Files.write(npz, zipOneEntry("w.npy", compressed, total));
        long before = usedHeap();
        ForeignFormatException e = assertThrows(ForeignFormatException.class, () -> Npz.read(npz, null));
        assertOneLine(e, "more than the limit of " + Npz.DEFAULT_MAX_INFLATED_BYTES);
        assertTrue(usedHeap() - before < 256L << 20, "heap grew by " + (usedHeap() - before));
        // A lower limit refuses what fits the default.
        assertOneLine(assertThrows(ForeignFormatException.class, () -> Npz.read(npz, null, 1 << 20)), "limit of 1048576");
    }

    /**
     * A rank over 32 (Hurray's most) is refused when the file is opened, by every reader, so
     * inspecting a file never accepts what converting it refuses; rank 32 is read.
     */
    @Test
    void aRankOver32IsRefusedWhenTheFileIsRead() throws IOException {
        for (int rank : new int[] {32, 33, 64}) {
            String ones = String.join(",", java.util.Collections.nCopies(rank, "1"));
            Path st = tmp.resolve("r.safetensors");
            Files.write(st, SafetensorsTest.file("{\"a\":{\"dtype\":\"F32\",\"shape\":[" + ones
                    + "],\"data_offsets\":[0,4]}}", new byte[4]));
            byte[] header = npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (" + ones + "), }");
            Path npy = tmp.resolve("r.npy");
            Files.write(npy, java.util.Arrays.copyOf(header, header.length + 4));
            Path bin = Files.write(tmp.resolve("r.bin"), new byte[4]);
            Path mf = tmp.resolve("weights_manifest.json");
            Files.writeString(mf, "[{\"paths\":[\"r.bin\"],\"weights\":[{\"name\":\"a\",\"shape\":[" + ones
                    + "],\"dtype\":\"float32\"}]}]");
            for (Path p : new Path[] {st, npy, mf}) {
                if (rank <= ForeignTensor.MAX_RANK) {
                    try (ForeignModel m = ForeignFormats.read(p)) {
                        assertEquals(rank, m.tensors().get(0).rank());
                        m.tensors().get(0).descriptor();
                    }
                } else {
                    assertOneLine(assertThrows(ForeignFormatException.class, () -> ForeignFormats.read(p).close()),
                            "rank " + rank + " exceeds 32, the most a Hurray tensor has");
                }
            }
            Files.delete(bin);
        }
    }

    /** A tfjs shard that is a symbolic link to a file outside the model folder is not read. */
    @Test
    void aShardLinkingOutOfTheModelFolderIsRefused() throws IOException {
        Path secret = Files.writeString(tmp.resolve("secret"), "0123");
        Path model = Files.createDirectory(tmp.resolve("model"));
        Files.createSymbolicLink(model.resolve("link.bin"), secret);
        Path mf = model.resolve("weights_manifest.json");
        Files.writeString(mf, "[{\"paths\":[\"link.bin\"],\"weights\":[{\"name\":\"w\",\"shape\":[1],\"dtype\":\"float32\"}]}]");
        assertOneLine(assertThrows(ForeignFormatException.class, () -> Tfjs.read(mf, false, null)), "outside the model folder");

        // A linked folder counts too; a link that stays inside the folder is fine.
        Path outside = Files.createDirectory(tmp.resolve("outside"));
        Files.writeString(outside.resolve("w.bin"), "0123");
        Files.createSymbolicLink(model.resolve("sub"), outside);
        Files.writeString(mf, "[{\"paths\":[\"sub/w.bin\"],\"weights\":[{\"name\":\"w\",\"shape\":[1],\"dtype\":\"float32\"}]}]");
        assertOneLine(assertThrows(ForeignFormatException.class, () -> Tfjs.read(mf, false, null)), "outside the model folder");

        Files.writeString(model.resolve("real.bin"), "0123");
        Files.createSymbolicLink(model.resolve("inside.bin"), model.resolve("real.bin"));
        Files.writeString(mf, "[{\"paths\":[\"inside.bin\"],\"weights\":[{\"name\":\"w\",\"shape\":[1],\"dtype\":\"float32\"}]}]");
        try (ForeignModel m = Tfjs.read(mf, false, null)) {
            assertEquals(4, m.tensor("w").byteSize());
        }
    }

    private static long usedHeap() {
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    static byte[] npyHeader(String dict) {
        int len = 10 + dict.length() + 1;
        int pad = (64 - len % 64) % 64;
        String body = dict + " ".repeat(pad) + "\n";
        ByteBuffer b = ByteBuffer.allocate(10 + body.length()).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
        b.putShort((short) body.length()).put(body.getBytes(StandardCharsets.US_ASCII));
        return b.array();
    }

    /** A zip with one deflated entry whose declared uncompressed size is {@code declared} (below 4 GiB). */
    static byte[] zipOneEntry(String name, byte[] compressed, long declared) {
        byte[] nm = name.getBytes(StandardCharsets.UTF_8);
        CRC32 crc = new CRC32();
        ByteBuffer b = ByteBuffer.allocate(30 + nm.length + compressed.length + 46 + nm.length + 22)
                .order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0x04034b50).putShort((short) 20).putShort((short) 0).putShort((short) 8).putInt(0)
                .putInt((int) crc.getValue()).putInt(compressed.length).putInt((int) declared)
                .putShort((short) nm.length).putShort((short) 0).put(nm).put(compressed);
        int cen = b.position();
        b.putInt(0x02014b50).putShort((short) 20).putShort((short) 20).putShort((short) 0).putShort((short) 8)
                .putInt(0).putInt((int) crc.getValue()).putInt(compressed.length).putInt((int) declared)
                .putShort((short) nm.length).putShort((short) 0).putShort((short) 0).putShort((short) 0)
                .putShort((short) 0).putInt(0).putInt(0).put(nm);
        int cenSize = b.position() - cen;
        b.putInt(0x06054b50).putShort((short) 0).putShort((short) 0).putShort((short) 1).putShort((short) 1)
                .putInt(cenSize).putInt(cen).putShort((short) 0);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(b.array());
        return out.toByteArray();
    }
}
