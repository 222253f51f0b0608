package dev.hurray.bench;

import dev.hurray.FileEntry;
import dev.hurray.FileReaderOptions;
import dev.hurray.HurrayFile;
import dev.hurray.Tensor;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Random reads of whole tensors from one container made by {@link Containers#write}, warm in the
 * page cache. Every implementation reads the same sequence of tensors and sums each payload's
 * longs, so the bytes are really touched (for {@code map} that is the only access; the reads
 * would otherwise be pointer arithmetic):
 * <ul>
 *   <li>{@code raw}: {@code FileChannel.read} of the payload's range (offset and length from
 *       the index) into one reused direct buffer: the baseline;
 *   <li>{@code open}: {@link HurrayFile#open} then {@link HurrayFile#read(FileEntry)} (a fresh
 *       aligned allocation per tensor, payload CRC32C checked, the default);
 *   <li>{@code open-nocrc}: the same with {@link FileReaderOptions.PayloadChecks#SKIP};
 *   <li>{@code map}: {@link HurrayFile#map} then {@code read(entry)} (zero copy into the map).
 * </ul>
 * Entries are listed once, up front, so lookups are not measured.
 */
public abstract class FileReads implements AutoCloseable {
    /** Implementations, as named in benchmark parameters. */
    public static final String RAW = "raw", OPEN = "open", OPEN_NOCRC = "open-nocrc", MAP = "map";

    private static final int SEQUENCE = 1 << 16;

    protected final List<FileEntry> entries;
    private final int[] order;
    private int next;
    /** The last sum, stored so the summing loop cannot be optimised away. */
    protected long lastSum;

    protected FileReads(List<FileEntry> entries, long seed) {
        this.entries = entries;
        SplittableRandom r = new SplittableRandom(seed);
        order = new int[SEQUENCE];
        for (int i = 0; i < SEQUENCE; i++) {
            order[i] = r.nextInt(entries.size());
        }
    }

    /** Opens {@code file} for random reads with implementation {@code impl}. */
    public static FileReads open(String impl, Path file, long seed) throws IOException {
        return switch (impl) {
            case RAW -> {
                try (HurrayFile f = HurrayFile.open(file)) {
                    yield new Raw(file, f.entries(), seed);
                }
            }
            case OPEN -> new Hurray(HurrayFile.open(file), seed);
            case OPEN_NOCRC -> new Hurray(HurrayFile.open(file,
                    FileReaderOptions.defaults().withPayloadChecks(FileReaderOptions.PayloadChecks.SKIP)), seed);
            case MAP -> new Hurray(HurrayFile.map(file), seed);
            default -> throw new IllegalArgumentException("unknown implementation " + impl);
        };
    }

    /** Reads the next tensor of the random sequence and sums its longs; returns its payload bytes. */
    public final long readOne() throws IOException {
        return read(nextIndex(), false);
    }

    /** As {@link #readOne()}, checking every byte against the pattern tensor {@code k} was written with. */
    public final long readAndCheck() throws IOException {
        return read(nextIndex(), true);
    }

    private int nextIndex() {
        int k = order[next];
        next = (next + 1) & (SEQUENCE - 1);
        return k;
    }

    protected abstract long read(int k, boolean check) throws IOException;

    @Override
    public abstract void close() throws IOException;

    static void check(MemorySegment payload, int k) {
        long at = Payloads.mismatch(payload, Containers.start(k));
        if (at >= 0) {
            throw new IllegalStateException("tensor " + k + ": byte " + at + " differs from what was written");
        }
    }

    /** The baseline: positional channel reads into one reused direct buffer. */
    static final class Raw extends FileReads {
        private final FileChannel channel;
        private final ByteBuffer buf;
        private final MemorySegment view;

        Raw(Path file, List<FileEntry> entries, long seed) throws IOException {
            super(entries, seed);
            channel = FileChannel.open(file, StandardOpenOption.READ);
            long max = entries.stream().mapToLong(e -> e.buffers().get(0).length()).max().orElse(0);
            buf = ByteBuffer.allocateDirect((int) max);
            view = MemorySegment.ofBuffer(buf);
        }

        @Override
        protected long read(int k, boolean check) throws IOException {
            FileEntry.BufferLocation loc = entries.get(k).buffers().get(0);
            int len = (int) loc.length();
            buf.clear().limit(len);
            while (buf.hasRemaining()) {
                if (channel.read(buf, loc.offset() + buf.position()) < 0) {
                    throw new EOFException("the file ended before tensor " + k);
                }
            }
            MemorySegment payload = view.asSlice(0, len);
            lastSum = Payloads.sumLongs(payload);
            if (check) {
                check(payload, k);
            }
            return len;
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /** {@link HurrayFile#read(FileEntry)} through {@code open()} or {@code map()}. */
    static final class Hurray extends FileReads {
        private final HurrayFile file;

        Hurray(HurrayFile file, long seed) throws IOException {
            super(file.entries(), seed);
            this.file = file;
        }

        @Override
        protected long read(int k, boolean check) throws IOException {
            try (Tensor t = file.read(entries.get(k))) {
                MemorySegment payload = t.buffer(0);
                lastSum = Payloads.sumLongs(payload);
                if (check) {
                    check(payload, k);
                }
                return payload.byteSize();
            }
        }

        @Override
        public void close() throws IOException {
            file.close();
        }
    }
}
