package dev.hurray.bench;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * Arrow Java IPC as a reference line: a tensor of {@code size} bytes is carried as the natural
 * Arrow equivalent, one batch holding one non-nullable-in-practice {@code Float4Vector} of
 * {@code size / 4} values (Arrow adds a validity bitmap of {@code size / 32} bytes, which the
 * figures do not count as payload).
 */
final class ArrowSupport {
    private ArrowSupport() {
    }

    /** A root with one float32 column of {@code size / 4} values whose data bytes are {@link Payloads}' pattern. */
    static VectorSchemaRoot patternRoot(BufferAllocator allocator, int size) {
        if (size % 4 != 0) {
            throw new IllegalArgumentException("Arrow reference payloads are float32: size must be a multiple of 4");
        }
        Float4Vector v = new Float4Vector("x", allocator);
        int n = size / 4;
        v.allocateNew(n);
        for (int i = 0; i < n; i++) {
            v.setIndexDefined(i);
        }
        Payloads.fill(data(v.getDataBuffer(), size));
        v.setValueCount(n);
        return new VectorSchemaRoot(List.of(v));
    }

    /** The first {@code size} bytes of an Arrow buffer as a segment (valid while the buffer is). */
    static MemorySegment data(ArrowBuf buf, long size) {
        return MemorySegment.ofAddress(buf.memoryAddress()).reinterpret(size);
    }

    /** The data bytes of the root's single float32 column. */
    static MemorySegment data(VectorSchemaRoot root) {
        Float4Vector v = (Float4Vector) root.getVector(0);
        return data(v.getDataBuffer(), 4L * v.getValueCount());
    }
}
