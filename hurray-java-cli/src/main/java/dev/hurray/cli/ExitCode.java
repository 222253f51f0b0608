package dev.hurray.cli;

/**
 * The {@code hurray} command's exit codes. Stable: scripts may test them. What each means is
 * the table in hurray-java-cli/README.md §Exit codes; {@code hurray --help} prints a summary
 * ({@code HelpTextCliTest} keeps the three in step).
 */
public final class ExitCode {
    public static final int OK = 0;
    public static final int USAGE = 1;
    public static final int BAD_INPUT = 2;
    public static final int IO_ERROR = 3;
    public static final int VERIFY_FAILED = 4;
    public static final int INTERNAL = 70;

    private ExitCode() {
    }
}
