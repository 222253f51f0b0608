package dev.hurray.formats;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;

/**
 * A temporary file that holds tensor payloads until a foreign writer lays them out. The foreign
 * formats are written whole (safetensors, GGUF and npz put a header or directory that names
 * every tensor before or after all payloads), while a stream hands over one tensor at a time
 * and cannot be read twice: {@link #add} writes a tensor's payload to the spool at once and
 * returns a {@link ForeignTensor} that reads it back on use, so a model gathered this way and
 * then written with {@link ForeignFormats#write} holds one tensor's payload in memory at a time
 * (the writers read each payload for its own write only), not the whole model.
 *
 * <p>The file is created next to a path the caller names (the output, so that it lands on the
 * same file system), as {@code .NAME.spool.RANDOM.tmp} through {@link dev.hurray.AtomicOutput}
 * and never committed: {@link #close()} deletes it, and so does the process-wide shutdown hook
 * when the JVM is ended by a signal (only SIGKILL or a JVM crash leaves it behind). It needs as
 * much free space as the payloads spooled. The tensors it returned must not be used after
 * {@link #close()}. One thread at a time.
 */
public final class PayloadSpool implements AutoCloseable {
    private final dev.hurray.AtomicOutput out;
    private final FileChannel ch;
    private final FileChannel in;
    private long end;
    private boolean closed;

    private PayloadSpool(dev.hurray.AtomicOutput out, FileChannel in) {
        this.out = out;
        this.ch = out.channel();
        this.in = in;
    }

    /**
     * Creates an empty spool next to {@code beside} (in its directory, named after it).
     *
     * @throws IOException if the file cannot be created
     */
    public static PayloadSpool create(Path beside) throws IOException {
        Path abs = Objects.requireNonNull(beside, "beside").toAbsolutePath();
        dev.hurray.AtomicOutput out = dev.hurray.AtomicOutput.create(abs.resolveSibling(abs.getFileName() + ".spool"));
        try {
            return new PayloadSpool(out, FileChannel.open(out.temporaryFile(), StandardOpenOption.READ));
        } catch (IOException | RuntimeException e) {
            out.close();
            throw e;
        }
    }

    /**
     * Writes {@code t}'s payload (buffer 0, then its scale buffers) to the spool and returns the
     * same tensor (name, type, shape, layout, quantization) whose payload is read back from the
     * spool when it is used; {@code t}'s memory is not needed afterwards.
     *
     * @throws IOException if writing fails (the disk is full, …)
     */
    public ForeignTensor add(ForeignTensor t) throws IOException {
        if (closed) {
            throw new IllegalStateException("the spool is closed");
        }
        long at = end;
        long[] sizes = t.scaleBufferSizes();
        t.withPayload((data, scales) -> {
            write(data);
            for (MemorySegment s : scales) {
                write(s);
            }
        });
        long total = end;
        String what = "spool " + out.temporaryFile().getFileName() + " of tensor '" + dev.hurray.TensorNames.forMessage(t.name()) + "'";
        return ForeignTensor.lazy(t.name(), t.dtype(), t.shape(), t.layout(), t.quantization().orElse(null), sizes, -1,
                bufs -> {
                    long pos = at;
                    for (MemorySegment b : bufs) {
                        Payloads.readAt(in, pos, b, what, total);
                        pos += b.byteSize();
                    }
                });
    }

    private void write(MemorySegment s) throws IOException {
        long size = s.byteSize();
        long pos = 0;
        while (pos < size) {
            java.nio.ByteBuffer bb = s.asSlice(pos, Math.min(Payloads.CHUNK, size - pos)).asByteBuffer();
            while (bb.hasRemaining()) {
                pos += ch.write(bb, end + pos);
            }
        }
        end += size;
    }

    /** Payload bytes spooled so far. */
    public long bytes() {
        return end;
    }

    /** The spool's file (deleted when closed). */
    public Path file() {
        return out.temporaryFile();
    }

    /** Closes and deletes the spool's file. Idempotent. */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            in.close();
        } finally {
            out.close();
        }
    }
}
