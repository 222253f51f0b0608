package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AtomicOutputTest {
    @TempDir
    Path dir;

    private long entries() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.count();
        }
    }

    @Test
    void commitRenamesAndCloseWithoutCommitLeavesTheTargetAsItWas() throws IOException {
        Path target = dir.resolve("out.bin");
        Files.write(target, new byte[] {9});
        try (AtomicOutput out = AtomicOutput.create(target)) {
            out.channel().write(ByteBuffer.wrap(new byte[] {1, 2}));
            assertTrue(out.temporaryFile().getFileName().toString().startsWith(".out.bin."));
            assertArrayEquals(new byte[] {9}, Files.readAllBytes(target), "unchanged until commit");
        }
        assertArrayEquals(new byte[] {9}, Files.readAllBytes(target));
        assertEquals(1, entries(), "the temporary file is gone");

        AtomicOutput.write(target, ch -> ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3})));
        assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(target));
        assertEquals(1, entries());

        assertThrows(IOException.class, () -> AtomicOutput.write(target, ch -> {
            ch.write(ByteBuffer.wrap(new byte[] {7}));
            throw new IOException("body failed");
        }));
        assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(target));
        assertEquals(1, entries());
    }

    @Test
    void directoriesDevicesAndOverlongNamesAreHandled() throws IOException {
        FileAlreadyExistsException e = assertThrows(FileAlreadyExistsException.class, () -> AtomicOutput.create(dir));
        assertTrue(e.getMessage().contains("is a directory"), e.getMessage());
        Path devNull = Path.of("/dev/null");
        if (Files.exists(devNull)) {
            assertTrue(assertThrows(FileAlreadyExistsException.class, () -> AtomicOutput.create(devNull)).getMessage()
                    .contains("not a regular file"));
        }
        Path longName = dir.resolve("x".repeat(250));
        AtomicOutput.write(longName, ch -> ch.write(ByteBuffer.wrap(new byte[] {5})));
        assertArrayEquals(new byte[] {5}, Files.readAllBytes(longName));
        assertFalse(Files.exists(dir.resolve("." + "x".repeat(250))));
    }
}
