package dev.hurray;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The zero-copy {@code java.nio} views of {@link Tensor} and {@link TensorShare}: a view aliases
 * the tensor's memory, is little-endian (the format's byte order), and is valid exactly as long
 * as the segment it was made from (touching it after the tensor is closed throws
 * {@link IllegalStateException}). {@code java.nio} buffers are indexed by {@code int}, so a view
 * of more than {@link Integer#MAX_VALUE} bytes (2 GiB) is refused with a message pointing at the
 * {@link MemorySegment} API.
 */
final class TensorViews {
    private TensorViews() {
    }

    /** Buffer 0, whole, as bytes. */
    static ByteBuffer bytes(TensorDescriptor d, MemorySegment buffer0) {
        return view(buffer0, "buffer 0");
    }

    /**
     * The dense row-major elements of buffer 0 from the descriptor's byte offset on, for an
     * element type among {@code accepted}.
     */
    static ByteBuffer elements(TensorDescriptor d, MemorySegment buffer0, int elementBytes, ElementType... accepted) {
        ElementType t = d.elementType();
        if (!Arrays.asList(accepted).contains(t)) {
            throw new IllegalStateException("tensor is " + t + "; this view needs " + Arrays.toString(accepted));
        }
        if (d.layout().kind() != Layout.Kind.ROW_MAJOR) {
            throw new IllegalStateException("tensor layout is " + d.layout()
                    + "; typed views are row-major only (use asByteBuffer() or buffer(0))");
        }
        long n = d.elementCount();
        if (n > Long.MAX_VALUE / elementBytes) {
            throw new IllegalStateException(n + " elements overflow a byte count");
        }
        return view(buffer0.asSlice(d.byteOffset(), n * elementBytes), "the elements");
    }

    private static ByteBuffer view(MemorySegment s, String what) {
        if (s.byteSize() > Integer.MAX_VALUE) {
            throw new IllegalStateException(what + " span " + s.byteSize() + " bytes, above the 2 GiB ("
                    + Integer.MAX_VALUE + " bytes) a java.nio buffer can address; use buffer(0), a MemorySegment");
        }
        return s.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }
}
