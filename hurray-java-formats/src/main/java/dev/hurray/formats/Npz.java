package dev.hurray.formats;

import dev.hurray.AtomicOutput;
import dev.hurray.Layout;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.zip.CRC32;
import java.util.zip.CheckedInputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

/**
 * NumPy {@code .npz} archives: a zip of {@code NAME.npy} entries ({@code np.savez} stores them,
 * {@code np.savez_compressed} deflates them), through {@code java.util.zip} (zip64 included).
 *
 * <p><b>Reading.</b> Entries come in central-directory order; each must be a regular entry
 * named {@code *.npy} holding a valid npy file ({@link Npy}), and its tensor is named after the
 * entry without {@code .npy}. Before any payload is allocated, its size (from the npy header)
 * is checked against the entry's declared uncompressed size and, for deflated entries, against
 * what its compressed size can expand to (deflate cannot exceed about 1032:1), so a small
 * hostile archive cannot make the reader allocate gigabytes. Opening inflates only each
 * member's npy header; a payload is inflated when its tensor is first used ({@link ForeignTensor},
 * §Lazy payloads) into 64-byte aligned memory owned by that tensor, and the zip's CRC is verified
 * as the member is read to its end. A member is never inflated past the array its header declares:
 * one byte more is refused there, however far the member would go on. The model keeps the archive
 * open until it is closed.
 *
 * <p><b>Limits.</b> Deflate really can expand about 1000:1, so a 10 MB archive of zeros can hold
 * 10 GB. The payload bytes of an archive's deflated entries are therefore bounded by a limit,
 * {@link #DEFAULT_MAX_INFLATED_BYTES} (2 GiB) unless {@link #read(Path, LongConsumer, long)} is
 * given another, or the system property {@code hurray.npz.maxInflatedBytes} sets one. The limit
 * is checked against each entry's declared size <em>before</em> its payload is allocated, so a
 * zip bomb is refused with a {@link ForeignFormatException} while memory use stays at a few
 * kilobytes. Stored entries need no limit: their bytes are in the file.
 *
 * <p><b>Writing.</b> One {@code NAME.npy} entry per tensor in model order, stored (like
 * {@code np.savez}) or deflated (like {@code np.savez_compressed}); file-level metadata is not
 * representable and is dropped (the caller decides whether that is acceptable).
 */
public final class Npz {
    private static final long DEFLATE_MAX_RATIO = 1032;

    /**
     * The default bound on the payload bytes of an archive's deflated entries: 2 GiB. Override it
     * per call ({@link #read(Path, LongConsumer, long)}) or per process (system property
     * {@code hurray.npz.maxInflatedBytes}, in bytes).
     */
    public static final long DEFAULT_MAX_INFLATED_BYTES = 2L << 30;

    private Npz() {
    }

    /**
     * The checks an npz member's declared size must pass before its payload is allocated: the
     * npy header agrees with the zip entry's size, a deflated entry claims no more than deflate
     * can produce from its compressed bytes, a stored entry fits in the archive, and the
     * deflated entries' payloads together stay within {@code maxInflatedBytes}.
     *
     * @param inflated deflated payload bytes declared by earlier entries
     * @return {@code inflated} plus this entry's, if deflated
     * @throws ForeignFormatException naming the check that failed
     */
    static long checkEntry(ZipEntry e, Npy.Header h, long fileSize, long inflated, long maxInflatedBytes, String ewhat)
            throws ForeignFormatException {
        long total = h.headerBytes() + h.payloadBytes();
        if (e.getSize() >= 0 && e.getSize() != total) {
            throw new ForeignFormatException(ewhat + ": entry holds " + e.getSize() + " bytes, its npy header says " + total);
        }
        long csize = e.getCompressedSize();
        if (e.getMethod() == ZipEntry.DEFLATED && csize >= 0 && total > csize * DEFLATE_MAX_RATIO + 1024) {
            throw new ForeignFormatException(ewhat + ": claims " + total + " bytes from " + csize
                    + " compressed bytes, more than deflate can produce");
        }
        if (e.getMethod() == ZipEntry.STORED && total > fileSize) {
            throw new ForeignFormatException(ewhat + ": a stored entry of " + total + " bytes in an archive of " + fileSize
                    + " bytes");
        }
        if (e.getMethod() != ZipEntry.STORED) {
            inflated += h.payloadBytes();
            if (inflated > maxInflatedBytes || inflated < 0) {
                throw new ForeignFormatException(ewhat + ": deflated entries declare " + inflated
                        + " payload bytes, more than the limit of " + maxInflatedBytes
                        + " (a zip bomb? raise it with -Dhurray.npz.maxInflatedBytes=BYTES)");
            }
        }
        return inflated;
    }

