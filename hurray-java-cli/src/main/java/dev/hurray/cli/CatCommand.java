package dev.hurray.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code hurray cat}: reads a stream on stdin and prints a summary (needs the Hurray library). */
@Command(name = "cat", description = {"Read a Hurray stream on stdin and print one line per tensor.",
        "Not available in this build."})
final class CatCommand implements Callable<Integer> {
    @Mixin
    CommonOptions common;

    @Override
    public Integer call() throws CliException {
        throw CliException.notAvailable("reading a Hurray stream");
    }
}
