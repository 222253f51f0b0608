package dev.hurray.cli;

/**
 * The {@code hurray} command's exit codes. Stable: scripts may test them.
 *
 * <table>
 *   <caption>exit codes</caption>
 *   <tr><th>code</th><th>meaning</th></tr>
 *   <tr><td>0</td><td>success</td></tr>
 *   <tr><td>1</td><td>usage: unknown option, missing argument, bad option value</td></tr>
 *   <tr><td>2</td><td>bad input: missing input file, unrecognised or malformed format, truncated
 *       file, content the target cannot hold</td></tr>
 *   <tr><td>3</td><td>I/O error: an output that cannot be written, a read that fails, a network
 *       error</td></tr>
 *   <tr><td>4</td><td>verification failed: {@code verify} or {@code demo} found a structural
 *       problem or a mismatch</td></tr>
 *   <tr><td>5</td><td>not available in this build (e.g. HRRYFILE and stream paths until the
 *       Hurray library is wired in)</td></tr>
 *   <tr><td>70</td><td>internal error (a bug: rerun with {@code --verbose} and report the
 *       stack trace)</td></tr>
 * </table>
 */
public final class ExitCode {
    public static final int OK = 0;
    public static final int USAGE = 1;
    public static final int BAD_INPUT = 2;
    public static final int IO_ERROR = 3;
    public static final int VERIFY_FAILED = 4;
    public static final int NOT_AVAILABLE = 5;
    public static final int INTERNAL = 70;

    private ExitCode() {
    }
}
