package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HRRYFILE writes and channel-backed reads run no Java code inside a native call
 * (docs/spec/c-abi.md §Containers without a transport), so virtual threads whose sink or
 * channel blocks park without pinning their carrier: JFR records no
 * {@code jdk.VirtualThreadPinned} event for them. A control thread that parks inside an FFM
 * upcall (the shape the file writer and reader had before) shows that the recording does see
 * pinning, so the zero is not vacuous.
 */
class HurrayFilePinningTest {
    @TempDir
    Path dir;

    private static final int THREADS = 4;
    private static final int TENSORS = 6;

    /** A channel whose writes park first (a slow disk or network share), then write to {@code d}. */
    private static WritableByteChannel slow(FileChannel d) {
        return new WritableByteChannel() {
            @Override
            public int write(ByteBuffer src) throws IOException {
                park();
                return d.write(src);
            }

            @Override
            public boolean isOpen() {
                return d.isOpen();
            }

            @Override
            public void close() throws IOException {
                d.close();
            }
        };
    }

    private static void park() {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static float[] values(int n, int seed) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = seed * 1000 + i;
        }
        return v;
    }

    /** Writes TENSORS tensors (small and over 64 KiB) through a parking channel, reads them back through one. */
    private void writeAndRead(int id) throws IOException {
        Path path = dir.resolve("t" + id + ".hrry");
        try (FileChannel out = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                HurrayFileWriter w = HurrayFileWriter.of(slow(out))) {
            for (int k = 0; k < TENSORS; k++) {
                try (Tensor t = Tensor.of(values(k % 2 == 0 ? 16 : 40_000, k))) {
                    w.add("t" + k, t);
                }
            }
            w.finish();
        }
        // Lazily: every lookup reads through the channel too.
        FileReaderOptions lazy = FileReaderOptions.defaults().withEagerIndexBytes(0);
        HurrayFileErrorsTest.FailingChannel ch = new HurrayFileErrorsTest.FailingChannel(FileChannel.open(path));
        ch.onRead = HurrayFilePinningTest::park;
        try (HurrayFile f = HurrayFile.open(ch, lazy)) {
            for (int k = 0; k < TENSORS; k++) {
                try (Tensor t = f.read("t" + k)) {
                    assertArrayEquals(values(k % 2 == 0 ? 16 : 40_000, k), t.toFloatArray());
                }
            }
            f.verify();
        }
    }

    /** The comparator of the control's {@code qsort}: parks inside the upcall, then compares. */
    static int parkingCompare(MemorySegment a, MemorySegment b) {
        park();
        return Integer.compare(a.reinterpret(4).get(ValueLayout.JAVA_INT, 0), b.reinterpret(4).get(ValueLayout.JAVA_INT, 0));
    }

    /** Sorts three ints with libc's {@code qsort}, whose comparator upcall parks: a pinned virtual thread. */
    private static void pinOnPurpose() throws Throwable {
        Linker linker = Linker.nativeLinker();
        MethodHandle qsort = linker.downcallHandle(linker.defaultLookup().find("qsort").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        MethodHandle cmp = MethodHandles.lookup().findStatic(HurrayFilePinningTest.class, "parkingCompare",
                MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment stub = linker.upcallStub(cmp,
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS), a);
            MemorySegment ints = a.allocateFrom(ValueLayout.JAVA_INT, 3, 1, 2);
            qsort.invokeExact(ints, 3L, 4L, stub);
            assertArrayEquals(new int[] {1, 2, 3}, ints.toArray(ValueLayout.JAVA_INT));
        }
    }

    @Test
    void fileWritesAndChannelReadsOnVirtualThreadsPinNoCarrier() throws Exception {
        Path jfr = dir.resolve("pinned.jfr");
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicInteger done = new AtomicInteger();
        // Once on this platform thread first: a virtual thread that waits for another one to
        // initialise a class (the library's loading, for one) is pinned while it waits, which
        // says nothing about I/O.
        writeAndRead(THREADS);
        try (Recording rec = new Recording()) {
            rec.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            rec.start();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < THREADS; i++) {
                int id = i;
                threads.add(Thread.ofVirtual().name("hurray-file-" + i).start(() -> {
                    try {
                        writeAndRead(id);
                        done.incrementAndGet();
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            Thread control = Thread.ofVirtual().name("pin-control").start(() -> {
                try {
                    pinOnPurpose();
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
            for (Thread t : threads) {
                assertTrue(t.join(Duration.ofSeconds(120)), "a writer or reader did not finish");
            }
            assertTrue(control.join(Duration.ofSeconds(60)));
            rec.stop();
            rec.dump(jfr);
        }
        assertEquals(List.of(), failures);
        assertEquals(THREADS, done.get());
        List<RecordedEvent> events = RecordingFile.readAllEvents(jfr).stream()
                .filter(e -> e.getEventType().getName().equals("jdk.VirtualThreadPinned"))
                .toList();
        List<String> pinnedThreads = events.stream().map(HurrayFilePinningTest::threadName).toList();
        String firstWorkerStack = events.stream().filter(e -> threadName(e).startsWith("hurray-file-")).findFirst()
                .map(e -> String.valueOf(e.getStackTrace())).orElse("");
        assertTrue(pinnedThreads.contains("pin-control"),
                "the control parked inside an upcall, and JFR must have seen it: " + pinnedThreads);
        assertEquals(List.of(), pinnedThreads.stream().filter(n -> n.startsWith("hurray-file-")).toList(),
                "carriers pinned while writing or reading containers; the first: " + firstWorkerStack);
    }

    private static String threadName(RecordedEvent e) {
        RecordedThread t = e.getThread("eventThread");
        return t == null ? "" : String.valueOf(t.getJavaName());
    }
}
