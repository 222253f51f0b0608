package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.hurray_h;
import dev.hurray.internal.Native;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** ElementType, Shape, Layout, DeviceTag, SyncMode, BufferSpec and Status against the C ABI. */
class ValueTypesTest {
    @Test
    void elementTypesCoverEveryCodeOfTheHeader() throws Exception {
        assertEquals(26, ElementType.values().length);
        Set<Integer> codes = new HashSet<>();
        for (Method m : hurray_h.class.getMethods()) {
            if (m.getName().startsWith("HURRAY_DTYPE_") && Modifier.isStatic(m.getModifiers())) {
                int code = (int) m.invoke(null);
                codes.add(code);
                ElementType t = ElementType.fromCode(code);
                assertEquals(m.getName().substring("HURRAY_DTYPE_".length()), t.name());
            }
        }
        assertEquals(26, codes.size());
        for (ElementType t : ElementType.values()) {
            assertSame(t, ElementType.fromFormatName(t.formatName()));
            assertEquals(t.formatName(), t.toString());
        }
        assertEquals(4, ElementType.INT4.bitWidth());
        assertEquals(128, ElementType.COMPLEX128.bitWidth());
        assertEquals(8, ElementType.BOOL.bitWidth());
        assertEquals("float8_e4m3fn", ElementType.FLOAT8_E4M3FN.formatName());
        assertEquals(3, ElementType.INT4.byteSizeOf(5));
        assertEquals(3, ElementType.FLOAT6_E2M3FN.byteSizeOf(4));
        assertEquals(4, ElementType.FLOAT6_E3M2FN.byteSizeOf(5));
        assertEquals(80, ElementType.COMPLEX64.byteSizeOf(10));
        assertThrows(ArithmeticException.class, () -> ElementType.FLOAT64.byteSizeOf(Long.MAX_VALUE));
        assertThrows(IllegalArgumentException.class, () -> ElementType.fromCode(26));
        // The dense byte counts the Java type computes agree with the native builder's default buffer.
        for (ElementType t : ElementType.values()) {
            assertEquals(t.byteSizeOf(7 * 3), TensorDescriptor.of(t, 7, 3).buffers().get(0).byteSize(), t.formatName());
        }
    }

    @Test
    void shapes() {
        assertEquals(0, Shape.scalar().rank());
        assertEquals(1, Shape.scalar().elementCount());
        assertEquals(Shape.scalar(), Shape.of());
        assertEquals(24, Shape.of(2, 3, 4).elementCount());
        assertEquals(0, Shape.of(0, Long.MAX_VALUE, Long.MAX_VALUE).elementCount(), "a zero dimension never overflows");
        assertEquals("[2,3]", Shape.of(2, 3).toString());
        assertEquals("[]", Shape.scalar().toString());
        assertEquals(Shape.of(2, 3), Shape.of(2, 3));
        assertEquals(Shape.of(2, 3).hashCode(), Shape.of(2, 3).hashCode());
        assertNotEquals(Shape.of(3, 2), Shape.of(2, 3));
        assertThrows(IllegalArgumentException.class, () -> Shape.of(1L << 32, 1L << 32));
        assertThrows(IllegalArgumentException.class, () -> Shape.of(-1));
        assertThrows(IllegalArgumentException.class, () -> Shape.of(new long[33]));
        Shape.of(new long[32]);
        long[] dims = {4, 5};
        Shape s = Shape.of(dims);
        dims[0] = 9;
        assertEquals(4, s.dim(0), "Shape copies its input");
        s.dims()[1] = 9;
        assertEquals(5, s.dim(1), "and its output");
        assertEquals(hurray_h.HURRAY_MAX_RANK(), Shape.MAX_RANK);
        // Asked again, the same shape is served from the last one made; the checks still apply.
        Shape first = Shape.of(768);
        assertEquals(first, Shape.of(768));
        assertThrows(IllegalArgumentException.class, () -> Shape.of(-768));
        assertThrows(IllegalArgumentException.class, () -> Shape.of(768, -1));
        assertEquals(768, Shape.of(768).elementCount());
        assertEquals(Shape.of(768, 2), Shape.of(768, 2));
        assertNotEquals(Shape.of(768), Shape.of(768, 1));
    }

