package dev.hurray;

import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * u32 fields of the wire that the Java API holds as {@code int}: a value of 2^31 or more,
 * which the native core accepts, is a {@link HurrayException}, never a negative number that
 * fails later with an unchecked exception.
 */
class WireFieldsTest {
    @Test
    void anNf4BlockOf2To31IsAHurrayExceptionNotAnIllegalArgument() throws HurrayException {
        byte[] enc;
        try (Tensor src = Tensor.of(new float[100], 10, 10);
             Tensor q = src.quantize(ElementType.UINT4, new Quantization.Nf4(100, ElementType.FLOAT32, 0, ElementType.FLOAT32))) {
            enc = q.descriptor().encode();
        }
        int at = -1;
        for (int i = 0; i + 4 <= enc.length; i++) {
            if (enc[i] == 100 && enc[i + 1] == 0 && enc[i + 2] == 0 && enc[i + 3] == 0) {
                assertEquals(-1, at, "the block size is the only u32 of 100");
                at = i;
            }
        }
        enc[at + 3] = (byte) 0x80; // block = 2^31 + 100: one block still covers the 100 elements
        HurrayException e = assertThrows(HurrayException.class, () -> TensorDescriptor.decode(enc));
        assertEquals(Status.UNSUPPORTED, e.status(), e.getMessage());
    }
}
