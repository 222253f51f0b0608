package dev.hurray;

import dev.hurray.internal.PendingTempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HurrayFile#create}'s temporary file is registered for deletion at JVM shutdown while it
 * is pending, and unregistered once renamed into place or deleted. The hook itself is not run
 * here (it would delete other tests' pending files); the CLI's ShutdownCleanupTest kills a child
 * JVM with SIGTERM and checks an HRRYFILE output's temporary file is gone.
 */
class PendingTempFilesTest {
    @TempDir
    Path dir;

    private List<Path> temporaries() throws IOException {
        try (Stream<Path> l = Files.list(dir)) {
            return l.filter(p -> p.getFileName().toString().endsWith(".tmp")).toList();
        }
    }

    @Test
    void finishUnregisters() throws IOException {
        Path target = dir.resolve("a.hrry");
        try (HurrayFileWriter w = HurrayFile.create(target)) {
            Path temp = temporaries().getFirst();
            assertTrue(PendingTempFiles.isRegistered(temp));
            w.finish();
            assertFalse(PendingTempFiles.isRegistered(temp));
        }
        assertTrue(Files.isRegularFile(target));
        assertEquals(List.of(), temporaries());
    }

    @Test
    void closeWithoutFinishUnregisters() throws IOException {
        Path temp;
        try (HurrayFileWriter w = HurrayFile.create(dir.resolve("b.hrry"))) {
            temp = temporaries().getFirst();
            assertTrue(PendingTempFiles.isRegistered(temp));
        }
        assertFalse(PendingTempFiles.isRegistered(temp));
        assertFalse(Files.exists(temp));
    }
}
