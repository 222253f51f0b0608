package dev.hurray.cli.io;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import dev.hurray.formats.Payloads;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * {@code --dequantize} for Hurray inputs: replaces a quantized tensor by its values in the
 * quantization's declared dequantized type, computed by the native core
 * ({@link Tensor#dequantize(ElementType)}; docs/spec/descriptor.md §Dequantization). Per-tensor
 * affine is {@code q × scale + bias} in float64 rounded once, which is tfjs's own arithmetic,
 * so a tfjs model converted to HRRYFILE and dequantized here gives the bits
 * {@code hurray convert --dequantize model.json} (and tfjs) gives.
 */
public final class Dequantize {
    private Dequantize() {
    }

    /**
     * {@code item} itself if it is not quantized, else a new item of the dequantized type, no
     * quantization, the same name, layout kind and metadata, its values in memory allocated in
     * {@code arena}.
     *
     * @throws ForeignFormatException when the core cannot dequantize it (its message says why)
     */
    public static Item apply(Item item, Arena arena) throws ForeignFormatException {
        TensorDescriptor d = item.descriptor();
        if (d.quantization().isEmpty()) {
            return item;
        }
        Quantization q = d.quantization().get();
        ElementType out = q.dequantized();
        try (Tensor src = Tensor.copyOf(d, item.payloads().toArray(MemorySegment[]::new));
                Tensor f = src.dequantize(out)) {
            MemorySegment dst = Payloads.allocate(arena, f.buffer(0).byteSize());
            MemorySegment.copy(f.buffer(0), 0, dst, 0, dst.byteSize());
            TensorDescriptor.Builder b = TensorDescriptor.builder(out, d.shape()).layout(f.descriptor().layout())
                    .buffer(BufferSpec.cpu(dst.byteSize()));
            d.name().ifPresent(b::name);
            d.metadata().forEach(b::metadata);
            return new Item(b.build(), List.of(dst), -1);
        } catch (HurrayException | IllegalArgumentException e) {
            throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(item.name()) + "' (" + d.elementType() + ", "
                    + Entry.describe(q) + "): " + e.getMessage(), e);
        }
    }
}
