package dev.hurray.cli.foreign;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The command's temporary output files ({@code .NAME.RANDOM.tmp}, made by
 * {@link AtomicFile#createTemp}) that are neither renamed into place nor deleted yet; a JVM
 * shutdown hook deletes them, so a command ended by SIGTERM ({@code kill}, {@code timeout}),
 * SIGINT (Ctrl-C) or SIGHUP leaves no temporary file behind. SIGKILL or a JVM crash runs no hook
 * and still leaves it (the target is untouched either way). HRRYFILE outputs go through
 * {@code HurrayFile.create}, whose temporary file the core library's own hook deletes.
 *
 * <p>The hook is installed on the first {@link #register}. A path renamed into place is
 * unregistered right after the rename (and no longer exists at its temporary name), so a
 * committed output is never deleted. Thread-safe.
 */
public final class TempFiles {
    private static final Set<Path> PENDING = ConcurrentHashMap.newKeySet();

    private TempFiles() {
    }

    private static final class Hook {
        static {
            try {
                Runtime.getRuntime().addShutdownHook(new Thread(TempFiles::deleteAll, "hurray-cli-temp-cleanup"));
            } catch (IllegalStateException shuttingDown) {
                // Already shutting down: the output's own close() still deletes it.
            }
        }

        static void ensure() {
            // Loading the class ran the static initialiser.
        }
    }

    /** Registers {@code tmp} (an absolute path) for deletion at JVM shutdown. */
    public static void register(Path tmp) {
        Hook.ensure();
        PENDING.add(tmp);
    }

    /** Forgets {@code tmp}: it was renamed into place or deleted. */
    public static void unregister(Path tmp) {
        PENDING.remove(tmp);
    }

    /** Whether {@code tmp} is registered. */
    public static boolean isRegistered(Path tmp) {
        return PENDING.contains(tmp);
    }

    /** The hook's body: deletes every registered path, ignoring failures (nothing can report them). */
    static void deleteAll() {
        for (Path p : PENDING) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException | RuntimeException ignored) {
                // Best effort at shutdown.
            }
            PENDING.remove(p);
        }
    }
}
