package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Lets tests in other packages run the command and require success. */
public final class CliTestAccess {
    private CliTestAccess() {
    }

    /** Runs {@code hurray args…} and asserts exit 0. */
    public static void run(String... args) {
        CliTest.Result r = CliTest.run(args);
        assertEquals(ExitCode.OK, r.code(), "stderr: " + r.err());
    }
}
