package dev.hurray.bench;

/**
 * The JVM flags every benchmark fork runs with (TOOLCHAIN "Performance facts": fresh pages cost
 * ~12 µs each here, so the heap is fixed and pre-touched; Hurray needs native access; Arrow
 * reads {@code java.nio} internals). {@link SideBySide} needs the same flags on its command line.
 */
final class BenchJvm {
    private BenchJvm() {
    }

    static final String PRETOUCH = "-XX:+AlwaysPreTouch";
    static final String XMS = "-Xms1g";
    static final String XMX = "-Xmx1g";
    static final String NATIVE = "--enable-native-access=ALL-UNNAMED";
    static final String NIO = "--add-opens=java.base/java.nio=ALL-UNNAMED";
    static final String UNSAFE = "--sun-misc-unsafe-memory-access=allow";
}
