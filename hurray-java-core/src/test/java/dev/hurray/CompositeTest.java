package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Composites through a stream (flat and assembled views) and a container, from Java. */
class CompositeTest {
    /** The 2x3 matrix [[0, 5, 0], [7, 0, 9]] as CSR. */
    private static Tensor csr() throws HurrayException {
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 2, 3)
                .layout(Layout.csr(ElementType.INT32, 3, true))
                .buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(12))
                .build();
        return Tensor.copyOf(d, MemorySegment.ofArray(new float[] {5, 7, 9}), MemorySegment.ofArray(new int[] {0, 1, 3}),
                MemorySegment.ofArray(new int[] {1, 0, 2}));
    }

    private static Composite.Builder layer(Tensor weight, Tensor scales) {
        return Composite.builder("layer0")
                .add("weight", weight)
                .add("kv", Composite.builder().add("scales", scales).add("again", weight))
                .add("bias", scales);
    }

    private static void checkLayer(Composite c) throws HurrayException {
        assertEquals("layer0", c.name().orElseThrow());
        assertEquals(List.of("weight", "kv", "bias"), c.head().compositeMembership().orElseThrow().roles());
        List<String> paths = c.walk().stream().map(Composite.Node::path).toList();
        assertEquals(List.of("weight", "kv", "kv/scales", "kv/again", "bias"), paths);
        assertEquals(2, c.walk().get(2).depth());
        try (Tensor d = c.tensor("kv/again").densify()) {
            assertArrayEquals(new float[] {0, 5, 0, 7, 0, 9}, d.toFloatArray());
        }
        assertArrayEquals(new float[] {0.5f, 2f}, c.tensor("bias").toFloatArray());
        assertTrue(c.member("kv").orElseThrow().isComposite());
    }

    @Test
    void aNestedCompositeRoundTripsThroughAStreamInBothViews() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Tensor w = csr(); Tensor s = Tensor.of(new float[] {0.5f, 2f}, 2); Writer writer = Writer.of(out)) {
            writer.write(s);
            writer.write(layer(w, s));
        }
        byte[] bytes = out.toByteArray();
        // Flat view: tensor, head (no buffers), weight, nested head, scales, again, bias.
        try (Reader r = Reader.of(bytes)) {
            int[] buffers = new int[7];
            for (int i = 0; i < 7; i++) {
                try (Tensor t = r.read()) {
                    buffers[i] = t.descriptor().buffers().size();
                }
            }
            assertArrayEquals(new int[] {1, 0, 3, 0, 1, 3, 1}, buffers);
            assertNull(r.read());
        }
        // Assembled view.
        try (Reader r = Reader.of(bytes)) {
            try (Item first = r.nextItem()) {
                assertFalse(first.isComposite());
                assertEquals(first.tensor().orElseThrow().toString(), first.toString());
            }
            Composite kept;
            try (Item second = r.nextItem()) {
                Composite c = second.composite().orElseThrow();
                assertEquals(c.toString(), second.toString());
                assertTrue(second.toString().startsWith("Composite"), second.toString());
                checkLayer(c);
                kept = c;
            }
            assertThrows(IllegalStateException.class, kept::members);
            assertNull(r.nextItem());
        }
    }

    @Test
    void aCompositeIsReadByNameFromAContainer(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("layer.hrry");
        try (Tensor w = csr(); Tensor s = Tensor.of(new float[] {0.5f, 2f}, 2);
             HurrayFileWriter fw = HurrayFileWriter.of(Files.newOutputStream(file))) {
            fw.add(layer(w, s));
            fw.finish();
            // Like a tensor, a composite cannot be added to a finished container.
            assertEquals(Status.INVALID_STATE, assertThrows(HurrayException.class, () -> fw.add(layer(w, s))).status());
        }
        try (HurrayFile f = HurrayFile.open(file); Composite c = f.readComposite("layer0")) {
            checkLayer(c);
            assertTrue(f.contains("layer0/kv/scales"));
            assertEquals(Status.NOT_FOUND, assertThrows(HurrayException.class, () -> f.readComposite("nope")).status());
            assertEquals(Status.INVALID_ARGUMENT,
                    assertThrows(HurrayException.class, () -> f.readComposite("layer0/weight")).status());
        }
    }

    /** The Rust-written golden stream src/golden/stream_v2_sparse_composite.hrry. */
    private static byte[] goldenStream() throws java.io.IOException {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("src/golden"))) {
            dir = dir.getParent();
        }
        return Files.readAllBytes(dir.resolve("src/golden/stream_v2_sparse_composite.hrry"));
    }

    /**
     * A composite head read with {@code read()} has no buffers: its typed copies say so with
     * {@link IllegalStateException}, as for any tensor they cannot copy, never an index error.
     */
    @Test
    void typedCopiesOfACompositeHeadAreRefusedClearly() throws Exception {
        byte[] bytes = goldenStream();
        int heads = 0;
        try (Reader r = Reader.of(bytes)) {
            for (Tensor t0; (t0 = r.read()) != null; ) {
                try (Tensor t = t0) {
                    if (!t.descriptor().buffers().isEmpty()) {
                        continue;
                    }
                    heads++;
                    for (org.junit.jupiter.api.function.Executable copy : List.<org.junit.jupiter.api.function.Executable>of(
                            t::toByteArray, t::toFloatArray, t::toIntArray, t::toLongArray, t::toShortArray,
                            t::toDoubleArray)) {
                        assertThrows(IllegalStateException.class, copy);
                    }
                    IllegalStateException e = assertThrows(IllegalStateException.class, t::toByteArray);
                    assertTrue(e.getMessage().contains("no buffers"), e.getMessage());
                }
            }
        }
        assertTrue(heads > 0, "the golden stream holds a composite head");
    }

    /** The Rust-written golden stream (src/golden/stream_v2_sparse_composite.hrry) reads the same in Java. */
    @Test
    void theRustGoldenStreamReadsIdenticallyInJava() throws Exception {
        byte[] bytes = goldenStream();
        try (Reader r = Reader.of(bytes)) {
            try (Item first = r.nextItem(); Tensor d = first.tensor().orElseThrow().densify()) {
                assertEquals("csr", first.tensor().orElseThrow().descriptor().name().orElseThrow());
                assertArrayEquals(new float[] {0, 1.5f, 0, 0, 0, 0, -2, 3}, d.toFloatArray());
            }
            try (Item second = r.nextItem()) {
                Composite c = second.composite().orElseThrow();
                assertEquals("layer0", c.name().orElseThrow());
                assertEquals(List.of("weight", "kv", "kv/cache", "kv/scales", "bias"),
                        c.walk().stream().map(Composite.Node::path).toList());
                Tensor cache = c.tensor("kv/cache");
                assertEquals(Layout.Kind.PAGED, cache.descriptor().layout().kind());
                // Pages of 2 rows x 4 floats, values 0,1,2,…; blocks 0,1,2 in pages 3,1,0; 5 rows.
                float[] want = new float[20];
                int[] table = {3, 1, 0};
                for (int i = 0; i < 20; i++) {
                    want[i] = table[i / 8] * 8 + i % 8;
                }
                try (Tensor g = cache.gather()) {
                    assertArrayEquals(want, g.toFloatArray());
                }
                assertArrayEquals(new float[] {0.5f, 0.25f, 2f, 1f}, c.tensor("bias").toFloatArray());
            }
            assertNull(r.nextItem());
        }
    }

    @Test
    void badCompositesGetClearErrors() throws Exception {
        try (Tensor w = csr(); Writer writer = Writer.of(new ByteArrayOutputStream())) {
            HurrayException e = assertThrows(HurrayException.class,
                    () -> writer.write(Composite.builder().add("a/b", w)));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertEquals(Status.DUPLICATE_NAME, assertThrows(HurrayException.class,
                    () -> writer.write(Composite.builder().add("x", w).add("x", w))).status());
        }
        // A stream cut inside a composite: the end arrives after the head and one member.
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Tensor w = csr(); Writer writer = Writer.of(out)) {
            writer.write(Composite.builder().add("a", w).add("b", w));
        }
        byte[] whole = out.toByteArray();
        byte[] cut = Arrays.copyOf(whole, whole.length - 40);
        try (Reader r = Reader.of(cut)) {
            assertEquals(Status.TRUNCATED, assertThrows(HurrayException.class, r::nextItem).status());
        }
    }

    /** A container whose composite head promises a member that is not stored: refused by the index-only check and verify. */
    @Test
    void aContainerCompositeMissingAMemberFailsTheStructureCheck(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Tensor w = csr(); Writer writer = Writer.of(out)) {
            writer.write(Composite.builder("x").add("a", w).add("b", w));
        }
        Path file = dir.resolve("bad.hrry");
        try (Reader r = Reader.of(out.toByteArray()); Tensor head = r.read(); Tensor a = r.read();
             HurrayFileWriter fw = HurrayFile.create(file)) {
            fw.add(head.descriptor().withName("x"));
            fw.add(a.descriptor().withName("x/a"), a.buffers().toArray(MemorySegment[]::new));
            fw.finish();
        }
        try (HurrayFile f = HurrayFile.open(file)) {
            HurrayException e = assertThrows(HurrayException.class, f::checkComposites);
            assertEquals(Status.CORRUPT, e.status());
            assertTrue(e.getMessage().contains("\"x/b\""), e.getMessage());
            assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, f::verify).status());
        }
        Path good = dir.resolve("good.hrry");
        try (Tensor w = csr(); HurrayFileWriter fw = HurrayFile.create(good)) {
            fw.add(layer(w, w));
            fw.finish();
        }
        try (HurrayFile f = HurrayFile.open(good)) {
            f.checkComposites();
            f.verify();
        }
    }
}
