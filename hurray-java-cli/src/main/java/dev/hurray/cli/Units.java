package dev.hurray.cli;

import java.util.Locale;

/** Human-readable sizes for summaries and the progress bar. */
final class Units {
    private Units() {
    }

    /** {@code 1536} → {@code 1.5 KiB}; below 1 KiB, plain bytes ({@code 17 B}). */
    static String bytes(long n) {
        if (n < 1024) {
            return n + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        double v = n;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }

    /** {@code 1 tensor}, {@code 2 tensors}. */
    static String count(long n, String noun) {
        return n + " " + noun + (n == 1 ? "" : "s");
    }

    /** {@code 0.123 s}, from nanoseconds. */
    static String seconds(long nanos) {
        return String.format(Locale.ROOT, "%.3f s", nanos / 1e9);
    }

    /** {@code 512.0 MB/s} (decimal megabytes), or {@code -} for a zero duration. */
    static String rate(long bytes, long nanos) {
        if (nanos <= 0) {
            return "-";
        }
        return String.format(Locale.ROOT, "%.1f MB/s", bytes / (nanos / 1e9) / 1e6);
    }
}
