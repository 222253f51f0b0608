package dev.hurray.arrow;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs src/test/python/arrow_fixtures.py with the Python that has pyarrow (tools/setup.sh installs it). */
final class PyArrow {
    static final String PYTHON = System.getProperty("hurray.arrow.python", "python3");
    static final Path SCRIPT = Path.of("src/test/python/arrow_fixtures.py").toAbsolutePath();
    private static Boolean available;

    private PyArrow() {
    }

    /** Skips the calling test with the reason when pyarrow 25+ cannot be imported. */
    static synchronized void assume() {
        if (available == null) {
            try {
                String v = run(List.of(PYTHON, "-c", "import pyarrow; print(pyarrow.__version__)")).strip();
                available = Integer.parseInt(v.split("\\.")[0]) >= 25;
            } catch (IOException | RuntimeException e) {
                available = false;
            }
        }
        assumeTrue(available, "pyarrow 25+ is not importable by '" + PYTHON + "' (tools/setup.sh installs it; "
                + "-Dhurray.python=... picks another interpreter)");
    }

    static String fixtures(String verb, Path dir) throws IOException {
        return run(List.of(PYTHON, SCRIPT.toString(), verb, dir.toString()));
    }

    static String run(List<String> cmd) throws IOException {
        Process p = new ProcessBuilder(new ArrayList<>(cmd)).redirectErrorStream(true).start();
        try {
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(cmd + " timed out");
            }
            String s = new String(out, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new IOException(cmd + " exited " + p.exitValue() + ":\n" + s);
            }
            return s;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }
}
