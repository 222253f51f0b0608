package dev.hurray.cli;

import static dev.hurray.cli.CliTest.run;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Reader;
import dev.hurray.ReaderOptions;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A descriptor between the readers' 1 MiB default and the format's 16 MiB maximum, which
 * writers accept: the command reads every file and stream such a writer made.
 */
class LargeDescriptorCliTest {
    @TempDir
    Path tmp;

    /** A tensor whose descriptor encodes to about 2.6 MiB (40 metadata entries of 64 KiB). */
    private static TensorDescriptor large() {
        TensorDescriptor.Builder b = TensorDescriptor.builder(ElementType.FLOAT32, 4).name("big");
        byte[] value = new byte[65536];
        for (int i = 0; i < 40; i++) {
            Arrays.fill(value, (byte) i);
            b.metadata("k" + i, value.clone());
        }
        return b.build();
    }

    @Test
    void aDescriptorOverTheDefaultReadLimitIsInspectedConvertedAndVerified() throws IOException {
        TensorDescriptor d = large();
        float[] values = {1f, 2f, 3f, 4f};
        Path hrry = tmp.resolve("big.hrry");
        try (HurrayFileWriter w = HurrayFile.create(hrry); Tensor t = Tensor.copyOf(d, MemorySegment.ofArray(values))) {
            w.add(t);
            w.finish();
        }
        Path stream = tmp.resolve("big.hrrys");
        try (FileChannel ch = FileChannel.open(stream, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
             Writer w = Writer.of(ch)) {
            w.write(d, MemorySegment.ofArray(values));
        }
        // The library's default limit refuses it; the command's does not.
        assertThrows(HurrayException.class, () -> {
            try (Reader r = Reader.of(Files.readAllBytes(stream))) {
                r.read();
            }
        });
        for (Path in : new Path[] {hrry, stream}) {
            CliTest.Result inspect = run("inspect", in.toString());
            inspect.assertOk();
            assertTrue(inspect.out().contains("big"), inspect.out());
        }
        run("verify", hrry.toString()).assertOk();
        Path back = tmp.resolve("back.hrry");
        Path viaStream = tmp.resolve("via.hrrys");
        run("convert", hrry.toString(), viaStream.toString()).assertOk();
        run("convert", viaStream.toString(), back.toString()).assertOk();
        try (Reader r = Reader.of(Files.readAllBytes(viaStream),
                ReaderOptions.defaults().withMaxDescriptorBytes(ReaderOptions.MAX_DESCRIPTOR_BYTES));
             Tensor t = r.read()) {
            assertEquals(d.metadata().size(), t.descriptor().metadata().size());
            assertArrayEquals(values, t.toFloatArray());
        }
        try (HurrayFile f = HurrayFile.open(back, dev.hurray.FileReaderOptions.defaults()
                .withMaxDescriptorBytes(ReaderOptions.MAX_DESCRIPTOR_BYTES));
             Tensor t = f.read("big")) {
            assertArrayEquals(d.metadata().get("k39"), t.descriptor().metadata().get("k39"));
            assertArrayEquals(values, t.toFloatArray());
        }
    }
}
