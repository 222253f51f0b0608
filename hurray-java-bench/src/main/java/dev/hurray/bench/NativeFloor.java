package dev.hurray.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.ElementType;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.ffm.HurrayReaderOptions;
import dev.hurray.ffm.HurrayTransport;
import dev.hurray.ffm.HurrayTransportReadFn;
import dev.hurray.ffm.hurray_h;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The native floor of reading small tensors from Java: the same replayed stream as
 * {@link InMemory}'s read set-up, read through the raw bindings only: per tensor one
 * {@code hurray_reader_next_tensor} and one {@code hurray_tensor_destroy} (the read upcall is
 * amortised over the 64 KiB read-ahead), with none of the Java API's per-tensor work
 * (descriptor and buffer look-ups, the tensor's arena). {@code InMemory.read()} minus this is
 * what the Java layer adds.
 */
final class NativeFloor implements AutoCloseable {
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment head;
    private final MemorySegment item;
    private final MemorySegment slot;
    private final MemorySegment reader;
    private long headPos;
    private long itemPos;

    NativeFloor(int size) throws IOException {
        byte[] stream;
        MemorySegment payload = arena.allocate(size, 64);
        Payloads.fill(payload);
        try (Writer w = Writer.toMemory(); Tensor t = Tensor.wrap(payload, TensorDescriptor.of(ElementType.FLOAT32, size / 4))) {
            w.write(t);
            w.finish();
            stream = w.toByteArray();
        }
        // header (16 bytes) + one item + end marker (24 bytes): docs/spec/stream.md §Layout
        head = arena.allocate(16).copyFrom(MemorySegment.ofArray(stream).asSlice(0, 16));
        item = arena.allocate(stream.length - 40).copyFrom(MemorySegment.ofArray(stream).asSlice(16, stream.length - 40));
        MemorySegment t = HurrayTransport.allocate(arena);
        HurrayTransport.ctx(t, MemorySegment.NULL);
        HurrayTransport.read(t, HurrayTransportReadFn.allocate(this::read, arena));
        MemorySegment opts = HurrayReaderOptions.allocate(arena);
        check(hurray_h.hurray_reader_options_init(opts));
        slot = arena.allocate(ADDRESS);
        check(hurray_h.hurray_reader_new(t, opts, slot));
        reader = slot.get(ADDRESS, 0);
    }

    /** The read upcall: fills {@code dst} from the header, then from the item over and over. */
    private int read(MemorySegment ctx, MemorySegment dst, long len, MemorySegment outFilled) {
        try {
            MemorySegment d = dst.reinterpret(len);
            long n = 0;
            while (n < len) {
                long k;
                if (headPos < head.byteSize()) {
                    k = Math.min(len - n, head.byteSize() - headPos);
                    MemorySegment.copy(head, headPos, d, n, k);
                    headPos += k;
                } else {
                    k = Math.min(len - n, item.byteSize() - itemPos);
                    MemorySegment.copy(item, itemPos, d, n, k);
                    itemPos = (itemPos + k) % item.byteSize();
                }
                n += k;
            }
            outFilled.reinterpret(8).set(JAVA_LONG, 0, n);
            return 0;
        } catch (Throwable e) {
            return hurray_h.HURRAY_ERR_TRANSPORT();
        }
    }

    /** Reads one tensor and destroys it: two downcalls. */
    long readOne() throws IOException {
        check(hurray_h.hurray_reader_next_tensor(reader, slot));
        check(hurray_h.hurray_tensor_destroy(slot));
        return item.byteSize();
    }

    private static void check(int rc) throws IOException {
        if (rc != 0) {
            throw new IOException("native status " + rc);
        }
    }

    @Override
    public void close() {
        slot.set(ADDRESS, 0, reader);
        hurray_h.hurray_reader_destroy(slot);
        arena.close();
    }
}
