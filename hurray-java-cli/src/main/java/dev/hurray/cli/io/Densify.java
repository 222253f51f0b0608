package dev.hurray.cli.io;

import dev.hurray.BufferSpec;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.Status;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import dev.hurray.formats.Payloads;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * {@code --densify}: replaces a sparse tensor (COO, CSR, CSC, BSR) by its dense row-major form
 * and a block-paged one by its gathered form, computed by the native core
 * ({@link Tensor#densify(long)}, {@link Tensor#gather(long)}); other tensors pass unchanged.
 * The dense byte count comes from the descriptor and is checked against the limit before
 * anything is allocated.
 */
public final class Densify {
    private Densify() {
    }

    /** The transform with a limit of {@code maxBytes} per dense tensor. */
    public static Pipeline.Transform upTo(long maxBytes) {
        return (item, arena) -> apply(item, arena, maxBytes);
    }

    /**
     * {@code item} itself unless it is sparse or paged, else a new dense item with the same
     * name, element type, shape and metadata, its bytes in {@code arena}.
     *
     * @throws ForeignFormatException naming the tensor when the dense form exceeds
     *     {@code maxBytes} (the message names {@code --max-dense-bytes}), when it is a member of a
     *     composite, or when the core refuses its indices
     */
    public static Item apply(Item item, Arena arena, long maxBytes) throws IOException {
        TensorDescriptor d = item.descriptor();
        Layout.Kind k = d.layout().kind();
        boolean sparse = k.isSparse();
        if (!sparse && k != Layout.Kind.PAGED) {
            return item;
        }
        if (d.compositeMembership().isPresent()) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(item.name()) + "' (" + d.layout() + ") is a member of a composite; "
                    + "--densify densifies standalone sparse and paged tensors only");
        }
        try (Tensor src = Tensor.copyOf(d, item.payloads().toArray(MemorySegment[]::new));
             Tensor dense = sparse ? src.densify(maxBytes) : src.gather(maxBytes)) {
            MemorySegment dst = Payloads.allocate(arena, dense.buffer(0).byteSize());
            MemorySegment.copy(dense.buffer(0), 0, dst, 0, dst.byteSize());
            TensorDescriptor.Builder b = TensorDescriptor.builder(d.elementType(), d.shape())
                    .buffer(BufferSpec.cpu(dst.byteSize()));
            d.name().ifPresent(b::name);
            d.metadata().forEach(b::metadata);
            return new Item(b.build(), List.of(dst), -1);
        } catch (HurrayException e) {
            String why = e.status() == Status.LIMIT_EXCEEDED
                    ? "its dense form of " + denseBytes(d) + " bytes is over --max-dense-bytes=" + maxBytes
                    + " (pass a larger --max-dense-bytes to allow it)"
                    : e.getMessage();
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(item.name()) + "' (" + d.elementType().formatName() + d.shape()
                    + ", " + d.layout() + "): " + why, e);
        }
    }

    private static String denseBytes(TensorDescriptor d) {
        try {
            return Long.toString(d.elementType().byteSizeOf(d.elementCount()));
        } catch (ArithmeticException | IllegalArgumentException e) {
            return "more than 2^63";
        }
    }
}
