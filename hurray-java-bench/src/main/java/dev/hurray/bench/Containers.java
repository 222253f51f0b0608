package dev.hurray.bench;

import dev.hurray.ElementType;
import dev.hurray.FileWriterOptions;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.stream.Stream;

/** HRRYFILE containers for the file benchmarks, written through the public API. */
public final class Containers {
    private Containers() {
    }

    /** Pattern offset of tensor {@code k}'s payload, so that no two tensors hold the same bytes. */
    static long start(long k) {
        return k * 4099;
    }

    /** Name of tensor {@code k}: zero-padded, so name order (the index order) is {@code k} order. */
    static String name(long k) {
        return String.format("t%07d", k);
    }

    /**
     * Writes {@code count} float32 tensors of {@code tensorBytes} payload bytes each, tensor
     * {@code k} named {@link #name(long)} and holding {@link Payloads}' bytes from
     * {@link #start(long)}; payload checksums on (the default), no fsync.
     *
     * @return {@code path}
     */
    public static Path write(Path path, int count, int tensorBytes) throws IOException {
        if (tensorBytes % 4 != 0) {
            throw new IllegalArgumentException("tensorBytes must be a multiple of 4");
        }
        TensorDescriptor d = TensorDescriptor.of(ElementType.FLOAT32, tensorBytes / 4);
        try (Arena arena = Arena.ofConfined();
                HurrayFileWriter w = HurrayFile.create(path, FileWriterOptions.defaults().withSyncOnFinish(false))) {
            MemorySegment payload = arena.allocate(tensorBytes, 64);
            try (Tensor t = Tensor.wrap(payload, d)) {
                for (int k = 0; k < count; k++) {
                    Payloads.fill(payload, start(k));
                    w.add(name(k), t);
                }
            }
            w.finish();
        }
        return path;
    }

    /** Reads the whole file once, so the page cache holds it ("warm page cache"). */
    static void warm(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
            long pos = 0;
            int n;
            while ((n = ch.read(buf.clear(), pos)) > 0) {
                pos += n;
            }
        }
    }

    /** Deletes a directory tree made by the benchmarks. */
    static void deleteTree(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
