package dev.hurray.cli.io;

import dev.hurray.formats.ForeignFormatException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.function.LongConsumer;

/** Moves every tensor of a {@link Source} into a {@link Sink}, tensor by tensor. */
public final class Pipeline {
    /**
     * What was moved.
     *
     * @param tensors tensors written (file metadata items excluded)
     * @param bytes payload bytes written
     */
    public record Stats(long tensors, long bytes) {
    }

    private Pipeline() {
    }

    /**
     * {@code sink.begin(metadata)}, {@code sink.accept} for each tensor, {@code sink.commit()}.
     * The caller closes both.
     *
     * @param dequantize replace quantized tensors by their values ({@link Dequantize}) on the way
     * @param progress called with each tensor's payload bytes once written, or null
     * @throws WriteFailure wrapping whatever the sink threw
     * @throws IOException whatever the source threw (bad or unreadable input)
     */
    public static Stats copy(Source source, Sink sink, boolean dequantize, LongConsumer progress) throws IOException {
        return copy(source, sink, dequantize ? Dequantize::apply : (item, scratch) -> item, progress);
    }

    /** Changes one tensor on its way from source to sink, in memory from {@code scratch}. */
    @FunctionalInterface
    public interface Transform {
        /** The tensor to write instead of {@code item}. @throws IOException to stop the copy */
        Item apply(Item item, Arena scratch) throws IOException;
    }

    /**
     * As {@link #copy(Source, Sink, boolean, LongConsumer)}, with {@code transform} applied to
     * each tensor (e.g. {@code --dequantize} then {@code --quantize}).
     */
    public static Stats copy(Source source, Sink sink, Transform transform, LongConsumer progress) throws IOException {
        try {
            sink.begin(source.metadata());
        } catch (IOException e) {
            throw new WriteFailure(e);
        }
        long[] counts = new long[2];
        source.forEach(item -> {
            try (Arena scratch = Arena.ofConfined()) {
                Item it = transform.apply(item, scratch);
                if (it != item && item.descriptor().compositeMembership().isPresent()
                        && it.descriptor().compositeMembership().isEmpty()) {
                    // A changed member would lose its place in its composite, and the output
                    // would be a malformed composite (docs/spec/stream.md §Composites).
                    throw new ForeignFormatException("tensor '" + dev.hurray.TensorNames.forMessage(item.name()) + "' is a member of a composite; "
                            + "--dequantize, --quantize and --densify change standalone tensors only");
                }
                try {
                    sink.accept(it);
                } catch (IOException e) {
                    throw new WriteFailure(e);
                }
                counts[0]++;
                counts[1] += it.bytes();
                if (progress != null) {
                    progress.accept(item.bytes());
                }
            }
        });
        try {
            sink.commit();
        } catch (IOException e) {
            throw new WriteFailure(e);
        }
        return new Stats(counts[0], counts[1]);
    }
}
