package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Damaged files through both readers give a {@link HurrayException} with the status of
 * docs/spec/hrryfile.md §6 (the native library's checks; the full hostile matrix is in
 * {@code native/hurray-core/tests/file_hostile.rs}), and exceptions thrown by the channel in
 * the {@code read_at}/{@code size} upcalls come back as the cause of a retryable
 * {@link Status#TRANSPORT} failure.
 */
class HurrayFileErrorsTest {
    /** Trailer length (docs/spec/hrryfile.md §1.6). */
    private static final int TRAILER = 72;

    @TempDir
    Path dir;
    private Path valid;
    private byte[] bytes;

    @BeforeEach
    void writeValidFile() throws IOException {
        valid = dir.resolve("valid.hrry");
        try (HurrayFileWriter w = HurrayFile.create(valid); Tensor a = Tensor.of(new float[] {1, 2, 3}, 3);
                Tensor b = Tensor.of(new int[] {4, 5}, 2)) {
            w.add("a", a);
            w.add("b", b);
            w.metadata("k", "v");
            w.finish();
        }
        bytes = Files.readAllBytes(valid);
    }

    private Path damaged(String name, byte[] content) throws IOException {
        Path p = dir.resolve(name);
        Files.write(p, content);
        return p;
    }

    /** Opening {@code path} fails with {@code status} through both {@code open()} and {@code map()}. */
    private static void assertOpenFails(Status status, Path path) {
        for (boolean mapped : new boolean[] {false, true}) {
            HurrayException e = assertThrows(HurrayException.class, () -> HurrayFileTest.reopen(path, mapped),
                    path.getFileName() + (mapped ? " map" : " open"));
            assertEquals(status, e.status(), e.getMessage());
            assertTrue(!e.nativeMessage().isEmpty(), "a human message");
        }
    }

    /** Re-seals the trailer checksum (CRC32C of its first 68 bytes) after an edit. */
    private static void resealTrailer(byte[] b) {
        int t = b.length - TRAILER;
        CRC32C crc = new CRC32C();
        crc.update(b, t, 68);
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(t + 68, (int) crc.getValue());
    }

    @Test
    void aBadTrailerMagicIsInvalidMagic() throws IOException {
        byte[] b = bytes.clone();
        b[b.length - TRAILER] ^= 0x20;
        assertOpenFails(Status.INVALID_MAGIC, damaged("magic.hrry", b));
        byte[] notAContainer = "just some text, not a container at all; ".repeat(10).getBytes();
        assertOpenFails(Status.INVALID_MAGIC, damaged("text.hrry", notAContainer));
    }

    @Test
    void aTruncatedFileIsRefused() throws IOException {
        // Cut anywhere: the trailer is no longer at the end.
        for (int cut : new int[] {1, 8, TRAILER, bytes.length / 2}) {
            assertOpenFails(Status.INVALID_MAGIC, damaged("cut" + cut + ".hrry", Arrays.copyOf(bytes, bytes.length - cut)));
        }
    }

    @Test
    void aFileSmallerThanHeaderAndTrailerIsTruncated() throws IOException {
        for (int len : new int[] {0, 1, 50, 71, 87}) {
            assertOpenFails(Status.TRUNCATED, damaged("short" + len + ".hrry", Arrays.copyOf(bytes, len)));
        }
    }

    @Test
    void checksumsAndImpossibleOffsetsAreCorrupt() throws IOException {
        byte[] b = bytes.clone();
        b[b.length - TRAILER + 20] ^= 1; // index offset, without resealing: trailer checksum
        assertOpenFails(Status.CORRUPT, damaged("crc.hrry", b));

        byte[] huge = bytes.clone();
        ByteBuffer.wrap(huge).order(ByteOrder.LITTLE_ENDIAN).putLong(huge.length - TRAILER + 24, 1L << 60); // index length
        resealTrailer(huge);
        assertOpenFails(Status.CORRUPT, damaged("index-length.hrry", huge));

        byte[] past = bytes.clone();
        ByteBuffer.wrap(past).order(ByteOrder.LITTLE_ENDIAN).putLong(past.length - TRAILER + 16, past.length); // index offset
        resealTrailer(past);
        assertOpenFails(Status.CORRUPT, damaged("index-offset.hrry", past));
    }

    @Test
    void aDamagedPayloadIsCorruptWhenChecked() throws IOException {
        long offset;
        try (HurrayFile f = HurrayFile.open(valid)) {
            offset = f.entry("a").orElseThrow().buffers().get(0).offset();
        }
        byte[] b = bytes.clone();
        b[(int) offset + 1] ^= 0x40;
        Path p = damaged("payload.hrry", b);
        try (HurrayFile f = HurrayFile.open(p)) {
            assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, () -> f.read("a")).status());
            try (Tensor t = f.read("b")) {
                assertArrayEquals(new int[] {4, 5}, t.toIntArray(), "other tensors are unaffected");
            }
        }
        // A map does not check by default (it would touch every page); VERIFY makes it.
        try (HurrayFile f = HurrayFile.map(p); Tensor t = f.read("a")) {
            assertTrue(t.toFloatArray()[0] != 1f || t.toFloatArray()[1] != 2f);
        }
        FileReaderOptions verify = FileReaderOptions.defaults().withPayloadChecks(FileReaderOptions.PayloadChecks.VERIFY);
        try (HurrayFile f = HurrayFile.map(p, verify)) {
            assertEquals(Status.CORRUPT, assertThrows(HurrayException.class, () -> f.read("a")).status());
        }
        FileReaderOptions skip = FileReaderOptions.defaults().withPayloadChecks(FileReaderOptions.PayloadChecks.SKIP);
        try (HurrayFile f = HurrayFile.open(p, skip); Tensor t = f.read("a")) {
            assertEquals(3, t.toFloatArray().length);
        }
    }

    @Test
    void aFileShortenedWhileOpenIsTruncated() throws IOException {
        Path p = damaged("shrink.hrry", bytes);
        try (HurrayFile f = HurrayFile.open(p)) {
            FileEntry a = f.entry("a").orElseThrow();
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                ch.truncate(a.buffers().get(0).offset());
            }
            assertEquals(Status.TRUNCATED, assertThrows(HurrayException.class, () -> f.read(a)).status());
        }
    }

    @Test
    void limitsAreEnforcedBeforeAllocating() throws IOException {
        FileReaderOptions tiny = FileReaderOptions.defaults().withMaxTensorBytes(8);
        try (HurrayFile f = HurrayFile.open(valid, tiny)) {
            assertEquals(Status.LIMIT_EXCEEDED, assertThrows(HurrayException.class, () -> f.read("a")).status());
            try (Tensor b = f.read("b")) {
                assertEquals(8, b.buffer(0).byteSize());
            }
        }
        assertEquals(Status.INVALID_ARGUMENT, assertThrows(HurrayException.class,
                () -> HurrayFile.open(valid, FileReaderOptions.defaults().withMaxDescriptorBytes(1L << 40))).status());
        assertThrows(NoSuchFileException.class, () -> HurrayFile.open(dir.resolve("missing.hrry")));
        assertThrows(NoSuchFileException.class, () -> HurrayFile.map(dir.resolve("missing.hrry")));
    }

    @Test
    void channelExceptionsInUpcallsAreTheCauseAndCallsCanBeRetried() throws IOException {
        for (Throwable failure : new Throwable[] {
            new IOException("disk gone (test)"), new IllegalStateException("bug (test)"), new OutOfMemoryError("(test)")}) {
            FailingChannel ch = new FailingChannel(FileChannel.open(valid, StandardOpenOption.READ));
            ch.readFailure = failure;
            HurrayException e = assertThrows(HurrayException.class, () -> HurrayFile.open(ch));
            assertEquals(Status.TRANSPORT, e.status());
            assertSame(failure, e.getCause());
            assertTrue(ch.isOpen(), "a failed open does not close the channel");
            // Nothing changed: open again.
            ch.readFailure = null;
            try (HurrayFile f = HurrayFile.open(ch)) {
                FileEntry a = f.entry("a").orElseThrow();
                ch.readFailure = failure;
                HurrayException r = assertThrows(HurrayException.class, () -> f.read(a));
                assertEquals(Status.TRANSPORT, r.status());
                assertSame(failure, r.getCause());
                ch.readFailure = null;
                try (Tensor t = f.read(a)) {
                    assertArrayEquals(new float[] {1, 2, 3}, t.toFloatArray());
                }
            }
            assertTrue(!ch.isOpen(), "the file closes its channel");
        }

        FailingChannel sized = new FailingChannel(FileChannel.open(valid, StandardOpenOption.READ));
        IOException sizeFailure = new IOException("stat failed (test)");
        sized.sizeFailure = sizeFailure;
        HurrayException e = assertThrows(HurrayException.class, () -> HurrayFile.open(sized));
        assertEquals(Status.TRANSPORT, e.status());
        assertSame(sizeFailure, e.getCause());
        sized.close();
    }

    @Test
    void aLazyIndexReadFailureIsReportedAndRetryable() throws IOException {
        // eagerIndexBytes 0: every lookup reads entries through the channel.
        FailingChannel ch = new FailingChannel(FileChannel.open(valid, StandardOpenOption.READ));
        try (HurrayFile f = HurrayFile.open(ch, FileReaderOptions.defaults().withEagerIndexBytes(0))) {
            IOException failure = new IOException("flaky (test)");
            ch.readFailure = failure;
            assertSame(failure, assertThrows(HurrayException.class, () -> f.entry("b")).getCause());
            assertSame(failure, assertThrows(HurrayException.class, () -> f.metadata()).getCause());
            UncheckedIOException u = assertThrows(UncheckedIOException.class, () -> f.iterator().next());
            assertSame(failure, u.getCause().getCause());
            ch.readFailure = null;
            assertEquals("b", f.entry("b").orElseThrow().name());
            assertEquals("v", f.metadataString("k").orElseThrow());
        }
    }

    @Test
    void aChannelThatFailsToCloseIsReported() throws IOException {
        FailingChannel ch = new FailingChannel(FileChannel.open(valid, StandardOpenOption.READ));
        IOException closeFailure = new IOException("close failed (test)");
        ch.closeFailure = closeFailure;
        HurrayFile f = HurrayFile.open(ch);
        HurrayException e = assertThrows(HurrayException.class, f::close);
        assertEquals(Status.TRANSPORT, e.status());
        assertSame(closeFailure, e.getCause());
        f.close(); // closed regardless; idempotent
        assertThrows(IllegalStateException.class, f::count);
    }

    @Test
    void aFileInUseOnAnotherThreadRefusesCallsAndClose() throws Exception {
        FailingChannel ch = new FailingChannel(FileChannel.open(valid, StandardOpenOption.READ));
        try (HurrayFile f = HurrayFile.open(ch, FileReaderOptions.defaults().withEagerIndexBytes(0))) {
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            ch.onRead = () -> {
                inside.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            CompletableFuture<String> lookup = CompletableFuture.supplyAsync(() -> {
                try {
                    return f.entry("a").orElseThrow().name();
                } catch (HurrayException e) {
                    throw new UncheckedIOException(e);
                }
            });
            assertTrue(inside.await(10, TimeUnit.SECONDS));
            assertThrows(IllegalStateException.class, f::count, "busy on another thread");
            assertThrows(IllegalStateException.class, f::close, "no close while a call is in progress");
            ch.onRead = null;
            release.countDown();
            assertEquals("a", lookup.get(10, TimeUnit.SECONDS));
            // A channel calling back into its own file is refused too (docs/spec/stream.md
            // §Transport rules, rule 4).
            IllegalStateException[] reentry = new IllegalStateException[1];
            ch.onRead = () -> reentry[0] = assertThrows(IllegalStateException.class, f::count);
            assertEquals("b", f.entry("b").orElseThrow().name());
            assertTrue(reentry[0].getMessage().contains("inside its own transport callback"), reentry[0].getMessage());
            ch.onRead = null;
        }
    }

    /** A {@link FileChannel} that delegates to a real one and throws on request. */
    static final class FailingChannel extends FileChannel {
        private final FileChannel d;
        volatile Throwable readFailure;
        /** Runs at the start of every positional read (inside the read_at upcall), or null. */
        volatile Runnable onRead;
        volatile Throwable sizeFailure;
        volatile IOException closeFailure;

        FailingChannel(FileChannel d) {
            this.d = d;
        }

        private static void raise(Throwable t) throws IOException {
            if (t instanceof IOException io) {
                throw io;
            }
            if (t instanceof RuntimeException r) {
                throw r;
            }
            if (t instanceof Error err) {
                throw err;
            }
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            Runnable r = onRead;
            if (r != null) {
                r.run();
            }
            raise(readFailure);
            return d.read(dst, position);
        }

        @Override
        public long size() throws IOException {
            raise(sizeFailure);
            return d.size();
        }

        @Override
        protected void implCloseChannel() throws IOException {
            d.close();
            if (closeFailure != null) {
                throw closeFailure;
            }
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            raise(readFailure);
            return d.read(dst);
        }

        @Override
        public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
            raise(readFailure);
            return d.read(dsts, offset, length);
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            return d.write(src);
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
            return d.write(srcs, offset, length);
        }

        @Override
        public long position() throws IOException {
            return d.position();
        }

        @Override
        public FileChannel position(long newPosition) throws IOException {
            d.position(newPosition);
            return this;
        }

        @Override
        public FileChannel truncate(long size) throws IOException {
            d.truncate(size);
            return this;
        }

        @Override
        public void force(boolean metaData) throws IOException {
            d.force(metaData);
        }

        @Override
        public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
            return d.transferTo(position, count, target);
        }

        @Override
        public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
            return d.transferFrom(src, position, count);
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            return d.write(src, position);
        }

        @Override
        public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
            return d.map(mode, position, size);
        }

        @Override
        public FileLock lock(long position, long size, boolean shared) throws IOException {
            return d.lock(position, size, shared);
        }

        @Override
        public FileLock tryLock(long position, long size, boolean shared) throws IOException {
            return d.tryLock(position, size, shared);
        }
    }
}
