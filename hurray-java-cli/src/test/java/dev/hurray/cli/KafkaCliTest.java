package dev.hurray.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hurray.FileEntry;
import dev.hurray.HurrayFile;
import dev.hurray.HurrayFileWriter;
import dev.hurray.Tensor;
import dev.hurray.formats.TestSupport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code hurray send/recv kafka://…} through a real in-process broker (one for the class). */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class KafkaCliTest {
    private static KafkaClusterTestKit cluster;
    private static String bootstrap;

    @TempDir
    Path tmp;

    @BeforeAll
    static void startBroker() throws Exception {
        TestKitNodes nodes = new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build();
        cluster = new KafkaClusterTestKit.Builder(nodes)
                .setConfigProp("offsets.topic.replication.factor", "1")
                .setConfigProp("transaction.state.log.replication.factor", "1")
                .setConfigProp("transaction.state.log.min.isr", "1")
                .build();
        cluster.format();
        cluster.startup();
        cluster.waitForReadyBrokers();
        bootstrap = cluster.bootstrapServers();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void sendAndRecvMoveEveryTensorThroughATopicWithTwoPartitions() throws Exception {
        try (Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("model", 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        Path in = tmp.resolve("in.hrry");
        float[] big = new float[400_000];   // 1.6 MB: through the claim-check
        for (int i = 0; i < big.length; i++) {
            big[i] = i / 3f;
        }
        try (HurrayFileWriter w = HurrayFile.create(in)) {
            w.metadata("format", "pt");
            for (int i = 0; i < 12; i++) {
                try (Tensor t = Tensor.of(new float[] {i, i + 0.5f, -i}, 3)) {
                    w.add("layer" + i + "/bias", t);
                }
            }
            try (Tensor t = Tensor.of(big, 400, 1000)) {
                w.add("embedding", t);
            }
            w.finish();
        }
        Path store = Files.createDirectory(tmp.resolve("store"));
        String topic = "kafka://" + bootstrap + "/model";
        CliTest.run("send", topic, in.toString(), "--claim-check-dir", store.toString()).assertOk();
        Path out = tmp.resolve("out.hrry");
        CliTest.Result r = CliTest.run("recv", topic, "--out", out.toString(), "--claim-check-dir", store.toString(),
                "--idle-timeout", "30");
        r.assertOk();
        assertTrue(r.out().contains("received 13 tensors"), r.out());
        try (HurrayFile a = HurrayFile.open(in); HurrayFile b = HurrayFile.open(out)) {
            assertEquals(a.count(), b.count());
            assertEquals("pt", b.metadataString("format").orElseThrow());
            for (FileEntry e : a) {
                try (Tensor x = a.read(e); Tensor y = b.read(e.name())) {
                    assertEquals(x.descriptor().shape(), y.descriptor().shape());
                    assertArrayEquals(x.toFloatArray(), y.toFloatArray(), e.name());
                }
            }
        }
        // Without the store, the receiver cannot resolve the reference: a clear error, no output.
        Path out2 = tmp.resolve("out2.hrry");
        CliTest.run("recv", topic, "--out", out2.toString(), "--idle-timeout", "30")
                .assertError(ExitCode.BAD_INPUT, "claim-check");
        assertFalse(Files.exists(out2));
    }

    /** A composite cannot keep its order over Kafka's partitions: send refuses it, nothing is half sent as a success. */
    @Test
    void aCompositeIsRefusedBySend() throws Exception {
        Path in = tmp.resolve("composite.hrry");
        try (Tensor t = Tensor.of(new float[] {1, 2}, 2); HurrayFileWriter w = HurrayFile.create(in)) {
            w.add(dev.hurray.Composite.builder("layer").add("w", t).add("b", t));
            w.finish();
        }
        CliTest.run("send", "kafka://" + bootstrap + "/composites", in.toString()).assertError(ExitCode.BAD_INPUT, "composite");
    }

    @Test
    void badKafkaTargetsAreUsageErrors() {
        CliTest.run("send", "kafka://localhost:9092", "x.hrry").assertError(ExitCode.USAGE, "kafka://HOST:PORT/TOPIC");
        CliTest.run("recv", "kafka://localhost:9092/bad topic", "--out", tmp.resolve("o.hrry").toString())
                .assertError(ExitCode.USAGE, "topic");
        CliTest.run("recv", "--out", tmp.resolve("o.hrry").toString()).assertError(ExitCode.USAGE, "--listen");
        // A claim-check folder that does not exist: a usage error naming it, before any broker is asked.
        String missing = tmp.resolve("no-such-dir").toString();
        CliTest.run("recv", "kafka://127.0.0.1:9/t", "--out", tmp.resolve("o.hrry").toString(), "--claim-check-dir",
                missing).assertError(ExitCode.USAGE, "--claim-check-dir " + missing + " is not a directory");
    }

    /** A broker host that does not resolve is an I/O error naming it (exit 3), like an unknown TCP host, not a crash. */
    @Test
    void anUnresolvableBrokerIsAnIoError() throws IOException {
        Path model = tmp.resolve("one.hrry");
        CliTest.run("convert", TestSupport.resourceDir("npy").resolve("float32_c.npy").toString(), model.toString())
                .assertOk();
        String target = "kafka://no-such-broker.invalid:9092/models";
        CliTest.run("send", "--connect-timeout", "2", target, model.toString()).assertError(ExitCode.IO_ERROR,
                "cannot reach " + target + ": the broker address no-such-broker.invalid:9092 does not resolve");
        CliTest.run("recv", target, "--out", tmp.resolve("o.hrry").toString()).assertError(ExitCode.IO_ERROR,
                "the broker address no-such-broker.invalid:9092 does not resolve");
    }
}
