package dev.hurray.cli.io;

import dev.hurray.CompositeMembership;
import dev.hurray.FileWriterOptions;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Writes an HRRYFILE container with {@link HurrayFile#create}: default writer options (payload
 * checksums on, 64-byte minimum payload alignment, forced to storage at finish), tensors added
 * in the order they arrive, file metadata from {@link #begin}. The container goes to a
 * temporary file that {@link #commit()} ({@link HurrayFileWriter#finish()}) renames into place;
 * closed without a commit, nothing is left at the target.
 */
public final class HrryFileSink implements Sink {
    private final HurrayFileWriter writer;

    private HrryFileSink(HurrayFileWriter writer) {
        this.writer = writer;
    }

    /**
     * A container at {@code target}.
     *
     * @throws IOException if the temporary file cannot be created (missing directory, a directory
     *     at the target, no permission)
     */
    public static HrryFileSink toFile(Path target) throws IOException {
        return toFile(target, true);
    }

    /**
     * A container at {@code target}; {@code sync} false skips forcing it to storage at finish
     * (for scratch files, such as the demo's).
     */
    public static HrryFileSink toFile(Path target, boolean sync) throws IOException {
        return new HrryFileSink(HurrayFile.create(target, FileWriterOptions.defaults().withSyncOnFinish(sync)));
    }

    @Override
    public void begin(Map<String, byte[]> metadata) throws IOException {
        for (Map.Entry<String, byte[]> e : metadata.entrySet()) {
            writer.metadata(e.getKey(), e.getValue());
        }
    }

    /** A composite being added: its container path and its members' roles. */
    private record Open(String path, List<String> roles) {
    }

    /** The composites being added, outermost first: element {@code k} is the head at depth {@code k}. */
    private final Deque<Open> open = new ArrayDeque<>();

    /**
     * Adds {@code item}. A composite member is stored under its composite's path and its role,
     * {@code head/role}, recursively ({@code layer0/kv/cache}; docs/spec/hrryfile.md §2), which
     * is how a container finds it: the name it carried on a stream, if any, is not kept.
     * Sources deliver composites whole and in preorder (checked), so the path follows from the
     * member's depth and index. A top-level tensor or composite needs its own name.
     */
    @Override
    public void accept(Item item) throws IOException {
        TensorDescriptor d = item.descriptor();
        Optional<CompositeMembership> c = d.compositeMembership();
        int depth = c.map(CompositeMembership::depth).orElse(0);
        while (open.size() > depth) {
            open.removeLast();
        }
        if (depth > 0) {
            Open parent = open.peekLast();
            if (parent == null || open.size() != depth || c.get().index() >= parent.roles().size()) {
                throw new ForeignFormatException("composite member at depth " + depth + " arrived outside its composite");
            }
            d = d.withName(parent.path() + "/" + parent.roles().get((int) c.get().index()));
        } else if (d.name().isEmpty()) {
            throw new ForeignFormatException("a " + (c.isPresent() ? "composite" : "tensor") + " without a name cannot be "
                    + "stored in an HRRYFILE (a container finds tensors and composites by name)");
        }
        if (c.isPresent() && c.get().isHead()) {
            open.addLast(new Open(d.name().orElseThrow(), c.get().roles()));
        }
        writer.add(d, item.payloads().toArray(MemorySegment[]::new));
    }

    @Override
    public void commit() throws IOException {
        writer.finish();
    }

    @Override
    public void close() throws IOException {
        writer.close();
    }
}
