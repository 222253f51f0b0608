package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.testing.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A library that lacks functions (a build older than the bindings) fails every call of the API
 * that needs one with the bindings' UnsatisfiedLinkError, not with a NoClassDefFoundError from
 * the second call on: no class of the API reads native defaults in its static initializer. Runs
 * in a child JVM against a stub library that has only {@code hurray_c_abi_version}; needs a C
 * compiler.
 */
class OlderLibraryTest {
    /** The child: each entry point that first reads native defaults, called twice. */
    public static final class Child {
        interface Call {
            void run() throws Exception;
        }

        public static void main(String[] args) throws Exception {
            Path dir = Path.of(args[0]);
            List<Call> calls = List.of(
                    () -> HurrayFile.open(dir.resolve("missing.hrry")).close(),
                    () -> HurrayFile.create(dir.resolve("new.hrry")).close(),
                    () -> Reader.of(new byte[16]).close(),
                    () -> Reader.of(new byte[16], new ReaderOptions(8, 1 << 20, 1 << 20, false,
                            TensorScope.CONFINED)).close(),
                    () -> FileReaderOptions.defaults(),
                    () -> FileWriterOptions.defaults(),
                    () -> ReaderOptions.defaults());
            for (int i = 0; i < calls.size(); i++) {
                for (int round = 0; round < 2; round++) {
                    try {
                        calls.get(i).run();
                        System.out.println("call " + i + ": no error");
                    } catch (Throwable t) {
                        System.out.println("call " + i + ": " + t.getClass().getName() + ": " + t.getMessage());
                    }
                }
            }
        }
    }

    @Test
    void everyCallFailsWithTheMissingFunctionNotANoClassDefFoundError(@TempDir Path dir) throws Exception {
        Path lib = ChildJvm.olderLibraryStub(dir);

        ChildJvm.Result r = ChildJvm.run(List.of("-Dhurray.library.path=" + lib), Child.class.getName(), dir.toString());
        String out = r.out();
        assertEquals(0, r.exit(), out);
        List<String> results = out.lines().filter(l -> l.startsWith("call ")).toList();
        assertEquals(14, results.size(), out);
        for (String l : results) {
            assertTrue(l.contains(": java.lang.UnsatisfiedLinkError: libhurray has no hurray_"), out);
        }
        assertTrue(Files.notExists(dir.resolve("new.hrry")), out);
    }
}
