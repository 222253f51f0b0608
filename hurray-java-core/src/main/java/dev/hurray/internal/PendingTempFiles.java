package dev.hurray.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Temporary output files ({@code HurrayFile.create} writers, the {@code hurray} command's atomic
 * outputs) that are neither committed nor cleaned up yet, deleted by a JVM shutdown hook: a process ended by {@code System.exit}, the
 * last non-daemon thread ending, SIGTERM, SIGINT (Ctrl-C) or SIGHUP leaves no
 * {@code .NAME.RANDOM.tmp} behind. SIGKILL, a JVM crash or a power loss runs no hook; the
 * temporary file then stays (the target path is untouched either way).
 *
 * <p>The hook is installed on the first {@link #register}. It deletes the paths registered at
 * that moment; a writer still writing on another thread then fails on its next file operation,
 * which is moot since the JVM is exiting. A path renamed into place before the hook runs is
 * unregistered (or no longer exists), so a committed file is never deleted. Thread-safe.
 */
public final class PendingTempFiles {
    private static final Set<Path> PENDING = ConcurrentHashMap.newKeySet();

    private PendingTempFiles() {
    }

    /** Installs the hook once, on first use. */
    private static final class Hook {
        static {
            try {
                Runtime.getRuntime().addShutdownHook(new Thread(PendingTempFiles::deleteAll, "hurray-temp-cleanup"));
            } catch (IllegalStateException shuttingDown) {
                // Already shutting down: nothing registered from now on can be cleaned up by a
                // hook; the writer's own close() still deletes its file.
            }
        }

        static void ensure() {
            // Loading the class ran the static initialiser.
        }
    }

    /** Registers {@code temp} (an absolute path) for deletion at JVM shutdown. */
    public static void register(Path temp) {
        Hook.ensure();
        PENDING.add(temp);
    }

    /** Forgets {@code temp}: it was renamed into place or deleted. Null is ignored. */
    public static void unregister(Path temp) {
        if (temp != null) {
            PENDING.remove(temp);
        }
    }

    /** Whether {@code temp} is registered (for tests). */
    public static boolean isRegistered(Path temp) {
        return PENDING.contains(temp);
    }

    /** The shutdown hook's body: deletes every registered path, ignoring failures. */
    static void deleteAll() {
        for (Path p : PENDING) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException | RuntimeException ignored) {
                // Best effort at shutdown: nothing can be reported.
            }
            PENDING.remove(p);
        }
    }
}