    @Test
    void layouts() {
        assertEquals("row-major", Layout.rowMajor().toString());
        assertEquals("column-major", Layout.columnMajor().toString());
        assertEquals("strided(3,-1,0)", Layout.strided(3, -1, 0).toString());
        assertEquals(Layout.strided(1, 2), Layout.strided(1, 2));
        assertNotEquals(Layout.strided(1, 2), Layout.strided(2, 1));
        assertArrayEquals(new long[0], Layout.rowMajor().strides());
        assertEquals(hurray_h.HURRAY_LAYOUT_STRIDED(), Layout.Kind.STRIDED.code());
        // Codes 3-7 are the sparse and paged layouts of descriptor version 2; 8 is unknown.
        assertEquals(Layout.Kind.CSR, Layout.Kind.fromCode(hurray_h.HURRAY_LAYOUT_CSR()));
        assertEquals(Layout.Kind.PAGED, Layout.Kind.fromCode(7));
        assertThrows(IllegalArgumentException.class, () -> Layout.Kind.fromCode(8));
    }

    @Test
    void deviceTagsAndSyncModes() {
        assertEquals(7, DeviceTag.values().length);
        assertEquals(DeviceTag.IPC, DeviceTag.fromCode(hurray_h.HURRAY_DEVICE_IPC()));
        assertEquals(64, DeviceTag.CPU.minAlignment());
        assertEquals(4096, DeviceTag.CUDA.minAlignment());
        assertEquals(hurray_h.HURRAY_MIN_BUFFER_ALIGNMENT(), DeviceTag.MIN_ALIGNMENT);
        assertEquals(hurray_h.HURRAY_DEVICE_BUFFER_ALIGNMENT(), DeviceTag.DEVICE_ALIGNMENT);
        assertEquals(hurray_h.HURRAY_MAX_BUFFER_ALIGNMENT(), DeviceTag.MAX_ALIGNMENT);
        for (SyncMode m : SyncMode.values()) {
            assertSame(m, SyncMode.fromCode(m.code()));
        }
        for (int reserved = 3; reserved <= 0xFE; reserved++) {
            int code = reserved;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SyncMode.fromCode(code));
            assertTrue(e.getMessage().contains("INVALID_SYNC_MODE"));
        }
        assertThrows(IllegalArgumentException.class, () -> SyncMode.fromCode(hurray_h.HURRAY_SYNC_INVALID()));
        assertThrows(IllegalArgumentException.class, () -> new BufferSpec(-1, 64, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED));
        assertThrows(IllegalArgumentException.class, () -> new BufferSpec(1, 0, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED));
        assertEquals("8B@4096 cuda event", new BufferSpec(8, 4096, DeviceTag.CUDA, SyncMode.EVENT).toString());
    }

    @Test
    void statusesMatchTheNativeNames() throws Exception {
        Set<Integer> values = new HashSet<>();
        for (Status s : Status.values()) {
            if (s == Status.UNKNOWN) {
                continue;
            }
            assertTrue(values.add(s.value()), "duplicate value " + s.value());
            assertEquals(s.constantName(), Native.statusName(s.value()));
            assertSame(s, Status.fromValue(s.value()));
            assertEquals(s.value() < 0, s.isError());
        }
        // every status constant of the header has an enum member
        int constants = 0;
        for (Method m : hurray_h.class.getMethods()) {
            String n = m.getName();
            if (Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 0
                    && (n.startsWith("HURRAY_ERR_") || n.equals("HURRAY_OK") || n.equals("HURRAY_END_OF_STREAM")
                        || n.equals("HURRAY_NEED_INPUT"))) {
                constants++;
                Status s = Status.fromValue((int) m.invoke(null));
                assertEquals(n, s.constantName());
            }
        }
        assertEquals(Status.values().length - 1, constants);
        assertSame(Status.UNKNOWN, Status.fromValue(-999));
        assertEquals("HURRAY_UNKNOWN_STATUS", Native.statusName(-999));
        HurrayException e = new HurrayException(Status.UNKNOWN, -999, "", null);
        assertEquals(-999, e.code());
        assertEquals("status -999", e.getMessage());
    }
}
