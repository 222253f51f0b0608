package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.Pipe;
import java.nio.channels.WritableByteChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HurrayFileWriter}: the atomic {@code create()} (temp file, rename on finish, nothing
 * at the target on failure), writers over streams and pipes, names, progress, and failures
 * in the sink.
 */
class HurrayFileWriterTest {
    @TempDir
    Path dir;

    private List<Path> listing() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().toList();
        }
    }

    private static Tensor floats(String name, int n, float seed) throws HurrayException {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = seed + i;
        }
        try (Tensor t = Tensor.of(v, n)) {
            return Tensor.copyOf(t.descriptor().toBuilder().name(name).build(), t.buffer(0));
        }
    }

    /** A sink that fails with {@code failure} once {@code budget} bytes have gone through. */
    private static UnaryOperator<WritableByteChannel> failAfter(long[] budget, IOException failure) {
        return ch -> new WritableByteChannel() {
            @Override
            public int write(ByteBuffer src) throws IOException {
                if (budget[0] <= 0) {
                    throw failure;
                }
                int n = (int) Math.min(src.remaining(), budget[0]);
                ByteBuffer part = src.slice(src.position(), n);
                int w = ch.write(part);
                src.position(src.position() + w);
                budget[0] -= w;
                return w;
            }

            @Override
            public boolean isOpen() {
                return ch.isOpen();
            }

            @Override
            public void close() throws IOException {
                ch.close();
            }
        };
    }

    @Test
    void createWritesATempFileAndRenamesItOnFinish() throws IOException {
        Path target = dir.resolve("model.hrry");
        try (HurrayFileWriter w = HurrayFile.create(target); Tensor t = floats("w", 4, 1)) {
            w.add(t);
            w.flush();
            assertFalse(Files.exists(target), "nothing at the target before finish");
            List<Path> during = listing();
            assertEquals(1, during.size());
            String temp = during.get(0).getFileName().toString();
            assertTrue(temp.startsWith(".model.hrry.") && temp.endsWith(".tmp"), temp);
            long size = w.finish();
            assertTrue(w.isFinished());
            assertEquals(size, w.finish(), "idempotent");
            assertEquals(size, w.bytesWritten());
            assertEquals(List.of(target), listing());
            assertEquals(size, Files.size(target));
            assertEquals(Status.INVALID_STATE, assertThrows(HurrayException.class, () -> w.add(t)).status());
            assertEquals(Status.INVALID_STATE, assertThrows(HurrayException.class, () -> w.metadata("k", "v")).status());
        }
        assertEquals(List.of(target), listing());
        try (HurrayFile f = HurrayFile.open(target); Tensor t = f.read("w")) {
            assertArrayEquals(new float[] {1, 2, 3, 4}, t.toFloatArray());
        }
    }

    @Test
    void closingWithoutFinishLeavesNothingAndKeepsTheOldFile() throws IOException {
        Path target = dir.resolve("keep.hrry");
        Files.writeString(target, "the previous file");
        // close() without finish(): the loss is an exception, the temporary file is deleted.
        HurrayException lost = assertThrows(HurrayException.class, () -> {
            try (HurrayFileWriter w = HurrayFile.create(target); Tensor t = floats("a", 3, 0)) {
                w.add(t);
                w.metadata("k", "v");
            }
        });
        assertEquals(Status.INVALID_STATE, lost.status());
        assertEquals(List.of(target), listing(), "temp file deleted");
        assertEquals("the previous file", Files.readString(target));

        Path absent = dir.resolve("absent.hrry");
        assertThrows(IllegalStateException.class, () -> {
            try (HurrayFileWriter w = HurrayFile.create(absent); Tensor t = floats("a", 3, 0)) {
                w.add(t);
                throw new IllegalStateException("the producer failed half way");
            }
        });
        assertFalse(Files.exists(absent));
        assertEquals(List.of(target), listing());
    }

    @Test
    void aSinkFailureMidWayLeavesNoFileAtTheTarget() throws IOException {
        Path target = dir.resolve("fail.hrry");
        Files.writeString(target, "old");
        IOException diskFull = new IOException("No space left on device (test)");
        long[] budget = {100_000};
        try (HurrayFileWriter w = HurrayFileWriter.create(target, FileWriterOptions.defaults(), failAfter(budget, diskFull));
                Tensor small = floats("small", 16, 0); Tensor big = floats("big", 64 * 1024, 0)) {
            w.add(small);
            // 256 KiB go straight from the tensor: part of it reaches the file, then the sink fails.
            HurrayException e = assertThrows(HurrayException.class, () -> w.add(big));
            assertEquals(Status.TRANSPORT, e.status());
            assertSame(diskFull, e.getCause(), "the sink's exception is the cause");
            // A truncated tensor is in the file: the writer is poisoned.
            assertEquals(Status.POISONED, assertThrows(HurrayException.class, () -> w.add(small)).status());
            assertEquals(Status.POISONED, assertThrows(HurrayException.class, w::finish).status());
        }
        assertEquals(List.of(target), listing(), "temp file deleted");
        assertEquals("old", Files.readString(target), "the previous file is untouched");
    }

    @Test
    void aFailedFinishCanBeRetried() throws IOException {
        Path target = dir.resolve("retry.hrry");
        IOException transient1 = new IOException("transient (test)");
        long[] budget = {Long.MAX_VALUE};
        try (HurrayFileWriter w = HurrayFileWriter.create(target, FileWriterOptions.defaults(), failAfter(budget, transient1));
                Tensor a = floats("a", 10, 0); Tensor b = floats("b", 10, 100)) {
            w.add(a);
            w.add(b);
            w.flush();
            budget[0] = 0; // the index cannot be written now
            HurrayException e = assertThrows(HurrayException.class, w::finish);
            assertEquals(Status.TRANSPORT, e.status());
            assertSame(transient1, e.getCause());
            assertFalse(Files.exists(target));
            budget[0] = Long.MAX_VALUE;
            w.finish();
        }
        try (HurrayFile f = HurrayFile.open(target); Tensor b = f.read("b")) {
            f.verify();
            assertEquals(100f, b.toFloatArray()[0]);
        }
    }

    @Test
    void duplicateNamesAreRefusedAtAddTime() throws IOException {
        Path target = dir.resolve("dup.hrry");
        try (HurrayFileWriter w = HurrayFile.create(target); Tensor a = floats("same", 2, 1);
                Tensor b = floats("same", 2, 50); Tensor unnamed = Tensor.of(new float[] {1}, 1)) {
            w.add(a);
            HurrayException e = assertThrows(HurrayException.class, () -> w.add(b));
            assertEquals(Status.DUPLICATE_NAME, e.status());
            assertEquals(Status.DUPLICATE_NAME, assertThrows(HurrayException.class, () -> w.add("same", unnamed)).status());
            // The writer stays usable.
            assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class, () -> w.add(unnamed)).status());
            w.add("other", unnamed);
            assertEquals(2, w.count());
            w.finish();
        }
        try (HurrayFile f = HurrayFile.open(target); Tensor t = f.read("same")) {
            assertEquals(2, f.count());
            assertArrayEquals(new float[] {1, 2}, t.toFloatArray(), "the first one is kept");
        }
    }

    @Test
    void createRefusesDirectoriesAndMissingParents() {
        assertThrows(FileAlreadyExistsException.class, () -> HurrayFile.create(dir));
        assertThrows(NoSuchFileException.class, () -> HurrayFile.create(dir.resolve("no/such/dir/x.hrry")));
    }

    @Test
    void createRefusesToReplaceASpecialFile() throws IOException {
        // A UNIX-domain socket file stands in for /dev/null or a FIFO: finish() renames over the
        // target, which would have replaced the special file by a regular one.
        Path socket = dir.resolve("s.hrry");
        try (java.nio.channels.ServerSocketChannel server =
                java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            server.bind(java.net.UnixDomainSocketAddress.of(socket));
            FileAlreadyExistsException e = assertThrows(FileAlreadyExistsException.class, () -> HurrayFile.create(socket));
            assertTrue(e.getReason().contains("not a regular file"), e.getReason());
            assertTrue(Files.exists(socket) && !Files.isRegularFile(socket), "the socket file is untouched");
            assertEquals(List.of(socket), listing(), "no temporary file is left behind");
        }
    }

    @Test
    void replacingAFileLeavesReadersOfTheOldOneUndisturbed() throws IOException {
        Path target = dir.resolve("swap.hrry");
        try (HurrayFileWriter w = HurrayFile.create(target); Tensor t = floats("v", 2, 1)) {
            w.add(t);
            w.finish();
        }
        try (HurrayFile old = HurrayFile.map(target)) {
            try (HurrayFileWriter w = HurrayFile.create(target); Tensor t = floats("v", 2, 7)) {
                w.add(t);
                w.finish();
            }
            try (Tensor t = old.read("v")) {
                assertArrayEquals(new float[] {1, 2}, t.toFloatArray(), "the old inode is still mapped");
            }
        }
        try (HurrayFile f = HurrayFile.open(target); Tensor t = f.read("v")) {
            assertArrayEquals(new float[] {7, 8}, t.toFloatArray());
        }
    }

    @Test
    void writesToAnOutputStreamOneByteAtATime() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        long size;
        try (HurrayFileWriter w = HurrayFileWriter.of(TestSupport.oneByteAtATime(bytes));
                Tensor a = floats("a", 5, 1); Tensor big = floats("big", 40_000, 3)) {
            w.add(a);
            w.add(big);
            w.metadata("via", "stream");
            size = w.finish();
        }
        assertEquals(size, bytes.size());
        Path path = dir.resolve("stream.hrry");
        Files.write(path, bytes.toByteArray());
        try (HurrayFile f = HurrayFile.open(path); Tensor big = f.read("big")) {
            assertEquals("stream", f.metadataString("via").orElseThrow());
            assertEquals(40_002f, big.toFloatArray()[39_999]);
        }
    }

    @Test
    void anUnfinishedStreamIsNotAContainer() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (HurrayFileWriter w = HurrayFileWriter.of(bytes); Tensor a = floats("a", 100, 1)) {
            w.add(a);
            w.flush();
            w.abandon();
        }
        Path path = dir.resolve("unfinished.hrry");
        Files.write(path, bytes.toByteArray());
        assertTrue(bytes.size() > 88, "header and payload were written");
        for (boolean mapped : new boolean[] {false, true}) {
            HurrayException e = assertThrows(HurrayException.class, () -> HurrayFileTest.reopen(path, mapped));
            assertEquals(Status.INVALID_MAGIC, e.status());
        }
    }

    @Test
    @Timeout(60)
    void writesThroughAPipe() throws Exception {
        Pipe pipe = Pipe.open();
        Path path = dir.resolve("piped.hrry");
        // The consumer copies the pipe into a file as the bytes arrive.
        CompletableFuture<Long> consumer = CompletableFuture.supplyAsync(() -> {
            try (Pipe.SourceChannel src = pipe.source();
                    FileChannel out = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                return out.transferFrom(src, 0, Long.MAX_VALUE);
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        long size;
        try (HurrayFileWriter w = HurrayFileWriter.of(pipe.sink()); Tensor a = floats("a", 3, 1);
                Tensor big = floats("big", 300_000, 0)) {
            w.add(big);
            w.add(a);
            size = w.finish();
        }
        assertEquals(size, consumer.get(30, TimeUnit.SECONDS));
        try (HurrayFile f = HurrayFile.map(path); Tensor a = f.read("a"); Tensor big = f.read("big")) {
            assertArrayEquals(new float[] {1, 2, 3}, a.toFloatArray());
            assertEquals(299_999f, big.toFloatArray()[299_999]);
        }
    }

    @Test
    void progressIsReportedAfterEachTensorAndAtFinish() throws IOException {
        Path target = dir.resolve("progress.hrry");
        List<long[]> events = new ArrayList<>();
        long size;
        try (HurrayFileWriter w = HurrayFile.create(target); Tensor small = floats("small", 4, 0);
                Tensor big = floats("big", 100_000, 0)) {
            assertSame(w, w.onProgress((bytes, tensors) -> events.add(new long[] {bytes, tensors})));
            w.add(small);
            w.add(big);
            size = w.finish();
        }
        assertEquals(3, events.size());
        assertEquals(1, events.get(0)[1]);
        assertEquals(2, events.get(1)[1]);
        assertTrue(events.get(1)[0] >= 400_000, "the large payload went out at once: " + events.get(1)[0]);
        assertTrue(events.get(0)[0] <= events.get(1)[0]);
        assertArrayEquals(new long[] {size, 2}, events.get(2));
    }

    @Test
    void aThrowingListenerPropagatesAfterTheTensorWasAdded() throws IOException {
        Path target = dir.resolve("listener.hrry");
        RuntimeException stop = new RuntimeException("cancel (test)");
        try (HurrayFileWriter w = HurrayFile.create(target); Tensor a = floats("a", 4, 0); Tensor b = floats("b", 4, 0)) {
            w.onProgress((bytes, tensors) -> {
                if (tensors == 1) {
                    throw stop;
                }
            });
            assertSame(stop, assertThrows(RuntimeException.class, () -> w.add(a)));
            assertEquals(1, w.count());
            w.add(b);
            w.finish();
        }
        try (HurrayFile f = HurrayFile.open(target)) {
            assertEquals(2, f.count());
        }
    }

    @Test
    void anOutputStreamThatThrowsIsTheCause() throws IOException {
        Error boom = new AssertionError("sink exploded (test)");
        OutputStream broken = new OutputStream() {
            @Override
            public void write(int b) {
                throw boom;
            }

            @Override
            public void write(byte[] b, int off, int len) {
                throw boom;
            }
        };
        try (HurrayFileWriter w = HurrayFileWriter.of(broken); Tensor a = floats("a", 4, 0)) {
            w.add(a); // staged, nothing written yet
            HurrayException e = assertThrows(HurrayException.class, w::finish);
            assertEquals(Status.TRANSPORT, e.status());
            assertSame(boom, e.getCause());
        }
        try (WritableByteChannel ch = Channels.newChannel(new ByteArrayOutputStream())) {
            HurrayFileWriter w = HurrayFileWriter.of(ch);
            w.close();
            w.close();
            assertThrows(IllegalStateException.class, () -> w.add(TensorDescriptor.of(ElementType.UINT8, 0)));
        }
    }

    @Test
    void addFromDescriptorAndPayloadsCopiesHeapSegments() throws IOException {
        Path target = dir.resolve("payloads.hrry");
        TensorDescriptor d = TensorDescriptor.builder(ElementType.UINT8, 3).name("bytes").build();
        try (HurrayFileWriter w = HurrayFile.create(target)) {
            w.add(d, MemorySegment.ofArray(new byte[] {9, 8, 7}));
            assertEquals(Status.BUFFER_TOO_SMALL,
                    assertThrows(HurrayException.class, () -> w.add(d.toBuilder().name("short").build(),
                            MemorySegment.ofArray(new byte[] {1}))).status());
            assertEquals(Status.INVALID_ARGUMENT,
                    assertThrows(HurrayException.class, () -> w.add(d.toBuilder().name("none").build())).status());
            w.finish();
        }
        try (HurrayFile f = HurrayFile.open(target); Tensor t = f.read("bytes")) {
            assertArrayEquals(new byte[] {9, 8, 7}, t.buffer(0).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        }
        assertThrows(IllegalArgumentException.class, () -> FileWriterOptions.defaults().withMinPayloadAlignment(0));
    }
}
