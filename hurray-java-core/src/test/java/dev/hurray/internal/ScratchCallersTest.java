package dev.hurray.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.FileEntry;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Layout;
import dev.hurray.Shape;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * No thread owns native scratch memory: with one short-lived virtual thread per call, the areas
 * made stay at {@link ScratchPool}'s bound (buffer accessors, descriptor builds, descriptor
 * reads and renames, container reads), and no class of the library keeps native memory in a
 * thread-local.
 */
class ScratchCallersTest {
    private static final int THREADS = 20_000;
    /** Areas another test's threads (a cleaner, a late close) may take meanwhile. */
    private static final int MARGIN = 4;

    @TempDir
    Path dir;

    /**
     * Runs {@code task} once on this thread (its first use links downcalls and initializes
     * classes, which other threads would wait for while holding areas), then on {@code threads}
     * virtual threads, one call each; returns how many more areas each of {@code counters}
     * counts after them than after the warm-up call.
     */
    private static long[] areasMade(int threads, ThrowingTask task, LongSupplier... counters) throws Exception {
        task.run(0);
        long[] made = new long[counters.length];
        for (int c = 0; c < counters.length; c++) {
            made[c] = -counters[c].getAsLong();
        }
        try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                int n = i;
                fs.add(vt.submit(() -> {
                    task.run(n);
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        }
        for (int c = 0; c < counters.length; c++) {
            made[c] += counters[c].getAsLong();
        }
        return made;
    }

    private interface ThrowingTask {
        void run(int i) throws Exception;
    }

    private static void assertBounded(long made, String what) {
        assertTrue(made <= ScratchPool.KEEP + MARGIN, made + " " + what + " for " + THREADS + " threads");
    }

    @Test
    void bufferAccessorsOnManyVirtualThreadsUseOnlyPooledAreas() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mem = arena.allocate(256, 64);
            long[] made = areasMade(THREADS, i -> {
                MemorySegment b = NativeBuffers.fromPtr(mem, 256, 64, 0, 0);
                try {
                    long[] info = NativeBuffers.info(b);
                    assertEquals(mem.address(), info[0]);
                    assertEquals(256, info[1]);
                    MemorySegment c = NativeBuffers.clone(b);
                    NativeBuffers.destroy(c);
                } finally {
                    NativeBuffers.destroy(b);
                }
            }, ScratchPool::made);
            assertBounded(made[0], "pooled areas");
        }
    }

    @Test
    void descriptorBuildsOnManyVirtualThreadsShareAFewBuildAreas() throws Exception {
        long[] made = areasMade(THREADS, i -> {
            DescriptorFields f = new DescriptorFields(ElementType.FLOAT32, Shape.of(1 + i % 97), Layout.rowMajor(), 0,
                    List.of(), null, "t" + i, Map.of());
            NativeDescriptor.Built built = NativeDescriptor.build(f);
            assertEquals(List.of(BufferSpec.cpu(4L * (1 + i % 97))), built.fields().buffers());
            assertEquals(1 + i % 97, NativeDescriptor.checkedTable(new DescriptorFields(ElementType.FLOAT32,
                    Shape.of(1 + i % 97), Layout.rowMajor(), 0, List.of(), null, null, Map.of())).get(0).byteSize() / 4);
        }, ScratchPool.BUILD::count);
        assertBounded(made[0], "build areas");
    }

    @Test
    void descriptorReadsAndRenamesOnManyVirtualThreadsUseOnlyPooledAreas() throws Exception {
        NativeDescriptor twin = NativeDescriptor.build(new DescriptorFields(ElementType.INT16, Shape.of(3, 5),
                Layout.rowMajor(), 0, List.of(), null, "base", Map.of("k", new byte[] {7}))).descriptor();
        MemorySegment handle = twin.handle();
        long[] made = areasMade(THREADS, i -> {
            DescriptorFields f = NativeDescriptor.read(handle);
            assertEquals(Shape.of(3, 5), f.shape());
            assertArrayEquals(new byte[] {7}, f.metadata().get("k"));
            assertEquals(NativeDescriptor.encodedView(handle).byteSize(), twin.encoded().length);
            DescriptorFields renamed = twin.withName(("r" + i).getBytes(StandardCharsets.UTF_8)).read();
            assertEquals("r" + i, renamed.name());
        }, ScratchPool::made);
        assertBounded(made[0], "pooled areas");
    }

