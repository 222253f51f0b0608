package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.formats.ReferencePython;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code inspect} and {@code verify} take a genuine {@code scipy.sparse.save_npz} file, as {@code convert} does. */
class ScipyInspectCliTest {
    @TempDir
    Path dir;

    @Test
    void inspectAndVerifyReadSaveNpzFilesAndVerifyChecksTheirIndices() throws IOException {
        ReferencePython.assume("scipy", "numpy");
        ReferencePython.run("""
                import sys, numpy as np, scipy.sparse as sp
                d = sys.argv[1]
                sp.save_npz(d + '/m.npz', sp.random(6, 9, density=0.3, format='csr', random_state=1))
                np.savez(d + '/bad.npz', format=np.array(b'csr'), shape=np.array([2, 3]), data=np.array([1.0, 2.0]),
                         indices=np.array([0, 7], dtype=np.int32), indptr=np.array([0, 1, 2], dtype=np.int32))
                """, dir.toString());
        String m = dir.resolve("m.npz").toString();
        CliTest.Result ins = CliTest.run("inspect", "--json", m);
        ins.assertOk();
        assertTrue(ins.out().contains("\"csr\"") && ins.out().contains("\"nnz\""), ins.out());
        CliTest.run("inspect", m).assertOk();
        CliTest.Result v = CliTest.run("verify", m);
        v.assertOk();
        assertTrue(v.out().contains("1 sparse tensor"), v.out());
        CliTest.run("verify", dir.resolve("bad.npz").toString()).assertError(ExitCode.VERIFY_FAILED, "verification failed");
    }
}
