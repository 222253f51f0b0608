package dev.hurray.cli.io;

import dev.hurray.TensorDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * One tensor as it moves from a {@link Source} to a {@link Sink}: its Hurray descriptor (name
 * included) and its buffers in buffer-table order, each exactly its buffer's byte size and
 * aligned as declared (64 bytes at least).
 *
 * <p><b>Lifetime.</b> An item is only valid during the {@link Source.Action} call that receives
 * it: the source may close or reuse the payload memory afterwards. A sink that keeps payloads
 * (the foreign-format sink, which writes everything at commit) copies them.
 *
 * @param descriptor the tensor's descriptor
 * @param payloads the buffers, buffer-table order
 * @param sourceOffset byte offset of buffer 0 in the source file, or -1 when it has none
 */
public record Item(TensorDescriptor descriptor, List<MemorySegment> payloads, long sourceOffset) {
    public Item {
        payloads = List.copyOf(payloads);
    }

    /** The tensor's name (sources always name their tensors; empty string if not). */
    public String name() {
        return descriptor.name().orElse("");
    }

    /** Sum of the payload sizes in bytes. */
    public long bytes() {
        long n = 0;
        for (MemorySegment s : payloads) {
            n += s.byteSize();
        }
        return n;
    }
}
