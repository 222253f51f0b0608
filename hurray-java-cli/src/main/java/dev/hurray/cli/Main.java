package dev.hurray.cli;

import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import picocli.CommandLine;

/**
 * Entry point of the {@code hurray} command. {@link #run} is the whole program, with its
 * streams passed in, so tests run it in-process.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        Charset cs = System.console() != null ? System.console().charset() : Charset.defaultCharset();
        PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(System.out, cs), true);
        PrintWriter err = new PrintWriter(new java.io.OutputStreamWriter(System.err, cs), true);
        int code = run(args, System.in, out, err, Progress.stderrIsTerminal());
        out.flush();
        err.flush();
        System.exit(code);
    }

    /**
     * Runs the command with an empty standard input.
     *
     * @param terminal whether {@code err} is a terminal (enables the progress bar)
     * @return the {@link ExitCode}
     */
    public static int run(String[] args, PrintWriter out, PrintWriter err, boolean terminal) {
        return run(args, InputStream.nullInputStream(), out, err, terminal);
    }

    /**
     * Runs the command.
     *
     * @param in standard input ({@code cat}, {@code inspect -} read a stream from it)
     * @param terminal whether {@code err} is a terminal (enables the progress bar)
     * @return the {@link ExitCode}
     */
    public static int run(String[] args, InputStream in, PrintWriter out, PrintWriter err, boolean terminal) {
        CommandLine cl = commandLine(in, out, err, terminal);
        int code;
        try {
            code = cl.execute(args);
        } catch (UnsatisfiedLinkError e) {
            // picocli hands only Exceptions to the handler below; a libhurray that cannot be
            // loaded (or lacks a function) is an Error. Its message says what to do.
            err.println("hurray: error: " + Errors.oneLine(String.valueOf(e.getMessage())));
            if (java.util.Arrays.asList(args).contains("--verbose") || java.util.Arrays.asList(args).contains("-v")) {
                e.printStackTrace(err);
            }
            code = ExitCode.INTERNAL;
        } catch (OutOfMemoryError e) {
            // An Error passes picocli's handler. The heap the failed command held is garbage by
            // now, so a one-line message can still be printed; the stack would only scare.
            err.println("hurray: error: out of memory (" + Errors.oneLine(String.valueOf(e.getMessage()))
                    + "): the input needs more than this JVM's " + (Runtime.getRuntime().maxMemory() >> 20)
                    + " MiB heap; give it more with HURRAY_JAVA_OPTS=-Xmx<size>");
            if (java.util.Arrays.asList(args).contains("--verbose") || java.util.Arrays.asList(args).contains("-v")) {
                e.printStackTrace(err);
            }
            code = ExitCode.IO_ERROR;
        }
        out.flush();
        err.flush();
        return code;
    }

    /** The configured command line (streams, handlers, exit codes). */
    static CommandLine commandLine(InputStream in, PrintWriter out, PrintWriter err, boolean terminal) {
        CommandLine cl = new CommandLine(new HurrayCommand(in, terminal));
        cl.setOut(out);
        cl.setErr(err);
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        cl.setExitCodeExceptionMapper(t -> t instanceof CliException c ? c.exitCode() : ExitCode.INTERNAL);
        cl.setParameterExceptionHandler((ex, a) -> {
            PrintWriter e = ex.getCommandLine().getErr();
            e.println("hurray: " + Errors.oneLine(ex.getMessage()));
            e.println("Try '" + ex.getCommandLine().getCommandSpec().qualifiedName() + " --help' for more information.");
            return ExitCode.USAGE;
        });
        cl.setExecutionExceptionHandler((ex, cmd, parseResult) -> {
            PrintWriter e = cmd.getErr();
            boolean verbose = verbose(cmd);
            int code;
            if (ex instanceof CliException c) {
                e.println("hurray: error: " + Errors.oneLine(c.getMessage()));
                code = c.exitCode();
            } else if (ex instanceof java.io.IOException io) {
                CliException c = Errors.reading(io);
                e.println("hurray: error: " + Errors.oneLine(c.getMessage()));
                code = c.exitCode();
            } else {
                e.println("hurray: internal error: " + ex + (verbose ? "" : " (rerun with --verbose for details)"));
                code = ExitCode.INTERNAL;
            }
            if (verbose) {
                ex.printStackTrace(e);
            }
            e.flush();
            return code;
        });
        return cl;
    }

    /** Whether the subcommand that failed was given {@code --verbose} ({@link CommonOptions#verbose}). */
    static boolean verbose(CommandLine cmd) {
        return cmd.getMixins().get("common") instanceof CommonOptions c && c.verbose;
    }
}
