package dev.hurray.formats;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs the reference implementations (safetensors 0.8, gguf-py 0.19, ml_dtypes 0.6, scipy) in
 * a Python process, for cross-checks. {@code python3} from PATH (override with system property
 * {@code hurray.python}); {@code tools/setup.sh} installs the packages. A test whose package
 * is missing is skipped with the reason, never failed.
 */
public final class ReferencePython {
    private ReferencePython() {
    }

    private static final String PYTHON = System.getProperty("hurray.python", "python3");

    /** Skips the calling test unless every one of {@code modules} imports. */
    public static void assume(String... modules) {
        StringBuilder s = new StringBuilder("import importlib\nmissing=[]\n");
        for (String m : modules) {
            s.append("try:\n    importlib.import_module('").append(m).append("')\nexcept Exception:\n    missing.append('")
                    .append(m).append("')\n");
        }
        s.append("print(' '.join(missing))\n");
        String out;
        try {
            Result r = exec(s.toString(), List.of());
            Assumptions.assumeTrue(r.rc == 0, () -> PYTHON + " does not run: " + r.err);
            out = r.out.strip();
        } catch (IOException e) {
            Assumptions.abort(PYTHON + " not found (" + e.getMessage() + "): reference cross-check skipped");
            return;
        }
        Assumptions.assumeTrue(out.isEmpty(), () -> "Python package(s) " + out + " not installed (tools/setup.sh installs "
                + "them): reference cross-check skipped");
    }

    /**
     * Runs {@code script} with {@code args} ({@code sys.argv[1:]}) and returns its standard
     * output; a non-zero exit fails the test with the script's standard error.
     */
    public static String run(String script, String... args) throws IOException {
        Result r = exec(script, List.of(args));
        if (r.rc != 0) {
            throw new AssertionError("reference script failed (exit " + r.rc + "):\n" + r.err);
        }
        return r.out;
    }

    private record Result(int rc, String out, String err) {
    }

    private static Result exec(String script, List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(PYTHON, "-c", script));
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        java.nio.file.Path errFile = java.nio.file.Files.createTempFile("hurray-py", ".err");
        pb.redirectError(errFile.toFile());
        Process p = pb.start();
        try {
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("reference script did not finish in 120 s");
            }
            String err = java.nio.file.Files.readString(errFile);
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8), err);
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } finally {
            java.nio.file.Files.deleteIfExists(errFile);
        }
    }
}
