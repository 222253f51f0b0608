package dev.hurray;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ONNX Runtime on tensors streamed through Hurray, without copying the input, and the aliasing
 * hazard: a tensor handed to ORT is closed and the reader's buffer pool reuses its memory for the
 * next tensor. With a {@link TensorShare} the close is refused, so the reuse cannot
 * happen.
 */
class OrtInteropTest {
    private static final long[] SHAPE = {2, 3};
    private static OrtEnvironment env;
    private static OrtSession session;

    @BeforeAll
    static void setUp() throws Exception {
        env = OrtEnvironment.getEnvironment();
        session = env.createSession(squareModel());
    }

    @AfterAll
    static void tearDown() throws Exception {
        session.close();
    }

    @Test
    void streamsRunsAndWritesBackWithoutCopyingTheInput() throws Exception {
        float[] x = {1, -2, 3, 0.5f, -1.5f, 4};
        byte[] stream;
        try (Tensor t = Tensor.of(x, SHAPE); Writer w = Writer.toMemory()) {
            w.write(t);
            w.finish();
            stream = w.toByteArray();
        }
        ByteArrayOutputStream results = new ByteArrayOutputStream();
        try (Reader r = Reader.of(new ByteArrayInputStream(stream)); Writer out = Writer.of(results)) {
            try (Tensor in = r.read(); TensorShare share = in.share();
                    OnnxTensor ortIn = OnnxTensor.createTensor(env, share.asFloatBuffer(), in.descriptor().shape().dims())) {
                assertFalse(ortIn.ownsBuffer(), "ORT must use the Hurray buffer, not a copy");
                try (OrtSession.Result res = session.run(Map.of("X", ortIn))) {
                    OnnxTensor y = (OnnxTensor) res.get(0);
                    float[] values = new float[6];
                    y.getFloatBuffer().get(values);
                    try (Tensor result = Tensor.of(values, y.getInfo().getShape())) {
                        out.write(result);
                    }
                }
            }
            out.finish();
        }
        try (Reader back = Reader.of(new ByteArrayInputStream(results.toByteArray())); Tensor y = back.read()) {
            assertArrayEquals(SHAPE, y.descriptor().shape().dims());
            float[] want = new float[x.length];
            for (int i = 0; i < x.length; i++) {
                want[i] = x[i] * x[i];
            }
            assertArrayEquals(want, y.toFloatArray());
        }
    }

    @Test
    void theAliasingScenarioIsDetected() throws Exception {
        float[] first = {1, 2, 3, 4, 5, 6};
        float[] second = {10, 20, 30, 40, 50, 60};
        byte[] stream;
        try (Writer w = Writer.toMemory(); Tensor a = Tensor.of(first, SHAPE); Tensor b = Tensor.of(second, SHAPE)) {
            w.write(a);
            w.write(b);
            w.finish();
            stream = w.toByteArray();
        }
        try (Reader r = Reader.of(new ByteArrayInputStream(stream))) {
            Tensor t1 = r.read();
            TensorShare share = t1.share();
            OnnxTensor ortIn = OnnxTensor.createTensor(env, share.asFloatBuffer(), SHAPE);
            // 2. the user closes #1 while ORT still holds its memory: refused, nothing is freed
            IllegalStateException e = assertThrows(IllegalStateException.class, t1::close);
            assertTrue(e.getMessage().contains("shared"), e.getMessage());
            assertTrue(t1.isOpen());
            // 3. the next tensor cannot land in #1's memory
            try (Tensor t2 = r.read()) {
                assertNotEquals(t1.buffer(0).address(), t2.buffer(0).address());
                assertArrayEquals(second, t2.toFloatArray());
                // 4. ORT computes on #1's data
                try (OrtSession.Result res = session.run(Map.of("X", ortIn))) {
                    FloatBuffer y = ((OnnxTensor) res.get(0)).getFloatBuffer();
                    for (int i = 0; i < first.length; i++) {
                        assertEquals(first[i] * first[i], y.get(i));
                    }
                }
            }
            ortIn.close();
            share.close();
            t1.close();
            assertFalse(t1.isOpen());
        }
    }

    /**
     * A real ONNX model, {@code Y = Mul(X, X)} over float32[2,3], encoded here byte for byte
     * (ModelProto: ir_version 8, opset 13; the onnx.proto field numbers).
     */
    static byte[] squareModel() {
        byte[] dims = cat(field(1, cat(varint(1, 2))), field(1, cat(varint(1, 3))));  // TensorShapeProto.dim
        byte[] tensorType = cat(varint(1, 1), field(2, dims));                       // elem_type FLOAT, shape
        byte[] type = field(1, tensorType);                                           // TypeProto.tensor_type
        byte[] x = cat(str(1, "X"), field(2, type));                                  // ValueInfoProto
        byte[] y = cat(str(1, "Y"), field(2, type));
        byte[] node = cat(str(1, "X"), str(1, "X"), str(2, "Y"), str(3, "square"), str(4, "Mul"));
        byte[] graph = cat(field(1, node), str(2, "square"), field(11, x), field(12, y));
        byte[] opset = cat(str(1, ""), varint(2, 13));
        return cat(varint(1, 8), str(2, "hurray-test"), field(7, graph), field(8, opset));
    }

    private static byte[] varint(int field, long value) {
        return cat(rawVarint((long) field << 3), rawVarint(value));
    }

    private static byte[] str(int field, String s) {
        return field(field, s.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] field(int field, byte[] body) {
        return cat(rawVarint((long) field << 3 | 2), rawVarint(body.length), body);
    }

    private static byte[] rawVarint(long v) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        while ((v & ~0x7FL) != 0) {
            o.write((int) (v & 0x7F) | 0x80);
            v >>>= 7;
        }
        o.write((int) v);
        return o.toByteArray();
    }

    private static byte[] cat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            o.writeBytes(p);
        }
        return o.toByteArray();
    }
}
