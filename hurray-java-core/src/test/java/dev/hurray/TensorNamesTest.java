package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The one name rule (docs/spec/descriptor.md §Names), as the native core applies it. */
class TensorNamesTest {
    @Test
    void names() throws HurrayException {
        for (String ok : new String[] {"", "w", "layer.0/weight", "../x", "/abs", "ünï"}) {
            TensorNames.check(ok);
        }
        HurrayException nul = assertThrows(HurrayException.class, () -> TensorNames.check("a\0b"));
        assertEquals(Status.INVALID_ARGUMENT, nul.status());
        assertTrue(nul.nativeMessage().contains("NUL"), nul.nativeMessage());
        assertEquals(Status.LIMIT_EXCEEDED,
                assertThrows(HurrayException.class, () -> TensorNames.check("x".repeat(4097))).status());
        TensorNames.check("x".repeat(4096));
    }

    @Test
    void pathNames() {
        for (String ok : new String[] {"w", "layer.0/weight", "..x", "a b/c"}) {
            assertTrue(TensorNames.isPath(ok), ok);
        }
        for (String bad : new String[] {"", "../x", "a/..", "./x", "/etc/x", "a//b", "a/", "C:x", "a\\b", "a\nb", "a\0"}) {
            assertFalse(TensorNames.isPath(bad), bad);
        }
        HurrayException e = assertThrows(HurrayException.class, () -> TensorNames.checkPath("../x.npy"));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertTrue(e.nativeMessage().contains(".."), e.nativeMessage());
    }

    @Test
    void aDescriptorNameFollowsTheSameRule() {
        assertEquals(Status.INVALID_ARGUMENT, TestSupport.refusedBuild(
                () -> TensorDescriptor.builder(ElementType.FLOAT32, 1).name("a\0b").build()).status());
    }
    /**
     * A Java string with an unpaired UTF-16 surrogate has no UTF-8 form: naming a tensor with
     * one is refused everywhere a name enters the format, instead of becoming "x?y" (which
     * would then collide with a real "x?y"); looking one up finds nothing.
     */
    @Test
    void unpairedSurrogatesAreRefusedNotReplaced(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        String lone = "x\uD800y";
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, 2);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.withName(lone));
        assertTrue(e.getMessage().contains("unpaired UTF-16 surrogate"), e.getMessage());
        assertEquals(Status.INVALID_ARGUMENT, TestSupport.refusedBuild(
                () -> TensorDescriptor.builder(ElementType.FLOAT32, 2).name("\uDC00").build()).status());
        assertEquals(Status.INVALID_ARGUMENT, TestSupport.refusedBuild(
                () -> TensorDescriptor.builder(ElementType.FLOAT32, 2).metadata("k\uD800", "v").build()).status());
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> TensorNames.check(lone)).status());
        // A proper pair (an emoji) is fine and round-trips.
        String emoji = "x\uD83D\uDE00y";
        TensorDescriptor ok = d.withName(emoji);
        assertEquals(ok, TensorDescriptor.decode(ok.encode()));
        java.nio.file.Path path = dir.resolve("s.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path); Tensor t = Tensor.of(new float[] {1, 2}, 2)) {
            w.add("x?y", t);
            assertThrows(HurrayException.class, () -> w.add(lone, t));
            w.finish();
        }
        try (HurrayFile f = HurrayFile.open(path)) {
            assertTrue(f.entry("x?y").isPresent());
            assertFalse(f.entry(lone).isPresent(), "a lone surrogate is not '?'");
            assertEquals(Status.NOT_FOUND, assertThrows(HurrayException.class, () -> f.read(lone)).status());
            assertEquals(Status.NOT_FOUND, assertThrows(HurrayException.class, () -> f.readComposite(lone)).status());
            assertFalse(f.metadata(lone).isPresent());
        }
        assertThrows(IllegalArgumentException.class,
                () -> TensorDescriptor.builder(ElementType.FLOAT32, 2).metadata("k", "v\uDFFF"));
        try (HurrayFileWriter w = HurrayFile.create(dir.resolve("m.hrry"))) {
            assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> w.metadata(lone, "v")).status());
            assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> w.metadata("k", lone)).status());
        }
    }

    @Test
    void forMessageClipsLongNamesWithTheirLengthAndEscapesControlCharacters() {
        assertEquals("w.0", TensorNames.forMessage("w.0"));
        String max = "n".repeat(TensorNames.MESSAGE_CHARS);
        assertEquals(max, TensorNames.forMessage(max));
        assertEquals(max + "… (4097 bytes)", TensorNames.forMessage("n".repeat(TensorNames.MESSAGE_CHARS) + "m".repeat(4097 - 64)));
        assertEquals("é".repeat(64) + "… (260 bytes)", TensorNames.forMessage("é".repeat(130)));
        assertEquals("a\\x00b\\x1b\\x9b", TensorNames.forMessage("a\u0000b\u001b\u009b"));
        String emoji = "\uD83D\uDE00".repeat(70); // 70 code points of 4 UTF-8 bytes: clipped by code point
        assertEquals("\uD83D\uDE00".repeat(64) + "… (280 bytes)", TensorNames.forMessage(emoji));
        assertEquals("null", TensorNames.forMessage(null));
    }
}
