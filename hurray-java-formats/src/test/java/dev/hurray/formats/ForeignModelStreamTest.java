package dev.hurray.formats;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.hurray.ElementType;
import dev.hurray.Layout;
import dev.hurray.Reader;
import dev.hurray.Writer;
import java.lang.foreign.Arena;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** A foreign model through a Hurray stream: tensors and file metadata (the stream-metadata frame). */
class ForeignModelStreamTest {
    @Test
    void tensorsAndFileMetadataCrossAStream() throws Exception {
        Random rnd = new Random(3);
        try (Arena arena = Arena.ofConfined()) {
            List<ForeignTensor> ts = List.of(
                    Models.random(arena, rnd, "w", ElementType.FLOAT32, Layout.Kind.ROW_MAJOR, 2, 3),
                    Models.random(arena, rnd, "b", ElementType.INT8, Layout.Kind.ROW_MAJOR, 4));
            ForeignModel m = Models.model(ts, Map.of("format", "pt", "source", "test"));
            Writer w = Writer.toMemory();
            assertEquals(2, m.writeTo(w));
            w.close();
            try (Reader r = Reader.of(w.toByteArray()); ForeignModel back = ForeignModel.of(r)) {
                assertEquals(Map.of("format", "pt", "source", "test"), back.metadata());
                assertEquals(2, back.tensors().size());
                for (int i = 0; i < 2; i++) {
                    assertEquals(ts.get(i).name(), back.tensors().get(i).name());
                    assertArrayEquals(TestSupport.bytes(ts.get(i).data()), TestSupport.bytes(back.tensors().get(i).data()));
                }
            }
        }
    }
}
