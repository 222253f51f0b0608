package dev.hurray.cli;

import java.io.Console;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.function.LongConsumer;

/**
 * A one-line progress bar on stderr, drawn only when stderr is a terminal and {@code --quiet}
 * is off; otherwise every method does nothing. Redraws at most ten times a second. Not
 * thread-safe: advance it from one thread.
 */
final class Progress implements LongConsumer, AutoCloseable {
    private static final int WIDTH = 30;
    private final PrintWriter err;
    private final String label;
    private final long total;
    private final boolean enabled;
    private long done;
    private long lastDraw;
    private boolean drawn;

    private Progress(PrintWriter err, String label, long total, boolean enabled) {
        this.err = err;
        this.label = label;
        this.total = total;
        this.enabled = enabled;
    }

    /**
     * A bar for {@code total} bytes (or an unknown total when {@code total <= 0}).
     *
     * @param terminal whether {@code err} is the process's stderr and that is a terminal
     */
    static Progress start(PrintWriter err, String label, long total, boolean quiet, boolean terminal) {
        return new Progress(err, label, total, terminal && !quiet);
    }

    /** Whether the process's stderr is (likely) a terminal: a console exists and is one (JDK 22+). */
    static boolean stderrIsTerminal() {
        Console c = System.console();
        return c != null && c.isTerminal();
    }

    @Override
    public void accept(long bytes) {
        if (!enabled) {
            return;
        }
        done += bytes;
        long now = System.nanoTime();
        if (!drawn || now - lastDraw > 100_000_000L || (total > 0 && done >= total)) {
            draw();
            lastDraw = now;
        }
    }

    private void draw() {
        StringBuilder b = new StringBuilder("\r").append(label).append(' ');
        if (total > 0) {
            int fill = (int) Math.min(WIDTH, done * WIDTH / total);
            b.append('[').append("#".repeat(fill)).append(".".repeat(WIDTH - fill)).append("] ");
            b.append(String.format(Locale.ROOT, "%3d%% ", Math.min(100, done * 100 / total)));
        }
        b.append(Units.bytes(done));
        if (total > 0) {
            b.append(" / ").append(Units.bytes(total));
        }
        err.print(b);
        err.flush();
        drawn = true;
    }

    /** Erases the bar (if drawn) so the next line starts clean. */
    @Override
    public void close() {
        if (enabled && drawn) {
            err.print("\r\033[K");
            err.flush();
        }
    }
}
