package dev.hurray.formats;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Tensors spooled one at a time read back their bytes lazily; the spool file goes with close(). */
class PayloadSpoolTest {
    @TempDir
    Path dir;

    @Test
    void spooledTensorsReadBackLazilyAndTheFileIsDeletedOnClose() throws IOException {
        Path out = dir.resolve("m.safetensors");
        List<byte[]> want = new ArrayList<>();
        List<ForeignTensor> spooled = new ArrayList<>();
        Random rnd = new Random(3);
        try (PayloadSpool spool = PayloadSpool.create(out)) {
            assertTrue(Files.exists(spool.file()) && spool.file().getFileName().toString().startsWith(".m.safetensors.spool."));
            for (int k = 0; k < 4; k++) {
                try (Arena a = Arena.ofConfined()) { // freed at once: the spool has the bytes
                    ForeignTensor t = Models.random(a, rnd, "t" + k, ElementType.FLOAT32, Layout.Kind.ROW_MAJOR, 3, 100 + k);
                    want.add(TestSupport.bytes(t.data()));
                    ForeignTensor s = spool.add(t);
                    assertFalse(s.isLoaded());
                    spooled.add(s);
                }
            }
            assertEquals(4 * 4L * 3 * 100 + 4L * 3 * (0 + 1 + 2 + 3), spool.bytes());
            Safetensors.write(Models.model(spooled, Map.of()), out, Safetensors.Options.defaults(), null);
            for (ForeignTensor s : spooled) {
                assertFalse(s.isLoaded(), "the writer read " + s.name() + " for its write only");
            }
            Path file = spool.file();
            spool.close();
            assertFalse(Files.exists(file));
            assertThrows(IllegalStateException.class, () -> spool.add(spooled.get(0)));
        }
        try (ForeignModel m = Safetensors.read(out); Stream<Path> left = Files.list(dir)) {
            for (int k = 0; k < 4; k++) {
                assertArrayEquals(want.get(k), TestSupport.bytes(m.tensor("t" + k).data()));
            }
            assertEquals(List.of(out), left.toList());
        }
    }
}
