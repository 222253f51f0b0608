package dev.hurray.internal;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The library's loggers, each made when it is first used: SLF4J starts (finds and configures
 * its provider) on the first message, not when the library loads, so a fresh JVM's first
 * tensor does not wait for the logging setup.
 */
public final class Log {
    private Log() {
    }

    private static final class Core {
        static final Logger LOGGER = LoggerFactory.getLogger("dev.hurray");
    }

    private static final class Leaked {
        static final Logger LOGGER = LoggerFactory.getLogger("dev.hurray.Leaks");
    }

    /** {@code dev.hurray}: failed calls at DEBUG, failed releases and upcalls at WARN. */
    public static Logger core() {
        return Core.LOGGER;
    }

    /** {@code dev.hurray.Leaks}: resources freed by the cleaner instead of {@code close()}. */
    static Logger leaks() {
        return Leaked.LOGGER;
    }
}
