package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ElementType;
import dev.hurray.FileWriterOptions;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.TensorDescriptor;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Another process shortening a {@code .hrry} file while {@code hurray verify} reads it: the
 * command reads with positional reads, so the JVM survives with a clean error (a memory map
 * would raise SIGBUS: exit 134 and an {@code hs_err} file). Runs the command in a child JVM,
 * waits until the child has the file open or mapped, and truncates it.
 */
class ShrinkingInputCliTest {
    @TempDir
    Path dir;

    @Test
    void truncatingTheInputWhileVerifyReadsItIsACleanError() throws Exception {
        Path model = dir.resolve("model.hrry");
        MemorySegment payload = MemorySegment.ofArray(new byte[256 << 10]);
        TensorDescriptor d = TensorDescriptor.of(ElementType.UINT8, 256 << 10);
        try (HurrayFileWriter w = HurrayFile.create(model, FileWriterOptions.defaults().withSyncOnFinish(false))) {
            for (int i = 0; i < 512; i++) { // 128 MiB: longer to check than to notice the open
                w.add(d.withName(String.format("t%04d", i)), payload);
            }
            w.finish();
        }
        boolean failedCleanly = false;
        List<String> outcomes = new ArrayList<>();
        for (int attempt = 0; attempt < 4 && !failedCleanly; attempt++) {
            Path work = Files.createDirectories(dir.resolve("run" + attempt));
            Path f = work.resolve("model.hrry");
            Files.copy(model, f);
            Process p = child(work, "verify", "--from", "hrry", f.toString()); // --from: no format detection opening the file first
            boolean seen = waitUntilOpen(p, f);
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
                ch.truncate(Files.size(f) / 8);
            }
            String out = new String(p.getInputStream().readAllBytes());
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), out);
            int exit = p.exitValue();
            outcomes.add("exit " + exit + (seen ? "" : " (open not seen)") + ": " + out.strip());
            assertNotEquals(134, exit, out);
            assertFalse(out.contains("A fatal error has been detected"), out);
            try (Stream<Path> l = Files.list(work)) {
                assertEquals(List.of(), l.filter(x -> x.getFileName().toString().startsWith("hs_err")).toList(), out);
            }
            Files.delete(f);
            if (exit != ExitCode.OK) {
                assertEquals(ExitCode.VERIFY_FAILED, exit, out);
                assertTrue(out.contains("hurray: error") && out.toLowerCase(java.util.Locale.ROOT).contains("truncat"), out);
                assertFalse(out.contains("\tat "), out);
                failedCleanly = true;
            }
        }
        assertTrue(failedCleanly, "verify finished before every truncation: " + outcomes);
    }

    /** {@code hurray ARGS} in a child JVM on the test class path, working directory {@code work}. */
    static Process child(Path work, String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m"));
        String lib = System.getProperty("hurray.library.path");
        if (lib != null) {
            cmd.add("-Dhurray.library.path=" + lib);
        }
        cmd.addAll(List.of("-cp", System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
                Main.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).directory(work.toFile()).redirectErrorStream(true).start();
    }

    /**
     * Polls /proc until {@code p} has {@code f} mapped, or open (a descriptor) for at least
     * 5 ms: past a short-lived open (a map is made through a descriptor closed at once), so the
     * truncation lands while the file is being read. False on exit or after 60 s.
     */
    static boolean waitUntilOpen(Process p, Path f) throws IOException, InterruptedException {
        Path proc = Path.of("/proc", Long.toString(p.pid()));
        String target = f.toRealPath().toString();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        long openSince = -1;
        // A poll: the CLI in another process has no hook to say it opened the file; /proc does.
        while (p.isAlive() && System.nanoTime() < deadline) {
            try (Stream<Path> fds = Files.list(proc.resolve("fd"))) {
                if (Files.readString(proc.resolve("maps")).contains(target)) {
                    return true;
                }
                boolean open = fds.anyMatch(fd -> {
                    try {
                        return Files.readSymbolicLink(fd).toString().equals(target);
                    } catch (IOException e) {
                        return false;
                    }
                });
                if (!open) {
                    openSince = -1;
                } else if (openSince < 0) {
                    openSince = System.nanoTime();
                } else if (System.nanoTime() - openSince >= TimeUnit.MILLISECONDS.toNanos(5)) {
                    return true;
                }
            } catch (IOException gone) {
                return false; // the process ended meanwhile
            }
            Thread.sleep(1);
        }
        return false;
    }
}
