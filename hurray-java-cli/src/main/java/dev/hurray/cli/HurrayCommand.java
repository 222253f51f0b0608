package dev.hurray.cli;

import java.io.InputStream;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** The top-level {@code hurray} command: prints usage; the work is in the subcommands. */
@Command(name = "hurray",
        mixinStandardHelpOptions = true,
        versionProvider = VersionProvider.class,
        description = {"Inspect, convert and move tensors: safetensors, npy/npz, GGUF and tfjs weights; Arrow IPC "
                + "tensor columns (.arrow, .arrows); "
                + "Hurray streams (.hrrys) and HRRYFILE containers (.hrry).",
                "Start with 'hurray demo'."},
        subcommands = {InspectCommand.class, ConvertCommand.class, SendCommand.class, RecvCommand.class,
                CatCommand.class, VerifyCommand.class, DemoCommand.class},
        footerHeading = "%nExit codes:%n",
        footer = {"  0  success", "  1  usage error", "  2  bad input (missing, malformed, truncated, unsupported)",
                "  3  I/O error (cannot read or write, network)", "  4  verification failed",
                " 70  internal error"})
public final class HurrayCommand implements Callable<Integer> {
    private final InputStream stdin;
    private final boolean terminal;

    @Spec
    CommandSpec spec;

    HurrayCommand(InputStream stdin, boolean terminal) {
        this.stdin = stdin;
        this.terminal = terminal;
    }

    /** The process's standard input (or what a test passed instead). */
    InputStream stdin() {
        return stdin;
    }

    /** Whether stderr is a terminal (progress bars are drawn only then). */
    boolean terminal() {
        return terminal;
    }

    /** Without a subcommand: prints usage and exits with {@link ExitCode#USAGE}. */
    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return ExitCode.USAGE;
    }
}
