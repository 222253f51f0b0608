package dev.hurray;

import static dev.hurray.TestSupport.assertSameTensor;
import static dev.hurray.TestSupport.everyTypeAndRank;
import static dev.hurray.TestSupport.filled;
import static dev.hurray.TestSupport.oneByteAtATime;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.nio.channels.Pipe;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Round trips of every element type, ranks 0–8 and zero-size dimensions through each transport. */
class RoundTripTest {
    private List<Tensor> tensors;

    @BeforeEach
    void makeTensors() {
        tensors = new ArrayList<>();
        long seed = 1;
        for (TensorDescriptor d : everyTypeAndRank()) {
            tensors.add(filled(d, seed++));
        }
    }

    @AfterEach
    void closeTensors() {
        tensors.forEach(Tensor::close);
    }

    private void readAllAndCompare(Reader reader) throws IOException {
        int i = 0;
        for (Tensor t : reader) {
            try (t) {
                assertSameTensor(tensors.get(i++), t);
            }
        }
        assertEquals(tensors.size(), i);
        assertTrue(reader.isEndOfStream());
        assertNull(reader.read());
    }

    @Test
    void everyTypeAndRankThroughMemory() throws IOException {
        // 26 element types x (ranks 0-8 + 3 shapes with a zero dimension)
        assertEquals(26 * 12, tensors.size());
        byte[] wire = TestSupport.stream(tensors, WriterOptions.defaults());
        try (Reader r = Reader.of(wire)) {
            readAllAndCompare(r);
        }
        try (Arena a = Arena.ofConfined(); Reader r = Reader.of(a.allocateFrom(java.lang.foreign.ValueLayout.JAVA_BYTE, wire))) {
            readAllAndCompare(r);
        }
    }

    @Test
    void payloadChecksumsRoundTrip() throws IOException {
        byte[] wire = TestSupport.stream(tensors, WriterOptions.defaults().withPayloadChecksums(true));
        try (Reader r = Reader.of(wire, ReaderOptions.defaults().withRequirePayloadChecksums(true))) {
            readAllAndCompare(r);
        }
    }

    @Test
    void nioPipeWithProducerAndConsumerThreads() throws Exception {
        Pipe pipe = Pipe.open();
        ExecutorService producer = Executors.newSingleThreadExecutor();
        try {
            // The producer makes its own copies: tensors are confined to the thread that made them.
            List<TensorDescriptor> descriptors = tensors.stream().map(Tensor::descriptor).toList();
            Future<Integer> written = producer.submit(() -> {
                int n = 0;
                try (Writer w = Writer.of(pipe.sink())) {
                    long seed = 1;
                    for (TensorDescriptor d : descriptors) {
                        try (Tensor t = filled(d, seed++)) {
                            w.write(t);
                            n++;
                        }
                    }
                }
                return n;
            });
            try (Reader r = Reader.of(pipe.source())) {
                readAllAndCompare(r);
            }
            assertEquals(tensors.size(), written.get(30, TimeUnit.SECONDS));
        } finally {
            producer.shutdownNow();
        }
    }

    @Test
    void streamsMovingOneBytePerCall() throws IOException {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        try (Writer w = Writer.of(oneByteAtATime(sink))) {
            for (Tensor t : tensors) {
                w.write(t);
            }
        }
        byte[] wire = sink.toByteArray();
        assertArrayEquals(TestSupport.stream(tensors, WriterOptions.defaults()), wire);
        try (Reader r = Reader.of(oneByteAtATime(new ByteArrayInputStream(wire)))) {
            readAllAndCompare(r);
        }
    }

    @Test
    void channelsMovingOneBytePerCall() throws IOException {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        try (Writer w = Writer.of(oneByteAtATime(Channels.newChannel(sink)))) {
            for (Tensor t : tensors) {
                w.write(t);
            }
        }
        byte[] wire = sink.toByteArray();
        try (Reader r = Reader.of(oneByteAtATime(Channels.newChannel(new ByteArrayInputStream(wire))))) {
            readAllAndCompare(r);
        }
    }

    @Test
    void typedArraysRoundTrip() throws IOException {
        float[] f = {1.5f, -2f, Float.NaN, Float.MAX_VALUE, 0f, -0f};
        double[] d = {Math.PI, -Math.E, Double.MIN_VALUE};
        int[] i = {Integer.MIN_VALUE, -1, 0, 1, Integer.MAX_VALUE, 7};
        long[] l = {Long.MIN_VALUE, Long.MAX_VALUE};
        short[] s = {Short.MIN_VALUE, 0, Short.MAX_VALUE, 5};
        byte[] b = {-128, 0, 127};
        byte[] wire;
        try (Writer w = Writer.toMemory();
                Tensor tf = Tensor.of(f, 2, 3);
                Tensor td = Tensor.of(d);
                Tensor ti = Tensor.of(i, 3, 2);
                Tensor tl = Tensor.of(l, 1, 2);
                Tensor ts = Tensor.of(s, 2, 2);
                Tensor tb = Tensor.of(b);
                Tensor tu = Tensor.of(ElementType.UINT32, new int[] {-1}, 1);
                Tensor th = Tensor.of(ElementType.BFLOAT16, new short[] {0x3f80})) {
            for (Tensor t : List.of(tf, td, ti, tl, ts, tb, tu, th)) {
                w.write(t);
            }
            w.finish();
            wire = w.toByteArray();
        }
        try (Reader r = Reader.of(wire)) {
            try (Tensor t = r.read()) {
                assertEquals("float32[2,3] row-major", t.descriptor().toString());
                assertArrayEquals(f, t.toFloatArray());
            }
            try (Tensor t = r.read()) {
                assertEquals(Shape.of(3), t.descriptor().shape());
                assertArrayEquals(d, t.toDoubleArray());
            }
            try (Tensor t = r.read()) {
                assertArrayEquals(i, t.toIntArray());
            }
            try (Tensor t = r.read()) {
                assertArrayEquals(l, t.toLongArray());
            }
            try (Tensor t = r.read()) {
                assertArrayEquals(s, t.toShortArray());
            }
            try (Tensor t = r.read()) {
                assertEquals(ElementType.INT8, t.descriptor().elementType());
                assertArrayEquals(b, t.toByteArray());
            }
            try (Tensor t = r.read()) {
                assertEquals(ElementType.UINT32, t.descriptor().elementType());
                assertArrayEquals(new int[] {-1}, t.toIntArray());
            }
            try (Tensor t = r.read()) {
                assertEquals(ElementType.BFLOAT16, t.descriptor().elementType());
                assertArrayEquals(new short[] {0x3f80}, t.toShortArray());
            }
            assertNull(r.read());
        }
    }