    @Test
    void containerReadsOnManyVirtualThreadsUseOnlyPooledAreas() throws Exception {
        Path path = dir.resolve("small.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path); Tensor a = Tensor.of("a", new float[] {1, 2, 3}, 3);
                Tensor b = Tensor.of("b", new int[] {4, 5}, 2)) {
            w.add(a);
            w.add(b);
            w.metadata("m", "v".getBytes(StandardCharsets.UTF_8));
            w.finish();
        }
        long[] made = areasMade(THREADS / 4, i -> {
            try (HurrayFile file = i % 2 == 0 ? HurrayFile.open(path) : HurrayFile.map(path)) {
                assertEquals(2, file.count());
                assertEquals("b", file.name(1));
                FileEntry a = file.entry("a").orElseThrow();
                assertEquals(Shape.of(3), a.descriptor().shape());
                try (Tensor t = file.read(a); Tensor u = file.read("b")) {
                    assertArrayEquals(new float[] {1, 2, 3}, t.toFloatArray());
                    assertArrayEquals(new int[] {4, 5}, u.toIntArray());
                }
                assertEquals("v", file.metadataString("m").orElseThrow());
                assertEquals(2, file.entries().size());
            }
        }, ScratchPool::made, ScratchPool.FILE_READERS::count);
        assertBounded(made[0], "pooled areas");
        assertBounded(made[1], "reader areas");
    }

    @Test
    void readersBeyondTheKeptAreasBorrowPerCallAndMakeNoArea() throws Exception {
        Path path = dir.resolve("many.hrry");
        try (HurrayFileWriter w = HurrayFile.create(path); Tensor a = Tensor.of("a", new long[] {9, 8}, 2)) {
            w.add(a);
            w.finish();
        }
        List<HurrayFile> open = new ArrayList<>();
        try {
            for (int i = 0; i < ScratchPool.KEEP + 5; i++) {
                open.add(i % 2 == 0 ? HurrayFile.open(path) : HurrayFile.map(path));
            }
            for (HurrayFile f : open) {
                assertEquals("a", f.name(0));
                try (Tensor t = f.read("a")) {
                    assertArrayEquals(new long[] {9, 8}, t.toLongArray());
                }
            }
            assertTrue(ScratchPool.FILE_READERS.count() <= ScratchPool.KEEP,
                    ScratchPool.FILE_READERS.count() + " reader areas for " + open.size() + " open readers");
        } finally {
            for (HurrayFile f : open) {
                f.close();
            }
        }
    }

    /**
     * The scratch rule, checked where it could break: no static field of a library class holds
     * a thread-local of native memory (a {@code ThreadLocal<MemorySegment>} or {@code <Arena>}),
     * which each virtual thread would fill with an area of its own, freed only by a collection.
     */
    @Test
    void noLibraryClassKeepsNativeMemoryPerThread() throws Exception {
        List<String> found = new ArrayList<>();
        List<String> classes = libraryClasses();
        assertTrue(classes.contains("dev.hurray.internal.Native"), "the scan sees the library's classes: " + classes.size());
        for (String name : classes) {
            Class<?> c = Class.forName(name, false, Native.class.getClassLoader());
            for (Field f : c.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) && ThreadLocal.class.isAssignableFrom(f.getType())
                        && holdsNativeMemory(f.getGenericType())) {
                    found.add(name + "." + f.getName());
                }
            }
        }
        assertEquals(List.of(), found, "thread-locals of native memory");
    }

    private static boolean holdsNativeMemory(Type t) {
        if (!(t instanceof ParameterizedType p)) {
            return true; // a raw ThreadLocal: it may hold anything
        }
        Type arg = p.getActualTypeArguments()[0];
        return arg == MemorySegment.class || arg == Arena.class || !(arg instanceof Class<?>);
    }

    /** The names of the classes in the library's {@code dev.hurray} packages (a classes folder or a jar). */
    private static List<String> libraryClasses() throws IOException, URISyntaxException {
        Path root = Path.of(Native.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> names = new ArrayList<>();
        if (Files.isDirectory(root)) {
            try (Stream<Path> s = Files.walk(root.resolve("dev/hurray"))) {
                s.filter(p -> p.toString().endsWith(".class"))
                        .forEach(p -> names.add(toName(root.relativize(p).toString().replace('\\', '/'))));
            }
        } else {
            try (JarFile jar = new JarFile(root.toFile())) {
                jar.stream().map(e -> e.getName()).filter(n -> n.startsWith("dev/hurray/") && n.endsWith(".class"))
                        .forEach(n -> names.add(toName(n)));
            }
        }
        names.remove("module-info");
        return names;
    }

    private static String toName(String classFile) {
        return classFile.substring(0, classFile.length() - ".class".length()).replace('/', '.');
    }
}
