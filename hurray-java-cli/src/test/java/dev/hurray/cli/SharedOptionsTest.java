package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/** Options several commands take are declared once (mixins), so each command explains them alike. */
class SharedOptionsTest {
    private static final Map<String, List<String>> TAKEN_BY = Map.of(
            "--from", List.of("inspect", "verify", "convert", "send"),
            "--dequantize", List.of("convert", "send", "recv"),
            "--compress", List.of("convert", "recv"),
            "--verbose", List.of("inspect", "verify", "convert", "send", "recv", "cat", "demo"),
            "--quiet", List.of("inspect", "verify", "convert", "send", "recv", "cat", "demo"));

    @Test
    void eachSharedOptionHasOneHelpTextEverywhere() {
        CommandLine cl = Main.commandLine(System.in, new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()),
                false);
        for (Map.Entry<String, List<String>> e : TAKEN_BY.entrySet()) {
            List<String> first = null;
            for (String command : e.getValue()) {
                CommandLine sub = cl.getSubcommands().get(command);
                assertNotNull(sub, command);
                OptionSpec o = sub.getCommandSpec().findOption(e.getKey());
                assertNotNull(o, command + " takes " + e.getKey());
                List<String> text = List.of(o.description());
                if (first == null) {
                    first = text;
                }
                assertEquals(first, text, e.getKey() + " of " + command);
            }
        }
    }

    @Test
    void verboseIsReadFromTheFailingCommandsOptions() {
        CommandLine cl = Main.commandLine(System.in, new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()),
                false);
        CommandLine verify = cl.getSubcommands().get("verify");
        assertTrue(!Main.verbose(verify));
        cl.parseArgs("verify", "--verbose", "x");
        assertTrue(Main.verbose(verify));
    }
}
