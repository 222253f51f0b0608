package dev.hurray.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.ffm.testing.ChildJvm;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With a libhurray that lacks the reader functions (a stub exporting only
 * {@code hurray_c_abi_version}), every construction of the deserializer (Kafka makes one per
 * consumer, by class name) fails with the bindings' UnsatisfiedLinkError naming the function,
 * not with NoClassDefFoundError from the second on. Runs in a child JVM; needs a C compiler.
 */
class OlderLibraryDeserializerTest {
    /** The child: constructs the deserializer twice. */
    public static final class Child {
        public static void main(String[] args) {
            for (int i = 0; i < 2; i++) {
                try {
                    new HurrayTensorDeserializer().close();
                    System.out.println("construct: no error");
                } catch (Throwable t) {
                    System.out.println("construct: " + t.getClass().getName() + ": " + t.getMessage());
                }
            }
        }
    }

    @Test
    void everyConstructionFailsWithTheMissingFunction(@TempDir Path dir) throws Exception {
        Path lib = ChildJvm.olderLibraryStub(dir);

        ChildJvm.Result r = ChildJvm.run(List.of("-Dhurray.library.path=" + lib), Child.class.getName());
        String out = r.out();
        assertEquals(0, r.exit(), out);
        List<String> results = out.lines().filter(l -> l.startsWith("construct: ")).toList();
        assertEquals(2, results.size(), out);
        for (String l : results) {
            // Named: the first function the construction needs that the stub lacks.
            assertTrue(l.startsWith("construct: java.lang.UnsatisfiedLinkError: libhurray has no hurray_"), out);
        }
    }
}
