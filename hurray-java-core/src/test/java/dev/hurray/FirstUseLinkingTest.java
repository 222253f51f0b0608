package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What a fresh JVM links for its first tensor written and read: the JDK spins a downcall stub
 * and its method-handle forms per distinct downcall shape, so the whole first-use path (the
 * library's version check, descriptor check, encoder, decoder, destroys) goes through one:
 * {@code hurray_call} (docs/spec/c-abi.md §One call signature for bindings), which every
 * {@code $raw} function of the bindings uses; and no {@code ADDRESS} var handle (pointer fields
 * go through 64-bit words). Counted from the class-load log of a child JVM, so it does not
 * depend on the machine's speed.
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
        // One shape for every call on the path, the load's ABI version check included.
        assertEquals(1, stubs.size(), stubs.size() + " downcall shapes linked:\n" + String.join("\n", holders));
        assertTrue(!holders.isEmpty() && holders.stream().allMatch(l -> l.contains("dev.hurray.ffm.hurray_h$Call ")),
                "a call on the first-use path does not go through hurray_call:\n" + String.join("\n", holders));
        // Pointer fields are read and written as 64-bit words: an ADDRESS access would make the
        // JDK build that layout's var handle (an IndirectVarHandle and its forms, about 15 ms).
        assertTrue(out.lines().noneMatch(l -> l.contains("java.lang.invoke.IndirectVarHandle ")),
                "the first-use path made an ADDRESS var handle");
    }
}
