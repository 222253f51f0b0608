package dev.hurray.ffm;

import static dev.hurray.ffm.hurray_h.C_LONG;
import static dev.hurray.ffm.hurray_h.C_POINTER;
import static dev.hurray.ffm.hurray_h.HURRAY_DTYPE_FLOAT32;
import static dev.hurray.ffm.hurray_h.HURRAY_END_OF_STREAM;
import static dev.hurray.ffm.hurray_h.HURRAY_ERR_TRANSPORT;
import static dev.hurray.ffm.hurray_h.HURRAY_MIN_BUFFER_ALIGNMENT;
import static dev.hurray.ffm.hurray_h.HURRAY_OK;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * A tensor written and read back through the raw bindings only: a {@link HurrayTransport}
 * whose read and write callbacks are Java upcalls over a native memory region.
 */
class RawBindingsRoundTripTest {

    /** The "wire": a native region the writer appends to and the reader consumes. */
    private static final class Wire {
        final MemorySegment bytes;
        long written;
        long read;
        int releases;

        Wire(Arena arena, long capacity) {
            bytes = arena.allocate(capacity);
        }

        int write(MemorySegment ctx, MemorySegment src, long len, MemorySegment outWritten) {
            long n = Math.min(len, bytes.byteSize() - written);
            MemorySegment.copy(src.reinterpret(len), 0, bytes, written, n);
            written += n;
            outWritten.reinterpret(C_LONG.byteSize()).set(C_LONG, 0, n);
            return HURRAY_OK();
        }

        /** Moves at most 7 bytes per call so the reader has to resume many times. */
        int read(MemorySegment ctx, MemorySegment dst, long len, MemorySegment outFilled) {
            long n = Math.min(Math.min(len, 7), written - read);
            MemorySegment.copy(bytes, read, dst.reinterpret(len), 0, n);
            read += n;
            outFilled.reinterpret(C_LONG.byteSize()).set(C_LONG, 0, n);
            return HURRAY_OK();
        }
    }

