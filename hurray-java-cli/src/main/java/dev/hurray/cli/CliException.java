package dev.hurray.cli;

/**
 * An error the command reports as one line and an {@link ExitCode}. Thrown by subcommands; the
 * top-level handler prints {@code hurray: error: MESSAGE} and exits with {@link #exitCode()}.
 */
public class CliException extends Exception {
    private static final long serialVersionUID = 1L;
    private final int exitCode;

    public CliException(int exitCode, String message) {
        super(message);
        this.exitCode = exitCode;
    }

    public CliException(int exitCode, String message, Throwable cause) {
        super(message, cause);
        this.exitCode = exitCode;
    }

    public int exitCode() {
        return exitCode;
    }
}
