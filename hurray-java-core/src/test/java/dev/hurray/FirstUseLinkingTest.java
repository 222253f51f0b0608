package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What a fresh JVM links for its first tensor written and read: the JDK spins one downcall
 * stub per distinct downcall shape (about 10 ms each before the JIT warms up), so the per-tensor
 * path keeps to a few shapes (its calls take addresses as {@code long}s: docs/spec/c-abi.md and
 * the bindings' {@code $raw} functions). Counted from the class-load log of a child JVM, so it
 * does not depend on the machine's speed.
 */
class FirstUseLinkingTest {
    /** The child: the natural code, one named tensor through a writer and a reader. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, 768).name("emb-0")
                    .metadata("doc", "x").build();
            Writer w = Writer.toMemory();
            try (Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(new float[768]))) {
                w.write(t);
            }
            w.close();
            try (Reader r = Reader.of(w.toByteArray()); Tensor t = r.read()) {
                System.out.println("child read " + t.descriptor().name().orElseThrow());
            }
        }
    }

    @Test
    void theFirstWriteAndReadLinkAFewDowncallShapes() throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xlog:class+load=info",
                "-cp", System.getProperty("java.class.path"),
                "-Dhurray.library.path=" + System.getProperty("hurray.library.path", ""),
                "-Dorg.slf4j.simpleLogger.logFile=System.err", Child.class.getName());
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("child read emb-0"), out);
        List<String> stubs = out.lines().filter(l -> l.contains("jdk.internal.foreign.abi.DowncallStub")).toList();
        List<String> holders = out.lines().filter(l -> l.contains("dev.hurray.ffm.hurray_h$")).toList();
        // The ABI version check, then (long), (long, long), (long, long, long), the batch encode
        // and the batch decode: six shapes for eleven functions.
        assertTrue(stubs.size() <= 6, stubs.size() + " downcall shapes linked:\n" + String.join("\n", holders));
        assertTrue(holders.stream().filter(l -> !l.contains("hurray_c_abi_version")).allMatch(l -> l.contains("$raw ")),
                "a call on the first-use path is not a $raw one:\n" + String.join("\n", holders));
    }
}
