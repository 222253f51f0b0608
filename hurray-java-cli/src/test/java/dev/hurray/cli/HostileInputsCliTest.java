package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.hurray.formats.SafetensorsTestAccess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Hostile JSON headers end in exit 2 and one error line (they used to be exit 70, an NPE). */
class HostileInputsCliTest {
    @TempDir
    Path tmp;

    @Test
    void jsonBeyondTheParserLimitsIsBadInput() throws IOException {
        String[] headers = {
            "{\"a\":" + "[".repeat(1500) + "]".repeat(1500) + "}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[1" + "0".repeat(1500) + "],\"data_offsets\":[0,4]}}",
            "{\"" + "k".repeat(60_000) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        };
        for (String h : headers) {
            Path st = tmp.resolve("x.safetensors");
            Files.write(st, SafetensorsTestAccess.file(h, new byte[4]));
            CliTest.Result r = CliTest.run("inspect", st.toString());
            r.assertError(ExitCode.BAD_INPUT, "invalid JSON");
            assertEquals(1, r.err().strip().lines().count(), r.err());
        }
    }

    /**
     * Composites whose head lies about its member count pass the flat view; verify checks the
     * assembled view too (fixtures written by a hostile-input pass: a head declaring 1 member
     * followed by 2, and a head declaring 1,024 members followed by the end marker).
     */
    @Test
    void compositesWithLyingMemberCountsFailVerification() throws IOException {
        for (String name : new String[] {"composite_member_count_too_small.hrrys", "composite_member_count_too_large.hrrys"}) {
            Path f = tmp.resolve(name);
            try (var in = HostileInputsCliTest.class.getResourceAsStream("/hostile/" + name)) {
                Files.copy(in, f);
            }
            CliTest.Result r = CliTest.run("verify", f.toString());
            r.assertError(ExitCode.VERIFY_FAILED, "composite");
        }
        Path ok = Path.of(System.getProperty("hurray.golden.dir", "../src/golden"), "stream_v2_sparse_composite.hrry");
        if (Files.exists(ok)) {
            assertEquals(0, CliTest.run("verify", ok.toString()).code());
        }
    }
}
