package dev.hurray.cli;

import java.io.PrintWriter;

/** Prints rows as aligned columns (two spaces apart), numbers right-aligned. */
final class Table {
    private Table() {
    }

    /**
     * Prints {@code rows} (the first is the header). {@code rows} is iterated twice, once for
     * the column widths and once to print, so a lazy view prints without being held.
     */
    static void print(PrintWriter out, Iterable<String[]> rows, boolean[] rightAlign) {
        int[] w = null;
        for (String[] raw : rows) {
            if (w == null) {
                w = new int[raw.length];
            }
            for (int c = 0; c < w.length; c++) {
                w[c] = Math.max(w[c], Errors.printable(raw[c]).length());
            }
        }
        if (w == null) {
            return;
        }
        int cols = w.length;
        StringBuilder b = new StringBuilder();
        for (String[] r : rows) {
            b.setLength(0);
            for (int c = 0; c < cols; c++) {
                String cell = Errors.printable(r[c]);
                boolean last = c == cols - 1;
                if (rightAlign[c]) {
                    b.append(" ".repeat(w[c] - cell.length())).append(cell);
                } else {
                    b.append(cell);
                    if (!last) {
                        b.append(" ".repeat(w[c] - cell.length()));
                    }
                }
                if (!last) {
                    b.append("  ");
                }
            }
            out.println(b.toString().stripTrailing());
        }
    }
}