    @Test
    void descriptorFeaturesRoundTrip() throws IOException {
        List<TensorDescriptor> ds = List.of(
                TensorDescriptor.builder(ElementType.FLOAT32, 2, 3).layout(Layout.columnMajor()).name("w")
                        .metadata("unit", "m/s").metadata("raw", new byte[] {0, 1, 2, (byte) 255}).build(),
                TensorDescriptor.builder(ElementType.INT16, 3, 4).layout(Layout.strided(1, 3))
                        .buffer(BufferSpec.cpu(24)).build(),
                TensorDescriptor.builder(ElementType.FLOAT64, 2, 2).layout(Layout.strided(-2, -1)).byteOffset(24)
                        .buffer(BufferSpec.cpu(32)).build(),
                TensorDescriptor.builder(ElementType.UINT8, 5).byteOffset(3).buffer(BufferSpec.cpu(8)).build(),
                TensorDescriptor.builder(ElementType.UINT8, 4)
                        .quantization(new Quantization.PerTensorAffine(0.5, -3.25, ElementType.FLOAT32)).build(),
                TensorDescriptor.builder(ElementType.INT8, 3, 2)
                        .quantization(new Quantization.PerChannelAffine(0, ElementType.FLOAT32))
                        .buffer(BufferSpec.cpu(6)).buffer(BufferSpec.cpu(12)).buffer(BufferSpec.cpu(12)).build(),
                TensorDescriptor.builder(ElementType.FLOAT16, 8).quantization(new Quantization.Cast(ElementType.FLOAT32)).build(),
                TensorDescriptor.builder(ElementType.INT4, 5).build(),
                TensorDescriptor.builder(ElementType.FLOAT32, 16)
                        .buffer(new BufferSpec(64, 4096, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED)).build());
        List<Tensor> ts = new ArrayList<>();
        try {
            long seed = 100;
            for (TensorDescriptor d : ds) {
                ts.add(filled(d, seed++));
            }
            byte[] wire = TestSupport.stream(ts, WriterOptions.defaults().withPayloadChecksums(true));
            try (Reader r = Reader.of(new ByteArrayInputStream(wire))) {
                for (Tensor expected : ts) {
                    try (Tensor t = r.read()) {
                        assertSameTensor(expected, t);
                    }
                }
                assertNull(r.read());
            }
        } finally {
            ts.forEach(Tensor::close);
        }
        assertEquals(3, ds.get(5).buffers().size());
        assertEquals("m/s", ds.get(0).metadataString("unit").orElseThrow());
    }

    @Test
    void writeFromDescriptorAndPayloads() throws IOException {
        TensorDescriptor d = TensorDescriptor.of(ElementType.UINT16, 2, 2);
        byte[] heap = {1, 0, 2, 0, 3, 0, 4, 0};
        byte[] wire;
        try (Writer w = Writer.toMemory(); Arena a = Arena.ofConfined()) {
            w.write(d, MemorySegment.ofArray(heap));
            w.write(d, a.allocateFrom(java.lang.foreign.ValueLayout.JAVA_BYTE, heap));
            wire = w.toByteArray();
        }
        try (Reader r = Reader.of(wire)) {
            for (int k = 0; k < 2; k++) {
                try (Tensor t = r.read()) {
                    assertEquals(d, t.descriptor());
                    assertArrayEquals(new short[] {1, 2, 3, 4}, t.toShortArray());
                }
            }
        }
    }

    @Test
    void relayOfReadTensors() throws IOException {
        byte[] wire = TestSupport.stream(tensors, WriterOptions.defaults());
        byte[] relayed;
        try (Reader r = Reader.of(wire); Writer w = Writer.toMemory()) {
            for (Tensor t : r) {
                try (t) {
                    w.write(t);
                }
            }
            w.finish();
            relayed = w.toByteArray();
        }
        assertArrayEquals(wire, relayed);
    }

    @Test
    void streamView() throws IOException {
        byte[] wire = TestSupport.stream(tensors, WriterOptions.defaults());
        try (Reader r = Reader.of(wire)) {
            long elements = r.stream().mapToLong(t -> {
                try (t) {
                    return t.descriptor().elementCount();
                }
            }).sum();
            assertEquals(tensors.stream().mapToLong(t -> t.descriptor().elementCount()).sum(), elements);
        }
    }
}
