package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The help text names every format the commands read, and the exit codes agree everywhere. */
class HelpTextCliTest {
    @Test
    void helpOfEveryReadingCommandNamesGguf() {
        for (String[] args : new String[][] {{"--help"}, {"convert", "--help"}, {"inspect", "--help"},
                {"send", "--help"}}) {
            CliTest.Result r = CliTest.run(args);
            r.assertOk();
            assertTrue(r.out().contains("GGUF") || r.out().contains(".gguf"), String.join(" ", args) + ":\n" + r.out());
        }
    }

    /** The codes in {@link ExitCode}, in the README's table and in the help footer are the same. */
    @Test
    void exitCodesAgreeBetweenCodeReadmeAndHelp() throws IOException, IllegalAccessException {
        TreeSet<Integer> constants = new TreeSet<>();
        for (Field f : ExitCode.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
                constants.add(f.getInt(null));
            }
        }
        String readme = Files.readString(Path.of("README.md"));
        String table = readme.substring(readme.indexOf("## Exit codes"));
        table = table.substring(0, table.indexOf("\n\n", table.indexOf("|---")));
        assertEquals(constants, codes(Pattern.compile("(?m)^\\| (\\d+) \\|"), table), table);

        String help = CliTest.run("--help").out();
        assertEquals(constants, codes(Pattern.compile("(?m)^ *(\\d+)  \\S"), help.substring(help.indexOf("Exit codes:"))),
                help);
    }

    private static TreeSet<Integer> codes(Pattern p, String text) {
        TreeSet<Integer> out = new TreeSet<>();
        Matcher m = p.matcher(text);
        while (m.find()) {
            out.add(Integer.parseInt(m.group(1)));
        }
        return out;
    }
}
