package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.Composite;
import dev.hurray.ElementType;
import dev.hurray.FileWriterOptions;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Malformed composites are refused by every command that reads or writes tensors, streams and
 * containers alike, and no output is left: the fixtures are written flat (descriptor by
 * descriptor, as a hostile producer would) from descriptors a valid composite gave.
 */
class MalformedCompositeCliTest {
    @TempDir
    static Path tmp;

    /** One flat descriptor and its payloads. */
    record Flat(TensorDescriptor d, MemorySegment[] payloads) {
    }

    private static final MemorySegment ONE = MemorySegment.ofArray(new byte[] {7});
    private static final Map<String, Path> STREAMS = new LinkedHashMap<>();

    /** The flat view of {@code composites} written as a stream, heads with no payloads. */
    static List<Flat> flat(Composite.Builder... composites) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Writer w = Writer.of(out)) {
            for (Composite.Builder c : composites) {
                w.write(c);
            }
        }
        List<Flat> l = new ArrayList<>();
        try (Reader r = Reader.of(out.toByteArray())) {
            for (Tensor next = r.read(); next != null; next = r.read()) {
                try (Tensor t = next) {
                    l.add(new Flat(t.descriptor(), t.buffers().isEmpty() ? new MemorySegment[0] : new MemorySegment[] {ONE}));
                }
            }
        }
        return l;
    }

    static Path stream(String name, List<Flat> items) throws IOException {
        Path p = tmp.resolve(name + ".hrrys");
        try (OutputStream os = Files.newOutputStream(p); Writer w = Writer.of(os)) {
            for (Flat f : items) {
                w.write(f.d(), f.payloads());
            }
        }
        return p;
    }

    @BeforeAll
    static void fixtures() throws IOException {
        try (Tensor leaf = Tensor.copyOf(TensorDescriptor.of(ElementType.UINT8, 1), ONE)) {
            List<Flat> three = flat(Composite.builder("x").add("a", leaf).add("b", leaf).add("c", leaf));
            Flat head = three.get(0);
            Flat plain = new Flat(TensorDescriptor.of(ElementType.UINT8, 1).withName("plain"), new MemorySegment[] {ONE});
            // y: a, then k (a nested composite of one member at depth 2).
            List<Flat> nested = flat(Composite.builder("y").add("a", leaf).add("k", Composite.builder().add("b", leaf)));
            STREAMS.put("1 of 3 members, then a tensor", stream("short", List.of(head, three.get(1), plain)));
            STREAMS.put("members out of order", stream("order", List.of(head, three.get(1), three.get(3), three.get(2))));
            STREAMS.put("a member at the wrong depth", stream("depth", List.of(head, three.get(1), nested.get(3), three.get(3))));
            STREAMS.put("the end marker inside", stream("end", List.of(head, three.get(1))));
            STREAMS.put("66,561 descriptors in one item", stream("big", oversized(leaf)));
        }
    }

    /**
     * 1 + 1,024 + 1,024 × 64 = 66,561 descriptors: a head of 1,024 nested composites of 64
     * members. A writer refuses more than 65,536, so two valid composites supply the parts:
     * one whose members 0..1006 are the nested composites, one whose members 1007..1023 are.
     */
    static List<Flat> oversized(Tensor leaf) throws IOException {
        int split = 1007;
        Composite.Builder a = Composite.builder("big");
        Composite.Builder b = Composite.builder("big");
        for (int i = 0; i < 1024; i++) {
            Composite.Builder inner = Composite.builder();
            for (int j = 0; j < 64; j++) {
                inner.add("l" + j, leaf);
            }
            (i < split ? a : b).add("m" + i, inner);
            (i < split ? b : a).add("m" + i, leaf);
        }
        List<Flat> fa = flat(a);
        List<Flat> fb = flat(b);
        List<Flat> out = new ArrayList<>(fa.subList(0, 1 + split * 65)); // the head, then members 0..1006
        out.addAll(fb.subList(1 + split, fb.size()));                     // members 1007..1023 of b
        assertEquals(66_561, out.size());
        return out;
    }

    private static void assertRefused(CliTest.Result r, String what) {
        assertNotEquals(ExitCode.OK, r.code(), what + ": " + r.out() + r.err());
        assertTrue(r.err().contains("hurray: error"), what + ": " + r.err());
        assertFalse(r.err().contains("\tat "), what + ": " + r.err());
    }

    @Test
    void everyStreamCommandRefusesThemAndWritesNothing() throws Exception {
        for (Map.Entry<String, Path> e : STREAMS.entrySet()) {
            String what = e.getKey();
            Path in = e.getValue();
            for (String ext : new String[] {"hrrys", "hrry"}) {
                Path out = tmp.resolve("out." + ext);
                assertRefused(CliTest.run("convert", in.toString(), out.toString()), what + " -> ." + ext);
                assertFalse(Files.exists(out), what + ": no output");
            }
            assertRefused(CliTest.run("inspect", in.toString()), what + ": inspect");
            assertRefused(CliTest.runWithStdin(Files.readAllBytes(in), "cat"), what + ": cat");
            assertEquals(ExitCode.VERIFY_FAILED, CliTest.run("verify", in.toString()).code(), what + ": verify");
            Path dir = Files.createDirectories(tmp.resolve("recv-" + in.getFileName()));
            NetworkCliTest.Receiver r = NetworkCliTest.recv("--out", dir.resolve("r.hrrys").toString());
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), r.port()); OutputStream os = s.getOutputStream()) {
                os.write(Files.readAllBytes(in));
            }
            assertRefused(r.await(), what + ": recv");
            try (var l = Files.list(dir)) {
                assertEquals(0, l.count(), what + ": recv leaves no file");
            }
        }
    }

    @Test
    void aContainerWithAMalformedCompositeIsRefusedByVerifyInspectAndConvert() throws Exception {
        try (Tensor leaf = Tensor.copyOf(TensorDescriptor.of(ElementType.UINT8, 1), ONE)) {
            List<Flat> three = flat(Composite.builder("x").add("a", leaf).add("b", leaf).add("c", leaf));
            Map<String, List<Flat>> cases = new LinkedHashMap<>();
            cases.put("a missing member", List.of(named(three.get(0), "x"), named(three.get(1), "x/a"), named(three.get(3), "x/c")));
            cases.put("a member at the wrong index", List.of(named(three.get(0), "x"), named(three.get(1), "x/a"),
                    named(three.get(3), "x/b"), named(three.get(2), "x/c")));
            cases.put("a member of no composite", List.of(named(three.get(1), "lone/a")));
            for (Map.Entry<String, List<Flat>> c : cases.entrySet()) {
                Path f = tmp.resolve("bad.hrry");
                try (HurrayFileWriter w = HurrayFile.create(f, FileWriterOptions.defaults().withSyncOnFinish(false))) {
                    for (Flat x : c.getValue()) {
                        w.add(x.d(), x.payloads());
                    }
                    w.finish();
                }
                CliTest.Result v = CliTest.run("verify", f.toString());
                v.assertError(ExitCode.VERIFY_FAILED, "composite");
                assertRefused(CliTest.run("inspect", f.toString()), c.getKey() + ": inspect");
                Path out = tmp.resolve("out.hrrys");
                assertRefused(CliTest.run("convert", f.toString(), out.toString()), c.getKey() + ": convert");
                assertFalse(Files.exists(out));
            }
        }
    }

    private static Flat named(Flat f, String name) {
        return new Flat(f.d().withName(name), f.payloads());
    }

    /** A well-formed composite container converts to a stream that reads back in the assembled view. */
    @Test
    void aValidCompositeContainerConvertsToAValidStream() throws Exception {
        Path f = tmp.resolve("good.hrry");
        try (Tensor leaf = Tensor.copyOf(TensorDescriptor.of(ElementType.UINT8, 1), ONE);
             HurrayFileWriter w = HurrayFile.create(f, FileWriterOptions.defaults().withSyncOnFinish(false))) {
            w.add("first", leaf);
            w.add(Composite.builder("x").add("a", leaf).add("k", Composite.builder().add("b", leaf)));
            w.add("last", leaf);
            w.finish();
        }
        CliTest.run("verify", f.toString()).assertOk();
        Path s = tmp.resolve("good.hrrys");
        CliTest.run("convert", f.toString(), s.toString()).assertOk();
        CliTest.Result v = CliTest.run("verify", s.toString());
        v.assertOk();
        assertTrue(v.out().contains("1 composite"), v.out());
        Path back = tmp.resolve("back.hrry");
        CliTest.run("convert", s.toString(), back.toString()).assertOk();
        CliTest.run("verify", back.toString()).assertOk();
    }

    /**
     * The golden composite stream, whose members carry no names, converts to a container
     * that stores each member under its path, and back to a valid stream.
     */
    @Test
    void unnamedMembersAreStoredUnderTheirPathInAContainer() throws Exception {
        Path golden = Path.of(System.getProperty("hurray.golden.dir", "../src/golden"), "stream_v2_sparse_composite.hrry");
        Path hrry = tmp.resolve("golden.hrry");
        CliTest.run("convert", golden.toString(), hrry.toString()).assertOk();
        CliTest.run("verify", hrry.toString()).assertOk();
        try (HurrayFile f = HurrayFile.open(hrry)) {
            assertEquals(List.of("csr", "layer0", "layer0/bias", "layer0/kv", "layer0/kv/cache", "layer0/kv/scales",
                    "layer0/weight"), f.stream().map(dev.hurray.FileEntry::name).toList());
            try (Composite c = f.readComposite("layer0")) {
                assertEquals(List.of("weight", "kv", "kv/cache", "kv/scales", "bias"),
                        c.walk().stream().map(Composite.Node::path).toList());
            }
        }
        Path back = tmp.resolve("golden-back.hrrys");
        CliTest.run("convert", hrry.toString(), back.toString()).assertOk();
        assertTrue(CliTest.run("verify", back.toString()).out().contains("1 composite"));
    }
}
