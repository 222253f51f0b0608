package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.HurrayFile;
import dev.hurray.Layout;
import dev.hurray.formats.ForeignFormats;
import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.ForeignTensor;
import dev.hurray.formats.Format;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Another process shortening a foreign input (safetensors, npy, npz, GGUF, a tfjs shard) while
 * {@code hurray convert} reads it: the readers use positional reads, never a mapping, so the JVM
 * survives with a clean error or, when the read was already done, a correct result (a mapping
 * would raise SIGBUS: exit 134 and an {@code hs_err} file). Runs the command in a child JVM,
 * waits until the child has the file open, and truncates it, as {@link ShrinkingInputCliTest}
 * does for {@code .hrry} files.
 */
class ShrinkingForeignInputCliTest {
    private static final int TENSORS = 512;
    private static final int ELEMENTS = 64 << 10; // float32: 256 KiB each, 128 MiB in all

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(value = Format.class, names = {"SAFETENSORS", "NPY", "NPZ", "GGUF", "TFJS"})
    void truncatingTheInputWhileConvertReadsItIsACleanErrorOrACorrectResult(Format format) throws Exception {
        boolean failedCleanly = false;
        List<String> outcomes = new ArrayList<>();
        for (int attempt = 0; attempt < 6 && !failedCleanly; attempt++) {
            Path work = Files.createDirectories(dir.resolve("run" + attempt));
            Path[] files = write(format, work); // {argument, file to truncate}
            Path out = work.resolve("out.hrry");
            Process p = ShrinkingInputCliTest.child(work, "convert", "--from", format.id(),
                    files[0].toString(), out.toString());
            boolean seen = ShrinkingInputCliTest.waitUntilOpen(p, files[1]);
            try (FileChannel ch = FileChannel.open(files[1], StandardOpenOption.WRITE)) {
                ch.truncate(Files.size(files[1]) / 8);
            }
            String text = new String(p.getInputStream().readAllBytes());
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), text);
            int exit = p.exitValue();
            outcomes.add("exit " + exit + (seen ? "" : " (open not seen)") + ": " + text.strip());
            assertNotEquals(134, exit, text);
            assertFalse(text.contains("A fatal error has been detected"), text);
            try (Stream<Path> l = Files.list(work)) {
                assertEquals(List.of(), l.filter(x -> x.getFileName().toString().startsWith("hs_err")).toList(), text);
            }
            if (exit == ExitCode.OK) {
                // The read was over before the truncation: the output is the whole model.
                try (var f = HurrayFile.open(out)) {
                    assertEquals(format == Format.NPY ? 1 : TENSORS, f.count(), text);
                }
            } else {
                assertEquals(ExitCode.BAD_INPUT, exit, text);
                assertTrue(text.contains("hurray: error") && text.toLowerCase(Locale.ROOT).contains("truncat"), text);
                assertFalse(text.contains("\tat "), text);
                assertFalse(Files.exists(out), text);
                failedCleanly = true;
            }
            try (Stream<Path> l = Files.list(work)) {
                for (Path x : l.toList()) {
                    Files.delete(x);
                }
            }
        }
        assertTrue(failedCleanly, "convert finished before every truncation: " + outcomes);
    }

    /** Writes a 128 MiB input of {@code format} in {@code work}: {the command's argument, the file to shorten}. */
    private static Path[] write(Format format, Path work) throws IOException {
        if (format == Format.TFJS) {
            Path bin = work.resolve("group1-shard1of1.bin");
            try (FileChannel ch = FileChannel.open(bin, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ch.truncate(0);
                ch.write(java.nio.ByteBuffer.allocate(1), (long) TENSORS * ELEMENTS * 4 - 1); // sparse zeros
            }
            StringBuilder weights = new StringBuilder();
            for (int i = 0; i < TENSORS; i++) {
                weights.append(i == 0 ? "" : ",").append("{\"name\":\"t").append(i).append("\",\"shape\":[")
                        .append(ELEMENTS).append("],\"dtype\":\"float32\"}");
            }
            Path manifest = work.resolve("weights_manifest.json");
            Files.writeString(manifest, "[{\"paths\":[\"" + bin.getFileName() + "\"],\"weights\":[" + weights + "]}]");
            return new Path[] {manifest, bin};
        }
        Path f = work.resolve("model." + format.id());
        MemorySegment zeros = MemorySegment.ofArray(new byte[format == Format.NPY ? TENSORS * ELEMENTS * 4 : ELEMENTS * 4]);
        List<ForeignTensor> ts = new ArrayList<>();
        if (format == Format.NPY) {
            ts.add(new ForeignTensor("model", ElementType.FLOAT32, new long[] {(long) TENSORS * ELEMENTS},
                    Layout.Kind.ROW_MAJOR, zeros, null, -1));
        } else {
            for (int i = 0; i < TENSORS; i++) {
                ts.add(new ForeignTensor("t" + i, ElementType.FLOAT32, new long[] {ELEMENTS}, Layout.Kind.ROW_MAJOR,
                        zeros, null, -1));
            }
        }
        try (ForeignModel m = new ForeignModel(ts, Map.of(), Arena.ofShared())) {
            ForeignFormats.write(m, f, format, false, null);
        }
        return new Path[] {f, f};
    }
}
