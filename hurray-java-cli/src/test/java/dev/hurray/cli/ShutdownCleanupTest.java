package dev.hurray.cli;

import dev.hurray.AtomicOutput;
import dev.hurray.internal.PendingTempFiles;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Temporary outputs ({@code .NAME.RANDOM.tmp}) do not outlive a process ended by SIGTERM: a
 * child JVM ({@link Victim}) starts two real {@code hurray recv} commands (an HRRYFILE output,
 * whose temporary file is {@code HurrayFile.create}'s, and a stream output, the CLI's
 * {@link AtomicOutput}) and an {@link AtomicOutput#write} write that blocks half way; once all three
 * temporary files exist (the child says so: each {@code recv} makes its file before it reports
 * that it listens, and the write's file exists when its body runs) the test sends SIGTERM
 * ({@link Process#destroy()}) and checks that the directory is empty afterwards. Plus the
 * registry's bookkeeping, in-process.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShutdownCleanupTest {
    @TempDir
    Path tmp;

    @Test
    void sigtermDeletesPendingTemporaryFiles() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("out"));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", cp));
        String lib = System.getProperty("hurray.library.path");
        if (lib != null) {
            cmd.add("-Dhurray.library.path=" + lib);
        }
        cmd.add(Victim.class.getName());
        cmd.add(dir.toString());
        Process child = new ProcessBuilder(cmd).redirectError(tmp.resolve("child.log").toFile()).start();
        try {
            // The child's report that its three pending outputs exist, or its end.
            BufferedReader stdout = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line;
            try {
                line = CompletableFuture.supplyAsync(() -> {
                    try {
                        return stdout.readLine();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }).get(40, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("no three temporary files: " + temporaries(dir) + " " + log(), e);
            }
            assertEquals(Victim.READY, line, () -> "child ended early: " + log());
            assertEquals(3, temporaries(dir).size(), () -> "no three temporary files: " + temporaries(dir) + " " + log());
            child.destroy(); // SIGTERM
            assertTrue(child.waitFor(20, TimeUnit.SECONDS), "the child exits on SIGTERM");
            assertEquals(143, child.exitValue(), this::log); // 128 + SIGTERM: killed, not finished
            assertEquals(List.of(), names(dir), this::log);
        } finally {
            child.destroyForcibly();
        }
    }

    @Test
    void registryFollowsCommitAndClose() throws IOException {
        Path target = tmp.resolve("a.hrrys");
        Path pending;
        try (AtomicOutput o = AtomicOutput.create(target)) {
            pending = temporaries(tmp).getFirst();
            assertTrue(PendingTempFiles.isRegistered(pending));
            o.commit();
            assertFalse(PendingTempFiles.isRegistered(pending), "committed: unregistered");
        }
        assertTrue(Files.exists(target));
        try (AtomicOutput o = AtomicOutput.create(tmp.resolve("b.hrrys"))) {
            pending = temporaries(tmp).getFirst();
            assertTrue(PendingTempFiles.isRegistered(pending));
        }
        assertFalse(PendingTempFiles.isRegistered(pending), "closed without commit: deleted and unregistered");
        assertFalse(Files.exists(pending));
        Path[] seen = new Path[1];
        AtomicOutput.write(tmp.resolve("c.bin"), ch -> {
            seen[0] = temporaries(tmp).getFirst();
            assertTrue(PendingTempFiles.isRegistered(seen[0]));
        });
        assertFalse(PendingTempFiles.isRegistered(seen[0]));
        assertEquals(List.of("a.hrrys", "c.bin"), names(tmp));
    }

    private String log() {
        try {
            return "child output: " + Files.readString(tmp.resolve("child.log"));
        } catch (IOException e) {
            return "child output unreadable: " + e;
        }
    }

    private static List<Path> temporaries(Path dir) {
        try (Stream<Path> l = Files.list(dir)) {
            return l.filter(p -> p.getFileName().toString().endsWith(".tmp")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<String> names(Path dir) throws IOException {
        try (Stream<Path> l = Files.list(dir)) {
            return l.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /**
     * The child: three pending outputs in the directory {@code args[0]}; prints {@link #READY} on
     * standard output once all three exist, then waits to be killed.
     */
    public static final class Victim {
        static final String READY = "three pending outputs";

        private Victim() {
        }

        public static void main(String[] args) throws Exception {
            Path dir = Path.of(args[0]);
            PrintWriter sink = new PrintWriter(java.io.Writer.nullWriter());
            CountDownLatch listening = new CountDownLatch(2);
            for (String out : List.of("a.hrry", "b.hrrys")) {
                // recv opens its temporary output before it listens, then says it listens.
                PrintWriter err = new PrintWriter(System.err, true) {
                    @Override
                    public void println(String x) {
                        super.println(x);
                        if (x.startsWith("hurray: listening on")) {
                            listening.countDown();
                        }
                    }
                };
                Thread.ofPlatform().start(() -> Main.run(new String[] {"recv", "--listen", "0",
                        "--out", dir.resolve(out).toString()}, sink, err, false));
            }
            CountDownLatch never = new CountDownLatch(1);
            AtomicOutput.write(dir.resolve("c.npy"), ch -> {
                try {
                    listening.await();
                    System.out.println(READY);
                    System.out.flush();
                    never.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
            });
        }
    }
}
