package dev.hurray.arrow;

import dev.hurray.formats.ForeignFormatException;

/**
 * Arrow data that cannot become Hurray tensors, or tensors that cannot become Arrow data: an
 * element type the other side lacks, a null row, a row whose shape and element count disagree,
 * a layout with no Arrow equivalent. The message names the column, the row and the type. A
 * {@link ForeignFormatException} (an {@link java.io.IOException}), as the other foreign formats' errors are.
 */
public class ArrowTensorException extends ForeignFormatException {
    private static final long serialVersionUID = 1L;

    /** With a message naming what was refused. */
    public ArrowTensorException(String message) {
        super(message);
    }

    /** With a message and the underlying failure. */
    public ArrowTensorException(String message, Throwable cause) {
        super(message, cause);
    }
}
