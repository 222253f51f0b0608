package dev.hurray;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * One tensor of an HRRYFILE container as its index describes it, without its payload bytes:
 * its position in the name-sorted index, its name, its {@link TensorDescriptor} and where each
 * of its payloads lies in the file (docs/spec/hrryfile.md §1.3–1.4).
 *
 * <p>Obtained from {@link HurrayFile#entry(String)}, {@link HurrayFile#entry(long)},
 * {@link HurrayFile#entries()} or by iterating a {@link HurrayFile}; read its tensor with
 * {@link HurrayFile#read(FileEntry)}. An entry is an immutable value that needs no closing and
 * may be kept after its file is closed (its fields stay readable). An entry looked up with
 * {@code entry(…)} refers to a small native copy of the index entry, so that reading its
 * tensor costs no further index reads. That copy is freed when the file closes (for the first
 * 65,536 distinct entries a file hands out; a file returns the same {@code FileEntry} for an
 * index again) or by the garbage collector (beyond those). A <em>listed</em> entry (from
 * iteration, {@link HurrayFile#stream()} or {@link HurrayFile#entries()}) holds no native
 * memory: reading its tensor finds the index entry again. Only the file that returned it can
 * read its tensor, and only while open. Thread-safe.
 */
public final class FileEntry {
    /**
     * Where one payload lies in the container.
     *
     * @param offset absolute file offset in bytes, a multiple of {@code alignment}
     * @param length length in bytes (the buffer's byte size)
     * @param alignment the buffer's declared alignment in bytes
     * @param hasChecksum whether the writer stored the payload's CRC32C
     * @param crc32c the stored CRC32C (Castagnoli) as an unsigned 32-bit value, 0 without a checksum
     */
    public record BufferLocation(long offset, long length, int alignment, boolean hasChecksum, long crc32c) {
        /** {@code 64+24 @64 crc=1a2b3c4d}. */
        @Override
        public String toString() {
            return offset + "+" + length + " @" + alignment + (hasChecksum ? String.format(" crc=%08x", crc32c) : "");
        }
    }

    private final HurrayFile file;
    private final MemorySegment handle;
    private final long index;
    private final String name;
    private final TensorDescriptor descriptor;
    private final List<BufferLocation> buffers;

    FileEntry(HurrayFile file, MemorySegment handle, long index, String name, TensorDescriptor descriptor,
            List<BufferLocation> buffers) {
        this.file = file;
        this.handle = handle;
        this.index = index;
        this.name = name;
        this.descriptor = descriptor;
        this.buffers = List.copyOf(buffers);
    }

    /** The file that returned this entry. */
    HurrayFile file() {
        return file;
    }

    /**
     * The native entry ({@code HurrayFileEntry*}), valid while its file is open (see the class
     * comment), or null for a listed entry.
     */
    MemorySegment handle() {
        return handle;
    }

    /** The position in the container's index, which is sorted by name bytes ({@code 0..count-1}). */
    public long index() {
        return index;
    }

    /** The tensor's name (the container's key; 1–4096 UTF-8 bytes). */
    public String name() {
        return name;
    }

    /** The tensor's descriptor (its name included). */
    public TensorDescriptor descriptor() {
        return descriptor;
    }

    /** Where each payload lies, in buffer-table order (element {@code i} is buffer {@code i}); unmodifiable. */
    public List<BufferLocation> buffers() {
        return buffers;
    }

    /** Sum of the payload lengths in bytes. */
    public long totalBytes() {
        long sum = 0;
        for (BufferLocation b : buffers) {
            sum = Math.addExact(sum, b.length());
        }
        return sum;
    }

    /** Entries are equal when they are the same index entry of the same open file. */
    @Override
    public boolean equals(Object o) {
        return o instanceof FileEntry e && e.file == file && e.index == index;
    }

    @Override
    public int hashCode() {
        return Objects.hash(System.identityHashCode(file), index);
    }

    /** {@code #3 float32[2,3] row-major name="layer0/w" [64+24 @64 crc=…]}. */
    @Override
    public String toString() {
        return "#" + index + " " + descriptor + " " + buffers;
    }
}
