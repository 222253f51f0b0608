package dev.hurray.formats;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Random;

/** Builds in-memory models for tests. */
final class Models {
    private Models() {
    }

    /** A tensor of {@code dtype}/{@code shape} filled with seeded random bytes. */
    static ForeignTensor random(Arena arena, Random rnd, String name, ElementType dtype, Layout.Kind layout, long... shape) {
        long bytes = dtype.byteSizeOf(ForeignTensor.elementCount(shape));
        MemorySegment seg = Payloads.allocate(arena, bytes);
        byte[] b = new byte[(int) bytes];
        rnd.nextBytes(b);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, seg, 0, bytes);
        return new ForeignTensor(name, dtype, shape, layout, seg, null, -1);
    }

    static ForeignModel model(List<ForeignTensor> tensors, Map<String, String> metadata) {
        return new ForeignModel(tensors, metadata, null);
    }

    /**
     * The test's own column-major → row-major reorder: for every row-major index, computes the
     * column-major offset from scratch (no incremental odometer, unlike the code under test).
     */
    static byte[] rowMajorOf(byte[] colMajor, long[] shape, int width) {
        int n = (int) ForeignTensor.elementCount(shape);
        byte[] out = new byte[colMajor.length];
        int rank = shape.length;
        for (int r = 0; r < n; r++) {
            long rem = r;
            long[] idx = new long[rank];
            for (int k = rank - 1; k >= 0; k--) {
                idx[k] = rem % shape[k];
                rem /= shape[k];
            }
            long off = 0;
            long stride = 1;
            for (int k = 0; k < rank; k++) {
                off += idx[k] * stride;
                stride *= shape[k];
            }
            System.arraycopy(colMajor, (int) off * width, out, r * width, width);
        }
        return out;
    }
}
