package dev.hurray;

import dev.hurray.ffm.hurray_h;

/**
 * Where a buffer's memory lives ({@code HURRAY_DEVICE_*}, docs/spec/descriptor.md §Codes).
 *
 * <p>Every tag other than {@link #CPU} requires a buffer alignment of at least
 * {@link #DEVICE_ALIGNMENT} (4096 bytes); CPU buffers need at least {@link #MIN_ALIGNMENT}
 * (64 bytes). The Java API moves bytes through host memory, so {@link Tensor#allocate} makes
 * CPU buffers only; other tags travel in descriptors for consumers that understand them.
 */
public enum DeviceTag {
    /** Ordinary host memory. */
    CPU(hurray_h.HURRAY_DEVICE_CPU()),
    /** CUDA device memory. */
    CUDA(hurray_h.HURRAY_DEVICE_CUDA()),
    /** CUDA pinned (page-locked) host memory. */
    CUDA_HOST(hurray_h.HURRAY_DEVICE_CUDA_HOST()),
    /** ROCm/HIP device memory. */
    ROCM(hurray_h.HURRAY_DEVICE_ROCM()),
    /** A Metal buffer. */
    METAL(hurray_h.HURRAY_DEVICE_METAL()),
    /** Vulkan device memory. */
    VULKAN(hurray_h.HURRAY_DEVICE_VULKAN()),
    /** Host memory shared between processes (IPC, e.g. a shared mapping). */
    IPC(hurray_h.HURRAY_DEVICE_IPC());

    /** Smallest buffer alignment in bytes, the CPU default ({@code HURRAY_MIN_BUFFER_ALIGNMENT}). */
    public static final int MIN_ALIGNMENT = 64;
    /** Smallest alignment in bytes of GPU and IPC buffers ({@code HURRAY_DEVICE_BUFFER_ALIGNMENT}). */
    public static final int DEVICE_ALIGNMENT = 4096;
    /** Largest buffer alignment in bytes ({@code HURRAY_MAX_BUFFER_ALIGNMENT}, 2 MiB). */
    public static final int MAX_ALIGNMENT = 2 * 1024 * 1024;

    private final int code;

    DeviceTag(int code) {
        this.code = code & 0xFF;
    }

    /** The one-byte wire code. */
    public int code() {
        return code;
    }

    /** The smallest alignment in bytes a buffer with this tag may declare: 64 for CPU, 4096 otherwise. */
    public int minAlignment() {
        return this == CPU ? MIN_ALIGNMENT : DEVICE_ALIGNMENT;
    }

    /**
     * The tag with wire code {@code code}.
     *
     * @throws IllegalArgumentException for an unknown code
     */
    public static DeviceTag fromCode(int code) {
        for (DeviceTag t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown device tag " + code);
    }
}