    /** The limit on deflated payload bytes: the system property, else the default. */
    static long maxInflatedBytes() {
        return Long.getLong("hurray.npz.maxInflatedBytes", DEFAULT_MAX_INFLATED_BYTES);
    }

    /**
     * Reads an npz archive.
     *
     * @param progress called with byte counts as payloads are inflated (when a tensor is first
     *                 used, on the thread that uses it), or {@code null}
     * @throws ForeignFormatException if the file is not a zip, an entry is not a valid npy
     *                                file, sizes disagree, or an entry runs past the archive's
     *                                end; a member's CRC, and a member inflating past its declared
     *                                size, fail when its tensor is first used
     */
    public static ForeignModel read(Path file, LongConsumer progress) throws IOException {
        return read(file, progress, maxInflatedBytes());
    }

    /**
     * Reads an npz archive whose deflated entries may hold at most {@code maxInflatedBytes}
     * payload bytes in all.
     *
     * @param progress called with byte counts as payloads are inflated (on first use), or {@code null}
     * @param maxInflatedBytes the bound on the deflated entries' payload bytes, summed
     * @throws ForeignFormatException as for {@link #read(Path, LongConsumer)}, and when the
     *     deflated entries declare more than {@code maxInflatedBytes} (before allocating them)
     */
    public static ForeignModel read(Path file, LongConsumer progress, long maxInflatedBytes) throws IOException {
        String what = file.toString();
        long inflated = 0;
        long fileSize = java.nio.file.Files.size(file);
        ZipFile zip = open(file);
        try {
            List<ForeignTensor> tensors = new ArrayList<>();
            Enumeration<? extends ZipEntry> en = zip.entries();
            while (en.hasMoreElements()) {
                ZipEntry e = en.nextElement();
                String ewhat = what + "!" + dev.hurray.TensorNames.forMessage(e.getName());
                if (e.isDirectory() || !e.getName().endsWith(".npy") || e.getName().length() == 4) {
                    throw new ForeignFormatException(ewhat + ": npz entries must be NAME.npy files");
                }
                String name = e.getName().substring(0, e.getName().length() - 4);
                Npy.Header h;
                try (InputStream in = zip.getInputStream(e)) {
                    h = Npy.readHeader(in, ewhat); // inflates the header only
                } catch (ZipException | EOFException ze) {
                    throw corrupt(file, ewhat, fileSize, ze);
                }
                inflated = checkEntry(e, h, fileSize, inflated, maxInflatedBytes, ewhat);
                tensors.add(ForeignTensor.lazy(name, h.dtype(), h.shape(),
                        h.fortran() ? Layout.Kind.COLUMN_MAJOR : Layout.Kind.ROW_MAJOR, null, new long[0], -1,
                        bufs -> readMember(zip, e, h, bufs[0], file, ewhat, fileSize, progress)));
            }
            try {
                return new ForeignModel(tensors, new LinkedHashMap<>(), null, List.of(zip));
            } catch (IllegalArgumentException dup) {
                throw new ForeignFormatException(what + ": " + dup.getMessage());
            }
        } catch (Throwable t) {
            zip.close();
            throw t;
        }
    }

    /**
     * Inflates member {@code e} into {@code dst} (its declared payload), checking its CRC. At
     * most one byte past the array its header declares is inflated: a member that goes on is
     * refused there.
     */
    private static void readMember(ZipFile zip, ZipEntry e, Npy.Header h, MemorySegment dst, Path file, String ewhat,
                                   long sizeAtOpen, LongConsumer progress) throws IOException {
        CRC32 crc = new CRC32();
        try (InputStream in = new CheckedInputStream(zip.getInputStream(e), crc)) {
            Npy.readHeader(in, ewhat);
            Npy.readData(in, h, dst, ewhat, progress);
        } catch (ZipException | EOFException ze) {
            throw corrupt(file, ewhat, sizeAtOpen, ze);
        } catch (ForeignFormatException short_) {
            // A stored member read past the archive's new end: Npy reports its data as cut short.
            if (shrunk(file, sizeAtOpen)) {
                throw corrupt(file, ewhat, sizeAtOpen, short_);
            }
            throw short_;
        }
        if (e.getCrc() >= 0 && crc.getValue() != e.getCrc()) {
            throw new ForeignFormatException(ewhat + ": CRC mismatch (corrupt archive)");
        }
    }

