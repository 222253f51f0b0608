package dev.hurray.internal;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Shape;
import java.util.List;
import java.util.Map;

/**
 * The fields of a descriptor as Java values, read from (or about to be given to) a native
 * descriptor. Not a public API type: {@link dev.hurray.TensorDescriptor} wraps it.
 *
 * @param elementType stored element type
 * @param shape logical shape
 * @param layout layout of buffer 0
 * @param byteOffset offset of element 0 in buffer 0, bytes
 * @param buffers the buffer table (may be empty before a build: the native default applies)
 * @param quantization the quantization block, or null
 * @param name the name, or null
 * @param metadata key/value metadata in insertion order (values are not copied)
 */
public record DescriptorFields(
        ElementType elementType,
        Shape shape,
        Layout layout,
        long byteOffset,
        List<BufferSpec> buffers,
        Quantization quantization,
        String name,
        Map<String, byte[]> metadata) {
}
