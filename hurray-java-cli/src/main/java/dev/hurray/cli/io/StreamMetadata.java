package dev.hurray.cli.io;

import dev.hurray.ElementType;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import java.util.Map;

/**
 * File-level metadata as a stream's <em>first</em> item, read for compatibility with streams
 * that carry no metadata frame, and used by the Kafka transport, whose records are single-tensor
 * streams. The command writes file metadata in the stream's metadata frame (docs/spec/stream.md
 * §Stream metadata); this item is a {@code uint8} tensor of shape {@code [0]} (no payload bytes)
 * named {@value #NAME}, whose descriptor metadata entries are the file's entries, bytes unchanged. A
 * receiver that writes a file turns that item back into file metadata; any other reader sees
 * an ordinary empty tensor. A stream without file metadata has no such item.
 *
 * <p>The item is bounded by the descriptor's metadata limits (docs/spec/descriptor.md §Limits:
 * 256 entries, keys up to 256 bytes, values up to 64 KiB); larger file metadata cannot be sent
 * and is refused with a message. The name is the one safetensors reserves for the same purpose,
 * so no safetensors tensor can carry it; a tensor of another format named so is refused when
 * written to a stream.
 */
public final class StreamMetadata {
    /** The metadata item's tensor name. */
    public static final String NAME = "__metadata__";

    private StreamMetadata() {
    }

    /** True if {@code d} (the first item of a stream) is a metadata item. */
    public static boolean isMetadataItem(TensorDescriptor d) {
        return d.name().filter(NAME::equals).isPresent()
                && d.elementType() == ElementType.UINT8
                && d.shape().rank() == 1 && d.shape().dim(0) == 0
                && d.quantization().isEmpty();
    }

    /**
     * The metadata item for {@code metadata}.
     *
     * @throws ForeignFormatException if the entries exceed the descriptor's metadata limits
     */
    public static TensorDescriptor descriptor(Map<String, byte[]> metadata) throws ForeignFormatException {
        TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.UINT8, 0).name(NAME);
        metadata.forEach(b::metadata);
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new ForeignFormatException("the file metadata (" + metadata.size() + " entries) does not fit a stream's "
                    + "metadata item (at most 256 entries, keys up to 256 bytes, values up to 64 KiB): " + e.getMessage(), e);
        }
    }
}
