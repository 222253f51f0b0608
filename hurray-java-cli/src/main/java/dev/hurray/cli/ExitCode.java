package dev.hurray.cli;

/**
 * The {@code hurray} command's exit codes. Stable: scripts may test them.
 *
 * <table>
 *   <caption>exit codes</caption>
 *   <tr><th>code</th><th>meaning</th></tr>
 *   <tr><td>0</td><td>success</td></tr>
 *   <tr><td>1</td><td>usage: unknown option, missing argument, bad option value, an output
 *       format that cannot be told or written</td></tr>
 *   <tr><td>2</td><td>bad input: missing input file, unrecognised or malformed format, truncated
 *       or corrupt file or stream, content the target cannot hold</td></tr>
 *   <tr><td>3</td><td>I/O error: an output that cannot be written, a read that fails, a network
 *       error (connection refused, reset, timed out)</td></tr>
 *   <tr><td>4</td><td>verification failed: {@code verify} found the file invalid, or
 *       {@code demo} found the copies differ</td></tr>
 *   <tr><td>70</td><td>internal error (a bug: rerun with {@code --verbose} and report the
 *       stack trace), or a native library that cannot be loaded or lacks a function (the
 *       message says which)</td></tr>
 * </table>
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
