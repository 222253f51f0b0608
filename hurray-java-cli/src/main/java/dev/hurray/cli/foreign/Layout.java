package dev.hurray.cli.foreign;

/**
 * Element order of a dense tensor's payload. Mirrors Hurray's {@code row-major} and
 * {@code column-major} layouts (native {@code LayoutDescriptor::RowMajor/ColumnMajor}).
 */
public enum Layout {
    /** C order: the last axis varies fastest. */
    ROW_MAJOR("row-major"),
    /** Fortran order: the first axis varies fastest (npy {@code fortran_order: True}). */
    COLUMN_MAJOR("column-major");

    private final String label;

    Layout(String label) {
        this.label = label;
    }

    /** The name Hurray uses ({@code row-major}, {@code column-major}). */
    public String label() {
        return label;
    }

    @Override
    public String toString() {
        return label;
    }
}
