package dev.hurray.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.ffm.HurrayDescriptorFields;
import dev.hurray.ffm.HurrayFileReaderOptions;
import dev.hurray.ffm.hurray_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

/**
 * Status checks, the native last-error message, and the one layout of the scratch areas that
 * {@link ScratchPool} lends for the out-parameters of calls that never call back into Java.
 *
 * <p><b>Scratch rule.</b> No thread owns native scratch memory. A call sequence that needs
 * out-parameters borrows an area laid out as {@link #SCRATCH_LAYOUT} from {@link ScratchPool}
 * and gives it back in {@code finally}, and uses it only around downcalls that cannot reach
 * Java code (descriptor accessors, builders, container readers over a path or a memory region,
 * tensor destroy, the last-error accessor); what it needs afterwards is copied out first. So the
 * areas follow the calls in progress, not the threads that ever made one (one virtual thread
 * per request makes none of its own). Objects whose calls run Java code between downcalls (a
 * stream reader or writer, a container reader over a channel) own their area instead.
 */
public final class Native {

    /**
     * The scratch area's one layout (4096 bytes), instead of offsets kept by hand in each user:
     * {@code slots}, 8 out-parameters of 8 bytes; {@code options}, one
     * {@code HurrayFileReaderOptions} (a container reader's open); {@code fields}, one
     * {@code HurrayDescriptorFields}; {@code pointers}, 64 data pointers
     * ({@code hurray_buffer_list_data_ptrs}); {@code name}, 256 bytes for a short name; {@code
     * text}, 3072 bytes for the last-error message, and for paths, names and encodings that are
     * no longer needed when a later failure writes its message there.
     */
    static final StructLayout SCRATCH_LAYOUT = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(8, JAVA_LONG).withName("slots"),
            HurrayFileReaderOptions.layout().withName("options"),
            MemoryLayout.paddingLayout(64 - HurrayFileReaderOptions.layout().byteSize()),
            HurrayDescriptorFields.layout().withName("fields"),
            MemoryLayout.paddingLayout(128 - HurrayDescriptorFields.layout().byteSize()),
            MemoryLayout.sequenceLayout(64, ADDRESS).withName("pointers"),
            MemoryLayout.sequenceLayout(256, JAVA_BYTE).withName("name"),
            MemoryLayout.sequenceLayout(3072, JAVA_BYTE).withName("text")).withByteAlignment(64);

    /** Size of a scratch area in bytes. */
    static final long SCRATCH_BYTES = SCRATCH_LAYOUT.byteSize();
    /** Bytes of {@code slots}, at offset 0. */
    static final long SLOTS_BYTES = 64;
    // The offsets are written out rather than derived with layout paths, which would load and
    // link the JDK's layout-path machinery on a fresh JVM's first call (ScratchPoolTest checks
    // them against SCRATCH_LAYOUT).
    /** Offset of {@code options} in {@link #SCRATCH_LAYOUT}. */
    static final long OPTIONS_OFFSET = SLOTS_BYTES;
    /** Offset of {@code fields}. */
    static final long FIELDS_OFFSET = 128;
    /** Offset of {@code pointers}, room for 64 data pointers. */
    static final long POINTERS_OFFSET = 256;
    /** Offset of {@code name}, 256 bytes. */
    static final long NAME_OFFSET = POINTERS_OFFSET + 64 * 8;
    /** Bytes of {@code name}. */
    static final int NAME_BYTES = 256;
    /** Offset of {@code text}, where the last-error message buffer starts (to the end of the area). */
    static final long TEXT_OFFSET = NAME_OFFSET + NAME_BYTES;

    /** The {@code fields} part of scratch area {@code area}: one {@code HurrayDescriptorFields}. */
    static MemorySegment fieldsIn(MemorySegment area) {
        return area.asSlice(FIELDS_OFFSET, HurrayDescriptorFields.layout().byteSize());
    }

    /** The {@code options} part of scratch area {@code area}: one {@code HurrayFileReaderOptions}. */
    static MemorySegment optionsIn(MemorySegment area) {
        return area.asSlice(OPTIONS_OFFSET, HurrayFileReaderOptions.layout().byteSize());
    }

    /** The {@code name} part of scratch area {@code area} ({@link #NAME_BYTES}). */
    static MemorySegment nameIn(MemorySegment area) {
        return area.asSlice(NAME_OFFSET, NAME_BYTES);
    }

    /** The {@code text} part of scratch area {@code area}, to its end. */
    static MemorySegment textIn(MemorySegment area) {
        return area.asSlice(TEXT_OFFSET);
    }

    /** {@code HURRAY_OK}. */
    public static final int OK = hurray_h.HURRAY_OK();
    /** {@code HURRAY_END_OF_STREAM}. */
    public static final int END_OF_STREAM = hurray_h.HURRAY_END_OF_STREAM();
    /** {@code HURRAY_ERR_TRANSPORT}. */
    public static final int ERR_TRANSPORT = hurray_h.HURRAY_ERR_TRANSPORT();
    /** {@code HURRAY_ERR_BUFFER_TOO_SMALL}. */
    static final int ERR_BUFFER_TOO_SMALL = hurray_h.HURRAY_ERR_BUFFER_TOO_SMALL();

    /**
     * A segment over the whole address space (global scope), made once: native memory the library
     * returns (names, encodings, input regions) is read or sliced through it with plain
     * {@code asSlice} and {@code MemorySegment.copy}, instead of a restricted {@code reinterpret}
     * per pointer (each checks the caller's native access and makes a new segment). The bounds
     * still come from the C contract of the call that returned the pointer.
     */
    static final MemorySegment EVERYTHING = everything();

    /**
     * {@link #EVERYTHING}, or the refusal of native access as an error that names the flag to
     * add: this is often the first restricted call a program makes (a {@code Tensor.of} before
     * any reader or writer), so the JDK's bare refusal would otherwise be what the user sees.
     */
    private static MemorySegment everything() {
        try {
            return MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
        } catch (IllegalCallerException e) {
            Module m = Native.class.getModule();
            throw new IllegalCallerException("Hurray calls native code through java.lang.foreign (FFM), which needs "
                    + "native access: run java with " + (m.isNamed()
                            ? "--enable-native-access=dev.hurray.ffm," + m.getName()
                            : "--enable-native-access=ALL-UNNAMED (or add \"Enable-Native-Access: ALL-UNNAMED\" to an "
                                    + "executable jar's manifest)"), e);
        }
    }

    private Native() {
    }

    /** The {@code len} bytes at native address {@code at} as a global-scope segment (see {@link #EVERYTHING}). */
    static MemorySegment view(MemorySegment at, long len) {
        return EVERYTHING.asSlice(at.address(), len);
    }

    /** {@link #view(MemorySegment, long)} of a raw address. */
    static MemorySegment view(long address, long len) {
        return EVERYTHING.asSlice(address, len);
    }

    // The two copies below are the library's shared entry to the JDK's bulk copies, whose
    // implementation is force-inlined wherever it is called: callers on the per-tensor paths
    // call these instead, so that a fresh JVM's first compiler compiles that code once rather
    // than into each caller (these methods are over its inlining size on purpose).

    /**
     * {@code MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes)}; nothing for 0 bytes.
     *
     * @throws IndexOutOfBoundsException for a negative count or a range outside either segment
     */
    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        if (bytes <= 0) {
            if (bytes < 0) {
                throw new IndexOutOfBoundsException("negative byte count " + bytes);
            }
            return;
        }
        MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes);
    }

    /**
     * Copies the {@code count} 8-byte words (native byte order) at native address
     * {@code address} into {@code into[0..count)}; the caller knows from the C contract that
     * they are there.
     *
     * @throws IndexOutOfBoundsException if {@code count} is negative or over {@code into.length}
     */
    /**
     * Writes the pointer {@code address} into the pointer field at {@code offset} of {@code
     * struct}, as a 64-bit word: an {@code ADDRESS} access would make the JDK build that
     * layout's own var handle on a fresh JVM's first use (about 15 ms), which no other path of
     * the library needs then. Pointers are 64 bits on every platform the library is built for.
     */
    static void setPointer(MemorySegment struct, long offset, long address) {
        struct.set(JAVA_LONG, offset, address);
    }

    /** The pointer field at {@code offset} of {@code struct}, as an address (see {@link #setPointer}). */
    static long pointer(MemorySegment struct, long offset) {
        return struct.get(JAVA_LONG, offset);
    }

    static void words(long address, long[] into, int count) {
        if (count <= 0 || count > into.length) {
            if (count != 0) {
                throw new IndexOutOfBoundsException(count + " words into an array of " + into.length);
            }
            return;
        }
        MemorySegment.copy(EVERYTHING, ValueLayout.JAVA_LONG_UNALIGNED, address, into, 0, count);
    }

    /** A copy of the {@code len} bytes at native address {@code address}. */
    static byte[] bytes(long address, long len) {
        if (len > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(len + " bytes do not fit a Java array");
        }
        byte[] b = new byte[(int) len];
        MemorySegment.copy(EVERYTHING, ValueLayout.JAVA_BYTE, address, b, 0, b.length);
        return b;
    }

    /** Copies the {@code len} bytes at native address {@code address} into {@code dst[0..len)}. */
    static void copyIn(long address, byte[] dst, int len) {
        MemorySegment.copy(EVERYTHING, ValueLayout.JAVA_BYTE, address, dst, 0, len);
    }

    /** A copy of the {@code len} bytes at native address {@code at}. */
    static byte[] bytes(MemorySegment at, long len) {
        if (len > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(len + " bytes do not fit a Java array");
        }
        byte[] b = new byte[(int) len];
        MemorySegment.copy(EVERYTHING, ValueLayout.JAVA_BYTE, at.address(), b, 0, b.length);
        return b;
    }

    /** A copy of the {@code len} bytes of {@code s} from {@code offset} (no per-call layout, unlike {@code toArray}). */
    static byte[] bytes(MemorySegment s, long offset, long len) {
        if (len > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(len + " bytes do not fit a Java array");
        }
        byte[] b = new byte[(int) len];
        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, offset, b, 0, b.length);
        return b;
    }

    /**
     * Throws the exception for {@code status} if it is negative (an error).
     *
     * @throws HurrayException with the native message of this thread's failing call
     */
    static void check(int status) throws HurrayException {
        if (status < 0) {
            throw error(status, null);
        }
    }

    /**
     * The exception for failing status {@code status}: its {@link Status}, this thread's native
     * last-error message, and {@code cause} (the exception an upcall recorded, or null). Call it
     * right after the failing downcall, on the same thread.
     */
    public static HurrayException error(int status, Throwable cause) {
        String message = lastErrorMessage();
        HurrayException e = new HurrayException(Status.fromValue(status), status, message, cause);
        if (Log.core().isDebugEnabled()) {
            Log.core().debug("native call failed: {}", e.getMessage());
        }
        return e;
    }

    /** This thread's native last-error message ({@code hurray_last_error_message}); empty if none. */
    public static String lastErrorMessage() {
        MemorySegment s = ScratchPool.borrow();
        try {
            MemorySegment buf = textIn(s);
            int rc = hurray_h.hurray_last_error_message(buf, buf.byteSize(), s);
            if (rc == ERR_BUFFER_TOO_SMALL) {
                long len = s.get(JAVA_LONG, 0);
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment big = a.allocate(len + 1);
                    if (hurray_h.hurray_last_error_message(big, big.byteSize(), s) == OK) {
                        return big.getString(0);
                    }
                }
            } else if (rc == OK) {
                return buf.getString(0);
            }
            return "";
        } finally {
            ScratchPool.giveBack(s);
        }
    }

    /** The C constant name of a status ({@code hurray_status_name}). */
    public static String statusName(int status) {
        return hurray_h.hurray_status_name(status).reinterpret(256).getString(0);
    }

    /**
     * Calls a {@code hurray_*_destroy(T **)} function on handle {@code h} through a short-lived
     * slot (the destroy functions take a pointer to the handle and write NULL to it).
     */
    static void destroyThroughSlot(MemorySegment h, java.util.function.ToIntFunction<MemorySegment> destroy) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment slot = a.allocate(ADDRESS);
            slot.set(ADDRESS, 0, h);
            destroy.applyAsInt(slot);
        }
    }
}
