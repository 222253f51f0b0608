package dev.hurray.formats;

import dev.hurray.HurrayFile;
import dev.hurray.Reader;
import dev.hurray.Writer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** GGUF written back from a GGUF file by each route through Hurray, for the round-trip tests. */
final class GgufRoutes {
    private GgufRoutes() {
    }

    /**
     * Reads {@code src} and writes it back to GGUF three ways, into {@code dir}: directly, through
     * an HRRYFILE ({@code TAG.hrry}, kept for inspection) and through an in-memory stream.
     *
     * @return the GGUF files written: direct, via the HRRYFILE, via the stream
     */
    static List<Path> backToGguf(Path src, Path dir, String tag) throws IOException {
        Path direct = dir.resolve(tag + ".direct.gguf");
        Path viaFile = dir.resolve(tag + ".via-file.gguf");
        Path viaStream = dir.resolve(tag + ".via-stream.gguf");
        Path hrry = dir.resolve(tag + ".hrry");
        try (ForeignModel m = Gguf.read(src)) {
            Gguf.write(m, direct, null);
            m.toHurrayFile(hrry);
            Writer w = Writer.toMemory();
            m.writeTo(w);
            w.close();
            try (Reader r = Reader.of(w.toByteArray()); ForeignModel back = ForeignModel.of(r)) {
                Gguf.write(back, viaStream, null);
            }
        }
        try (HurrayFile hf = HurrayFile.open(hrry); ForeignModel back = ForeignModel.of(hf)) {
            Gguf.write(back, viaFile, null);
        }
        return List.of(direct, viaFile, viaStream);
    }
}