    /**
     * A member {@code java.util.zip} could not read: truncated when the archive is now shorter
     * than when it was opened, else corrupt. (java.util.zip reports an entry that runs past the
     * end of the archive, a local header offset or compressed size that lies, as a bare
     * {@link EOFException}.)
     */
    private static ForeignFormatException corrupt(Path file, String ewhat, long sizeAtOpen, IOException ze) {
        long now = sizeNow(file);
        String detail = ze.getMessage() == null ? "" : ": " + ze.getMessage();
        if (now >= 0 && now < sizeAtOpen) {
            return new ForeignFormatException(ewhat + ": truncated: the file is now " + now + " bytes (it had "
                    + sizeAtOpen + " bytes when opened; did another process shorten it?), so its member cannot be read"
                    + detail, ze);
        }
        return new ForeignFormatException(ewhat + (ze instanceof ZipException ? ": corrupt zip entry"
                : ": truncated or corrupt zip entry") + detail, ze);
    }

    /** The file's size now, or -1 when it cannot be read (gone). */
    private static long sizeNow(Path file) {
        try {
            return java.nio.file.Files.size(file);
        } catch (IOException gone) {
            return -1;
        }
    }

    private static boolean shrunk(Path file, long sizeAtOpen) {
        long now = sizeNow(file);
        return now >= 0 && now < sizeAtOpen;
    }

    private static ZipFile open(Path file) throws IOException {
        try {
            return new ZipFile(file.toFile());
        } catch (ZipException e) {
            // A zip is read from its end: a truncated archive has lost its end record, and looks
            // like no zip at all.
            throw new ForeignFormatException(file + ": not an npz (zip) file, or a truncated one: " + e.getMessage(), e);
        } catch (EOFException e) {
            // java.util.zip reads the central directory where the end record says it is: a
            // shortened archive ends first, with a bare EOFException.
            throw new ForeignFormatException(file + ": truncated or not an npz (zip) file: its central directory ends"
                    + " past the end of the file", e);
        }
    }

    /**
     * Writes {@code model} as an npz archive, atomically ({@link AtomicOutput}).
     *
     * @param compress deflate entries ({@code np.savez_compressed}) instead of storing them
     * @throws ForeignFormatException if a tensor cannot be written as npy ({@link Npy#header})
     */
    public static void write(ForeignModel model, Path target, boolean compress, LongConsumer progress)
            throws IOException {
        List<byte[]> headers = new ArrayList<>();
        for (ForeignTensor t : model.tensors()) {
            try {
                // A name becomes a zip member name here: never write "../x" or "/x" verbatim.
                dev.hurray.TensorNames.checkPath(t.name());
            } catch (dev.hurray.HurrayException e) {
                throw new ForeignFormatException("tensor name cannot be an npz member name: " + e.nativeMessage());
            }
            headers.add(Npy.header(t));
        }
        AtomicOutput.write(target, ch -> {
            OutputStream raw = new BufferedOutputStream(Channels.newOutputStream(ch), 1 << 16);
            ZipOutputStream zip = new ZipOutputStream(raw);
            for (int i = 0; i < headers.size(); i++) {
                ForeignTensor t = model.tensors().get(i);
                byte[] h = headers.get(i);
                t.withData(data -> {
                ZipEntry e = new ZipEntry(t.name() + ".npy");
                e.setTime(315532800000L + 86400000L); // fixed (1980-01-02) so output is reproducible
                if (compress) {
                    e.setMethod(ZipEntry.DEFLATED);
                } else {
                    long size = h.length + t.byteSize();
                    CRC32 crc = new CRC32();
                    crc.update(h);
                    long c = Payloads.crc32(crc, data);
                    e.setMethod(ZipEntry.STORED);
                    e.setSize(size);
                    e.setCompressedSize(size);
                    e.setCrc(c);
                }
                zip.putNextEntry(e);
                zip.write(h);
                Payloads.writeFully(data, zip, progress);
                zip.closeEntry();
                });
            }
            zip.finish();
            zip.flush();
        });
    }
}
