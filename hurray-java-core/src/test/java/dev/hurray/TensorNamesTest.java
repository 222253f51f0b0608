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
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class,
                () -> TensorDescriptor.builder(ElementType.FLOAT32, 1).name("a\0b").build()).status());
    }
}
