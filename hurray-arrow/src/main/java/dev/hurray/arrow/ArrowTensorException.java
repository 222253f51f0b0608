package dev.hurray.arrow;

import java.io.IOException;

/**
 * Arrow data that cannot become Hurray tensors, or tensors that cannot become Arrow data: an
 * element type the other side lacks, a null row, a row whose shape and element count disagree,
 * a layout with no Arrow equivalent. The message names the column, the row and the type.
 */
public class ArrowTensorException extends IOException {
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
