package dev.hurray.cli;

import java.io.PrintWriter;
import java.util.List;

/** Prints rows as aligned columns (two spaces apart), numbers right-aligned. */
final class Table {
    private Table() {
    }

    static void print(PrintWriter out, List<String[]> rows, boolean[] rightAlign) {
        int cols = rows.get(0).length;
        rows = rows.stream().map(r -> java.util.Arrays.stream(r).map(Errors::printable).toArray(String[]::new)).toList();
        int[] w = new int[cols];
        for (String[] r : rows) {
            for (int c = 0; c < cols; c++) {
                w[c] = Math.max(w[c], r[c].length());
            }
        }
        StringBuilder b = new StringBuilder();
        for (String[] r : rows) {
            b.setLength(0);
            for (int c = 0; c < cols; c++) {
                String cell = r[c];
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
