package dev.hurray.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.hurray.ElementType;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import dev.hurray.Writer;
import dev.hurray.WriterOptions;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;

/** The serializer's per-thread long-lived writer gives exactly the bytes of a fresh writer per record. */
class HurrayTensorSerializerTest {
    private static Tensor tensor(Random r, int i) throws Exception {
        ElementType[] types = {ElementType.FLOAT32, ElementType.INT8, ElementType.FLOAT64, ElementType.UINT16};
        ElementType type = types[r.nextInt(types.length)];
        int rank = r.nextInt(4);
        long[] dims = new long[rank];
        for (int k = 0; k < rank; k++) {
            dims[k] = r.nextInt(5);
        }
        TensorDescriptor.Builder b = TensorDescriptor.builder(type, dims);
        if (r.nextBoolean()) {
            b.name("t" + i);
        }
        if (r.nextInt(4) == 0) {
            b.metadata("k", "v" + i);
        }
        TensorDescriptor d = b.build();
        byte[] payload = new byte[(int) d.totalBufferBytes()];
        r.nextBytes(payload);
        return Tensor.copyOf(d, MemorySegment.ofArray(payload));
    }

    /** One tensor as a stream written by a new writer: what each record must be. */
    private static byte[] freshWriter(Tensor tensor, WriterOptions options) throws Exception {
        try (Writer w = Writer.toMemory(options)) {
            w.write(tensor);
            w.finish();
            return w.toByteArray();
        }
    }

    @Test
    void recordsEqualAFreshWriterPerRecordOnEveryThread() throws Exception {
        for (boolean crc : new boolean[] {false, true}) {
            HurrayTensorSerializer ser = new HurrayTensorSerializer(Map.of(HurrayKafkaConfig.PAYLOAD_CHECKSUMS, crc));
            WriterOptions opts = WriterOptions.defaults().withPayloadChecksums(crc);
            ExecutorService pool = Executors.newFixedThreadPool(3);
            try {
                List<Future<?>> fs = new ArrayList<>();
                for (int th = 0; th < 3; th++) {
                    long seed = th;
                    fs.add(pool.submit(() -> {
                        Random r = new Random(seed);
                        for (int i = 0; i < 200; i++) {
                            try (Tensor t = tensor(r, i)) {
                                assertArrayEquals(freshWriter(t, opts), ser.serialize("t", t), "record " + i);
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : fs) {
                    f.get();
                }
            } finally {
                pool.shutdown();
                ser.close();
            }
        }
    }

    @Test
    void aClosedTensorIsASerializationExceptionAndTheSerializerLivesOn() throws Exception {
        try (HurrayTensorSerializer ser = new HurrayTensorSerializer(Map.of())) {
            Tensor closed = Tensor.of(new float[] {1}, 1);
            closed.close();
            SerializationException e = assertThrows(SerializationException.class, () -> ser.serialize("t", closed));
            assertInstanceOf(IllegalStateException.class, e.getCause());
            try (Tensor mine = Tensor.of(new float[] {1, 2}, 2)) {
                assertArrayEquals(freshWriter(mine, WriterOptions.defaults().withPayloadChecksums(false)),
                        ser.serialize("t", mine));
            }
        }
    }
}
