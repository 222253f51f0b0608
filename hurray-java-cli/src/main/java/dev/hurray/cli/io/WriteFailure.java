package dev.hurray.cli.io;

import java.io.IOException;

/**
 * Wraps a failure of the {@link Sink} side of a {@link Pipeline} (its cause), so that the
 * command can tell "could not write the output" from "could not read the input".
 */
public final class WriteFailure extends IOException {
    private static final long serialVersionUID = 1L;

    public WriteFailure(IOException cause) {
        super(cause.getMessage(), cause);
    }

    /** The sink's exception. */
    @Override
    public synchronized IOException getCause() {
        return (IOException) super.getCause();
    }
}
