package dev.hurray.arrow;

import dev.hurray.Layout;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.lang.foreign.MemorySegment;

/** A tensor's elements in logical C order, whatever its (dense or strided) layout. */
final class TensorBytes {
    private TensorBytes() {
    }

    static byte[] logical(Tensor t) {
        TensorDescriptor d = t.descriptor();
        int es = (int) d.elementType().byteSizeOf(1);
        long[] dims = d.shape().dims();
        long n = d.elementCount();
        byte[] out = new byte[(int) (n * es)];
        MemorySegment buf = t.buffer(0);
        if (d.layout().kind() != Layout.Kind.STRIDED) {
            MemorySegment.copy(buf, java.lang.foreign.ValueLayout.JAVA_BYTE, d.byteOffset(), out, 0, out.length);
            return out;
        }
        long[] strides = d.layout().strides();
        long[] idx = new long[dims.length];
        for (long k = 0; k < n; k++) {
            long off = 0;
            for (int i = 0; i < dims.length; i++) {
                off += idx[i] * strides[i];
            }
            MemorySegment.copy(buf, java.lang.foreign.ValueLayout.JAVA_BYTE, d.byteOffset() + off * es, out, (int) (k * es), es);
            for (int i = dims.length - 1; i >= 0; i--) {
                if (++idx[i] < dims[i]) {
                    break;
                }
                idx[i] = 0;
            }
        }
        return out;
    }
}
