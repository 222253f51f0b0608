package dev.hurray.cli.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.TensorDescriptor;
import dev.hurray.formats.ForeignFormatException;
import dev.hurray.formats.ForeignFormats;
import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.Format;
import dev.hurray.formats.Safetensors;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A foreign sink keeps no tensor's payload in memory between tensors: each goes to a spool file
 * beside the target when it arrives (so the caller may free it at once), and the file laid out at
 * commit has every byte; the spool is gone afterwards, on success and on failure.
 */
class ForeignSinkTest {
    @TempDir
    Path dir;

    private static Item item(Arena a, String name, int n, int seed) {
        MemorySegment p = a.allocate(4L * n, 64);
        for (int i = 0; i < n; i++) {
            p.setAtIndex(ValueLayout.JAVA_FLOAT, i, seed * 1000 + i);
        }
        TensorDescriptor d = TensorDescriptor.builder(ElementType.FLOAT32, n).name(name).buffer(BufferSpec.cpu(4L * n)).build();
        return new Item(d, List.of(p), -1);
    }

    private List<String> files() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @ParameterizedTest
    @EnumSource(value = Format.class, names = {"SAFETENSORS", "NPZ", "GGUF"})
    void eachPayloadIsSpooledWhenItArrivesAndTheFileHasEveryByte(Format format) throws IOException {
        Path out = dir.resolve("m." + format.id());
        List<float[]> want = new ArrayList<>();
        try (ForeignSink sink = new ForeignSink(out, format, false, false, Safetensors.Options.defaults(), null, w -> { })) {
            sink.begin(Map.of());
            for (int k = 0; k < 5; k++) {
                try (Arena a = Arena.ofConfined()) { // the caller's memory is freed right after accept
                    Item it = item(a, "t" + k, 1000 + 64 * k, k);
                    want.add(it.payloads().get(0).toArray(ValueLayout.JAVA_FLOAT));
                    sink.accept(it);
                }
                assertEquals(0, sink.residentBytes(), "tensor " + k + " is held in memory");
            }
            sink.commit();
        }
        assertEquals(List.of(out.getFileName().toString()), files(), "the spool is deleted");
        try (ForeignModel m = ForeignFormats.read(out)) {
            for (int k = 0; k < 5; k++) {
                assertArrayEquals(want.get(k), m.tensor("t" + k).data().toArray(ValueLayout.JAVA_FLOAT), "t" + k);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Format.class, names = {"SAFETENSORS", "NPY"})
    void aRefusedTensorLeavesNeitherTargetNorSpool(Format format) throws IOException {
        Path out = dir.resolve("m." + format.id());
        try (ForeignSink sink = new ForeignSink(out, format, false, false, Safetensors.Options.defaults(), null, w -> { });
                Arena a = Arena.ofConfined()) {
            sink.begin(Map.of());
            sink.accept(item(a, "a", 10, 1));
            // safetensors: a strided tensor; npy: a second tensor.
            Item bad = format == Format.NPY ? item(a, "b", 10, 2) : new Item(TensorDescriptor.builder(ElementType.FLOAT32, 2, 2)
                    .layout(dev.hurray.Layout.strided(1, 2)).name("s").buffer(BufferSpec.cpu(16)).build(),
                    List.of(a.allocate(16, 64)), -1);
            assertThrows(ForeignFormatException.class, () -> sink.accept(bad));
        }
        assertFalse(Files.exists(out));
        assertEquals(List.of(), files(), "nothing left behind");
    }
}
