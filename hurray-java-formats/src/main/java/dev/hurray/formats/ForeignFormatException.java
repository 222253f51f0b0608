package dev.hurray.formats;

import java.io.IOException;

/**
 * The input is not a valid file of the format it was read as, or holds something the model
 * cannot represent (an object or structured npy dtype, a tfjs string tensor, a safetensors
 * dtype without a Hurray element type). The message is one line and names the file and what
 * was wrong; it is meant to be shown to the user as is.
 */
public class ForeignFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    public ForeignFormatException(String message) {
        super(message);
    }

    public ForeignFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
