package dev.hurray.cli;

import static dev.hurray.cli.CliTest.run;
import static dev.hurray.cli.CliTest.runWithStdin;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.cli.CliTest.Result;
import dev.hurray.formats.ForeignModel;
import dev.hurray.formats.ForeignTensor;
import dev.hurray.formats.Npz;
import dev.hurray.formats.TestSupport;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code send}, {@code recv} and {@code cat} on real loopback sockets and real files: the
 * receiver runs in-process on another thread, listening on an ephemeral port it reports on
 * stderr.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NetworkCliTest {
    private static final Pattern LISTENING = Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)");

    @TempDir
    Path tmp;

    Path tiny;
    Path tinyHrry;

    @BeforeEach
    void model() throws IOException {
        tiny = BundledModels.extract("tiny_face_detector_model", Files.createDirectories(tmp.resolve("src")));
        tinyHrry = tmp.resolve("tiny.hrry");
        run("convert", s(tiny), s(tinyHrry)).assertOk();
    }

    private static String s(Path p) {
        return p.toString();
    }

    /** A {@code hurray recv} running on another thread. */
    record Receiver(CompletableFuture<Result> result, int port) {
        Result await() throws Exception {
            return result.get(30, TimeUnit.SECONDS);
        }
    }

    /** Stderr of a command that completes {@code port} as soon as the listening line is written. */
    static final class Listening extends StringWriter {
        final CompletableFuture<Integer> port = new CompletableFuture<>();

        @Override
        public void write(int c) {
            super.write(c);
            look();
        }

        @Override
        public void write(char[] cbuf, int off, int len) {
            super.write(cbuf, off, len);
            look();
        }

        @Override
        public void write(String str) {
            super.write(str);
            look();
        }

        @Override
        public void write(String str, int off, int len) {
            super.write(str, off, len);
            look();
        }

        private void look() {
            if (!port.isDone()) {
                Matcher m = LISTENING.matcher(getBuffer());
                if (m.find()) {
                    port.complete(Integer.parseInt(m.group(1)));
                }
            }
        }
    }

    /** Starts {@code hurray recv --listen 0 ARGS...} and waits until it reports its port. */
    static Receiver recv(String... args) throws Exception {
        StringWriter out = new StringWriter();
        Listening err = new Listening();
        String[] all = Stream.concat(Stream.of("recv", "--listen", "0", "--timeout", "20"), Arrays.stream(args)).toArray(String[]::new);
        CompletableFuture<Result> result = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            int code = Main.run(all, new PrintWriter(out), new PrintWriter(err), false);
            result.complete(new Result(code, out.toString(), err.toString()));
        });
        // Whichever comes first: the port, or the command ending without one.
        Object first = CompletableFuture.anyOf(err.port, result).get(20, TimeUnit.SECONDS);
        if (!(first instanceof Integer port)) {
            throw new AssertionError("recv ended before listening: " + first);
        }
        return new Receiver(result, port);
    }

    /** A port nothing listens on (bound, then released). */
    static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private List<String> names(Path dir) throws IOException {
        try (Stream<Path> l = Files.list(dir)) {
            return l.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    // ---- send / recv -------------------------------------------------------------------------

    @Test
    void sendAnHrryFileReceiveAnHrryFile() throws Exception {
        Path out = tmp.resolve("received.hrry");
        Receiver r = recv("--out", s(out));
        Result sent = CliTest.run(true, "send", "127.0.0.1:" + r.port(), s(tinyHrry)); // stderr "is a terminal"
        sent.assertOk();
        assertTrue(sent.err().contains("\rsending [") && sent.err().contains("100%"), "progress bar: " + sent.err());
        assertTrue(sent.err().endsWith("\r\033[K"), "bar erased at the end");
        assertTrue(sent.out().startsWith("sent 19 tensors (188.8 KiB) from " + tinyHrry + " [hrry] to 127.0.0.1:" + r.port()),
                sent.out());
        Result got = r.await();
        got.assertOk();
        assertTrue(got.out().startsWith("received 19 tensors (188.8 KiB) from 127.0.0.1:"), got.out());
        assertEquals(-1, Files.mismatch(tinyHrry, out), "the received container is the sent one, byte for byte");
    }

    @Test
    void sendTfjsReceiveDequantizedSafetensors() throws Exception {
        Path out = tmp.resolve("received.safetensors");
        Receiver r = recv("--out", s(out), "--dequantize");
        run("send", "127.0.0.1:" + r.port(), s(tiny)).assertOk();
        r.await().assertOk();
        Path direct = tmp.resolve("direct.safetensors");
        run("convert", "--dequantize", s(tiny), s(direct)).assertOk();
        assertEquals(-1, Files.mismatch(direct, out), "received values equal the direct conversion's");
    }

    @Test
    void sendNpzReceiveNpzWithFormatFlag() throws Exception {
        Path npz = TestSupport.resourceDir("npy").resolve("stored.npz");
        Path out = tmp.resolve("received.bin");
        Receiver r = recv("--out", s(out), "--to", "npz");
        run("send", "-q", "127.0.0.1:" + r.port(), s(npz)).assertOk();
        r.await().assertOk();
        try (ForeignModel a = Npz.read(npz, null); ForeignModel b = Npz.read(out, null)) {
            for (ForeignTensor t : a.tensors()) {
                assertEquals(TestSupport.hex(t.data()), TestSupport.hex(b.tensor(t.name()).data()), t.name());
                assertEquals(t.layout(), b.tensor(t.name()).layout());
            }
        }
    }

    @Test
    void recvRefusesATruncatedStreamAndLeavesNoFile() throws Exception {
        Path hrrys = tmp.resolve("tiny.hrrys");
        run("convert", s(tinyHrry), s(hrrys)).assertOk();
        byte[] stream = Files.readAllBytes(hrrys);
        Path recvDir = Files.createDirectories(tmp.resolve("in"));
        Path out = recvDir.resolve("r.hrry");
        Receiver r = recv("--out", s(out));
        try (Socket sock = new Socket(InetAddress.getLoopbackAddress(), r.port()); OutputStream os = sock.getOutputStream()) {
            os.write(stream, 0, stream.length / 2); // a sender that dies half way
        }
        Result got = r.await();
        got.assertError(ExitCode.BAD_INPUT, "TRUNCATED");
        assertEquals(1, got.err().lines().filter(l -> l.startsWith("hurray: error")).count(), got.err());
        assertEquals(List.of(), names(recvDir), "no output and no temporary file");
    }

    /** A peer that connects and sends nothing: recv gives up after --idle-timeout, exit 3, no file. */
    @Test
    void recvIdleTimeoutOnASilentPeer() throws Exception {
        Path recvDir = Files.createDirectories(tmp.resolve("silent"));
        Path out = recvDir.resolve("r.hrry");
        Receiver r = recv("--out", s(out), "--idle-timeout", "1");
        try (Socket sock = new Socket(InetAddress.getLoopbackAddress(), r.port())) {
            Result got = r.await(); // the socket stays open and silent until recv has given up
            assertIdleTimeout(got);
        }
        assertEquals(List.of(), names(recvDir), "no output and no temporary file");
    }

    /** A peer that sends half a stream and then stalls, connection open: same as a silent one. */
    @Test
    void recvIdleTimeoutOnAStalledPeer() throws Exception {
        Path hrrys = tmp.resolve("tiny.hrrys");
        run("convert", s(tinyHrry), s(hrrys)).assertOk();
        byte[] stream = Files.readAllBytes(hrrys);
        Path recvDir = Files.createDirectories(tmp.resolve("stalled"));
        Path out = recvDir.resolve("r.hrrys");
        Receiver r = recv("--out", s(out), "--idle-timeout", "1");
        try (Socket sock = new Socket(InetAddress.getLoopbackAddress(), r.port()); OutputStream os = sock.getOutputStream()) {
            os.write(stream, 0, stream.length / 2);
            os.flush();
            Result got = r.await();
            assertIdleTimeout(got);
        }
        assertEquals(List.of(), names(recvDir), "no output and no temporary file");
    }

    private static void assertIdleTimeout(Result got) {
        got.assertError(ExitCode.IO_ERROR, "nothing arrived for 1 s (--idle-timeout)");
        assertTrue(got.err().contains("stream from 127.0.0.1:"), got.err());
        List<String> lines = got.err().lines().filter(l -> !l.startsWith("hurray: listening")).toList();
        assertEquals(1, lines.size(), "one line: " + got.err());
        assertTrue(lines.get(0).startsWith("hurray: error: "), got.err());
    }

    @Test
    void recvIdleTimeoutOptionIsChecked() {
        run("recv", "--listen", "0", "--idle-timeout", "-1", "--out", s(tmp.resolve("r.hrry")))
                .assertError(ExitCode.USAGE, "--idle-timeout must not be negative");
    }

    /** --idle-timeout 0 reads the channel directly and still receives a whole stream. */
    @Test
    void recvWithoutIdleTimeout() throws Exception {
        Path out = tmp.resolve("r0.hrry");
        Receiver r = recv("--out", s(out), "--idle-timeout", "0");
        run("send", "-q", "127.0.0.1:" + r.port(), s(tinyHrry)).assertOk();
        r.await().assertOk();
        assertEquals(-1, Files.mismatch(tinyHrry, out));
    }

    @Test
    void recvRefusesWhatIsNotAStream() throws Exception {
        Path out = tmp.resolve("r.hrry");
        Receiver r = recv("--out", s(out));
        try (Socket sock = new Socket(InetAddress.getLoopbackAddress(), r.port()); OutputStream os = sock.getOutputStream()) {
            os.write(Files.readAllBytes(tinyHrry)); // a container is not a stream
        } catch (java.net.SocketException resetByPeer) {
            // recv may refuse the magic and close before all ~200 KiB are written: the kernel
            // then answers the rest with a reset. Either way, what recv reports is checked below.
        }
        r.await().assertError(ExitCode.BAD_INPUT, "INVALID_MAGIC");
        assertFalse(Files.exists(out));
    }

    @Test
    void recvWithoutASenderTimesOut() throws Exception {
        Path out = tmp.resolve("never.hrry");
        Result got = run("recv", "--listen", "0", "--timeout", "1", "--out", s(out));
        got.assertError(ExitCode.IO_ERROR, "no connection within 1 s");
        assertFalse(Files.exists(out));
        assertEquals(List.of("src", "tiny.hrry"), names(tmp));
    }

    @Test
    void recvUnwritableOutputFailsBeforeListening() {
        Path out = tmp.resolve("no/such/dir/r.hrry");
        Result got = run("recv", "--listen", "0", "--out", s(out));
        got.assertError(ExitCode.IO_ERROR, "cannot write " + out);
        assertFalse(got.err().contains("listening"), got.err());
        run("recv", "--listen", "0", "--out", s(tmp.resolve("r.json"))).assertError(ExitCode.USAGE, "can be read but not written");
        run("recv", "--listen", "0", "--out", s(tmp.resolve("r.what"))).assertError(ExitCode.USAGE, "pass --to");
        run("recv", "--listen", "70000", "--out", s(tmp.resolve("r.hrry"))).assertError(ExitCode.USAGE, "not in 0-65535");
    }

    @Test
    void recvOnAPortInUse() throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Path out = tmp.resolve("r.hrry");
            run("recv", "--listen", Integer.toString(taken.getLocalPort()), "--out", s(out))
                    .assertError(ExitCode.IO_ERROR, "cannot listen on 127.0.0.1:" + taken.getLocalPort());
            assertFalse(Files.exists(out));
        }
    }

    @Test
    void sendToAClosedPort() throws IOException {
        int port = closedPort();
        long t0 = System.nanoTime();
        Result r = run("send", "--connect-timeout", "1", "127.0.0.1:" + port, s(tinyHrry));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        r.assertError(ExitCode.IO_ERROR, "cannot connect to 127.0.0.1:" + port + ": connection refused (tried for 1 s)");
        assertEquals(1, r.err().lines().count(), "one line: " + r.err());
        assertTrue(ms >= 800, "refused connections are tried again until the timeout, not given up at once: " + ms + " ms");
        run("send", "--connect-timeout", "0", "127.0.0.1:" + port, s(tinyHrry))
                .assertError(ExitCode.IO_ERROR, "cannot connect to 127.0.0.1:" + port + ": connection refused");
        run("send", "127.0.0.1:" + port, s(tmp.resolve("absent.hrry"))).assertError(ExitCode.BAD_INPUT, "no such file");
    }

    /** A sender started before its receiver listens connects once the receiver is up (no sleep needed in scripts). */
    @Test
    void sendWaitsForAReceiverThatIsStillStarting() throws Exception {
        int port = closedPort();
        Path out = tmp.resolve("late.hrry");
        CompletableFuture<Result> sent = CompletableFuture.supplyAsync(
                () -> run("send", "--connect-timeout", "20", "127.0.0.1:" + port, s(tinyHrry)));
        // The receiver starting late is the behaviour under test, not a synchronisation: the sender
        // must still be trying after this while.
        Thread.sleep(700);
        assertFalse(sent.isDone(), "still trying: " + (sent.isDone() ? sent.join() : ""));
        Result got = run("recv", "--listen", Integer.toString(port), "--timeout", "20", "--out", s(out));
        got.assertOk();
        sent.get(30, TimeUnit.SECONDS).assertOk();
        assertEquals(-1, Files.mismatch(tinyHrry, out));
    }

    // ---- cat and inspect - on stdin ----------------------------------------------------------

    @Test
    void catSummarisesAStreamOnStdin() throws IOException {
        Path hrrys = tmp.resolve("tiny.hrrys");
        run("convert", s(tinyHrry), s(hrrys)).assertOk();
        byte[] stream = Files.readAllBytes(hrrys);
        Result r = runWithStdin(stream, "cat");
        r.assertOk();
        List<String> lines = r.out().lines().toList();
        assertEquals(20, lines.size(), r.out());
        assertTrue(lines.get(0).matches("conv0/filters  uint8\\[3,3,3,16]  row-major  affine\\(scale=0\\.009007044399485869,"
                + "bias=-1\\.2069439495311063\\)->float32  432 B"), lines.get(0));
        assertTrue(lines.get(19).startsWith("total: 19 tensors, 188.8 KiB (193321 bytes) in "), lines.get(19));
        Result json = runWithStdin(stream, "inspect", "--json", "-");
        json.assertOk();
        assertTrue(json.out().contains("\"format\" : \"stream\""), json.out());
        assertTrue(json.out().contains("\"tensor_count\" : 19"), json.out());
    }

    @Test
    void catShowsFileMetadataCarriedByTheStream() throws IOException {
        Path st = tmp.resolve("m.safetensors");
        Files.write(st, dev.hurray.formats.SafetensorsTestAccess.file(
                "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                new byte[] {1, 2}));
        Path hrrys = tmp.resolve("m.hrrys");
        run("convert", s(st), s(hrrys)).assertOk();
        Result r = runWithStdin(Files.readAllBytes(hrrys), "cat");
        r.assertOk();
        assertEquals("metadata format = pt", r.out().lines().findFirst().orElseThrow());
        assertTrue(r.out().contains("a  uint8[2]  row-major  -  2 B"), r.out());
    }

    @Test
    void catBadInput() throws IOException {
        runWithStdin(new byte[0], "cat").assertError(ExitCode.BAD_INPUT, "stdin: TRUNCATED");
        runWithStdin("not a stream at all".getBytes(), "cat").assertError(ExitCode.BAD_INPUT, "INVALID_MAGIC");
        Path hrrys = tmp.resolve("tiny.hrrys");
        run("convert", s(tinyHrry), s(hrrys)).assertOk();
        byte[] stream = Files.readAllBytes(hrrys);
        Result cut = runWithStdin(Arrays.copyOf(stream, stream.length - 100), "cat");
        cut.assertError(ExitCode.BAD_INPUT, "TRUNCATED");
        assertTrue(cut.out().startsWith("conv0/filters"), "tensors before the cut are listed: " + cut.out());
        runWithStdin(Files.readAllBytes(tinyHrry), "inspect", "-").assertError(ExitCode.BAD_INPUT, "INVALID_MAGIC");
    }
}