    @Test
    void tensorRoundTripsThroughUpcallTransport() {
        try (Arena arena = Arena.ofConfined()) {
            Wire wire = new Wire(arena, 1 << 16);
            MemorySegment out = arena.allocate(C_POINTER);

            // writer over a transport whose write is a Java upcall
            MemorySegment wt = HurrayTransport.allocate(arena);
            HurrayTransport.write(wt, HurrayTransportWriteFn.allocate(wire::write, arena));
            HurrayTransport.release(wt, HurrayTransportReleaseFn.allocate(ctx -> wire.releases++, arena));
            MemorySegment wopts = HurrayWriterOptions.allocate(arena);
            assertEquals(HURRAY_OK(), hurray_h.hurray_writer_options_init(wopts));
            assertEquals(HurrayWriterOptions.sizeof(), HurrayWriterOptions.struct_size(wopts));
            assertEquals(HURRAY_OK(), hurray_h.hurray_writer_new(wt, wopts, out));
            MemorySegment writer = out.get(C_POINTER, 0);

            // float32[2,3] named "w", built with the descriptor builder
            MemorySegment dims = arena.allocateFrom(ValueLayout.JAVA_LONG, 2, 3);
            assertEquals(HURRAY_OK(), hurray_h.hurray_descriptor_builder_new((byte) HURRAY_DTYPE_FLOAT32(), dims, 2, out));
            MemorySegment builder = out.get(C_POINTER, 0);
            MemorySegment name = arena.allocateFrom("w", StandardCharsets.UTF_8);
            assertEquals(HURRAY_OK(), hurray_h.hurray_descriptor_builder_set_name(builder, name, 1));
            assertEquals(HURRAY_OK(), hurray_h.hurray_descriptor_builder_build(builder, out));
            MemorySegment descriptor = out.get(C_POINTER, 0);
            MemorySegment builderRef = arena.allocateFrom(C_POINTER, builder);
            assertEquals(HURRAY_OK(), hurray_h.hurray_descriptor_builder_destroy(builderRef));
            assertEquals(MemorySegment.NULL, builderRef.get(C_POINTER, 0));

            float[] values = {1.5f, -2f, 3.25f, 0f, Float.MAX_VALUE, Float.MIN_VALUE};
            MemorySegment payload = arena.allocateFrom(ValueLayout.JAVA_FLOAT, values);
            MemorySegment slices = HurrayIoSlice.allocateArray(1, arena);
            HurrayIoSlice.ptr(slices, payload);
            HurrayIoSlice.len(slices, payload.byteSize());
            assertEquals(HURRAY_OK(), hurray_h.hurray_writer_write_tensor(writer, descriptor, slices, 1));
            assertEquals(HURRAY_OK(), hurray_h.hurray_writer_finish(writer));
            assertEquals(HURRAY_OK(), hurray_h.hurray_descriptor_destroy(descriptor));
            MemorySegment writerRef = arena.allocateFrom(C_POINTER, writer);
            assertEquals(HURRAY_OK(), hurray_h.hurray_writer_destroy(writerRef));
            assertEquals(1, wire.releases, "release called once at destroy");
            assertTrue(wire.written > payload.byteSize(), "framing plus payload written: " + wire.written);

            // reader over a transport whose read is a Java upcall
            MemorySegment rt = HurrayTransport.allocate(arena);
            HurrayTransport.read(rt, HurrayTransportReadFn.allocate(wire::read, arena));
            MemorySegment ropts = HurrayReaderOptions.allocate(arena);
            assertEquals(HURRAY_OK(), hurray_h.hurray_reader_options_init(ropts));
            assertEquals(HURRAY_OK(), hurray_h.hurray_reader_new(rt, ropts, out));
            MemorySegment reader = out.get(C_POINTER, 0);
            assertEquals(HURRAY_OK(), hurray_h.hurray_reader_next_tensor(reader, out));
            MemorySegment tensor = out.get(C_POINTER, 0);

            assertEquals(HURRAY_OK(), hurray_h.hurray_tensor_descriptor(tensor, out));
            MemorySegment rdesc = out.get(C_POINTER, 0);
            MemorySegment len = arena.allocate(C_LONG);
            assertEquals(HURRAY_OK(), hurray_h.hurray_descriptor_name(rdesc, out, len));
            assertEquals("w", out.get(C_POINTER, 0).reinterpret(len.get(C_LONG, 0) + 1).getString(0, StandardCharsets.UTF_8));
            MemorySegment u8 = arena.allocate(ValueLayout.JAVA_BYTE);
            assertEquals(HURRAY_OK(), hurray_h.hurray_descriptor_element_type(rdesc, u8));
            assertEquals(HURRAY_DTYPE_FLOAT32(), u8.get(ValueLayout.JAVA_BYTE, 0));

            assertEquals(HURRAY_OK(), hurray_h.hurray_tensor_buffers(tensor, out));
            MemorySegment list = out.get(C_POINTER, 0);
            assertEquals(HURRAY_OK(), hurray_h.hurray_buffer_list_len(list, len));
            assertEquals(1, len.get(C_LONG, 0));
            assertEquals(HURRAY_OK(), hurray_h.hurray_buffer_list_get(list, 0, out));
            MemorySegment buffer = out.get(C_POINTER, 0);
            MemorySegment u64 = arena.allocate(ValueLayout.JAVA_LONG);
            assertEquals(HURRAY_OK(), hurray_h.hurray_buffer_byte_size(buffer, u64));
            assertEquals(payload.byteSize(), u64.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(HURRAY_OK(), hurray_h.hurray_buffer_data_ptr(buffer, out));
            MemorySegment data = out.get(C_POINTER, 0).reinterpret(payload.byteSize());
            assertEquals(0, data.address() % HURRAY_MIN_BUFFER_ALIGNMENT(), "64-byte aligned payload");
            assertArrayEquals(values, data.toArray(ValueLayout.JAVA_FLOAT));

            MemorySegment tensorRef = arena.allocateFrom(C_POINTER, tensor);
            assertEquals(HURRAY_OK(), hurray_h.hurray_tensor_destroy(tensorRef));
            assertEquals(HURRAY_END_OF_STREAM(), hurray_h.hurray_reader_next_tensor(reader, out));
            assertEquals(MemorySegment.NULL, out.get(C_POINTER, 0));
            MemorySegment readerRef = arena.allocateFrom(C_POINTER, reader);
            assertEquals(HURRAY_OK(), hurray_h.hurray_reader_destroy(readerRef));
            assertEquals(wire.written, wire.read, "the reader consumed the whole stream");
        }
    }

    @Test
    void throwingUpcallIsContainedAndReportedAsTransportError() {
        Thread.UncaughtExceptionHandler saved = Thread.currentThread().getUncaughtExceptionHandler();
        Throwable[] reported = new Throwable[1];
        Thread.currentThread().setUncaughtExceptionHandler((t, e) -> reported[0] = e);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(C_POINTER);
            MemorySegment rt = HurrayTransport.allocate(arena);
            HurrayTransport.read(rt, HurrayTransportReadFn.allocate((ctx, dst, len, filled) -> {
                throw new IllegalStateException("boom");
            }, arena));
            assertEquals(HURRAY_OK(), hurray_h.hurray_reader_new(rt, MemorySegment.NULL, out));
            MemorySegment reader = out.get(C_POINTER, 0);
            assertEquals(HURRAY_ERR_TRANSPORT(), hurray_h.hurray_reader_next_tensor(reader, out));
            assertEquals("boom", reported[0].getMessage());
            assertEquals(HURRAY_OK(), hurray_h.hurray_reader_destroy(arena.allocateFrom(C_POINTER, reader)));
        } finally {
            Thread.currentThread().setUncaughtExceptionHandler(saved);
        }
    }

    @Test
    void lastErrorAndStatusNameAreReadable() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nameZ = hurray_h.hurray_status_name(hurray_h.HURRAY_ERR_TRUNCATED());
            assertEquals("HURRAY_ERR_TRUNCATED", nameZ.reinterpret(64).getString(0));
            MemorySegment dims = arena.allocateFrom(ValueLayout.JAVA_LONG, 1);
            int st = hurray_h.hurray_descriptor_builder_new((byte) 200, dims, 1, arena.allocate(C_POINTER));
            assertEquals(hurray_h.HURRAY_ERR_INVALID_TYPE(), st);
            MemorySegment buf = arena.allocate(256);
            MemorySegment len = arena.allocate(C_LONG);
            assertEquals(HURRAY_OK(), hurray_h.hurray_last_error_message(buf, buf.byteSize(), len));
            assertTrue(len.get(C_LONG, 0) > 0);
            assertTrue(!buf.getString(0).isEmpty());
        }
    }

    @Test
    void closedArenaArgumentThrowsInsteadOfCrashing() {
        Arena arena = Arena.ofConfined();
        MemorySegment opts = HurrayReaderOptions.allocate(arena);
        arena.close();
        try {
            hurray_h.hurray_reader_options_init(opts);
            throw new AssertionError("expected IllegalStateException");
        } catch (IllegalStateException expected) {
            assertTrue(expected.getMessage().contains("closed"), expected.getMessage());
        }
    }
}
