package dev.hurray;

import java.util.Objects;

/**
 * One entry of a descriptor's buffer table: the same four fields as the format's 16-byte
 * binary buffer handle ({@code HurrayBufferSpec} in {@code hurray.h}).
 *
 * <p>Buffer 0 holds the elements; per-channel quantization adds buffers 1 (scales) and 2
 * (biases). The native library validates a spec when the descriptor is built: the alignment
 * must be a power of two, at least the device tag's {@linkplain DeviceTag#minAlignment()
 * minimum} and at most {@link DeviceTag#MAX_ALIGNMENT} ({@link Status#INVALID_ALIGNMENT}).
 *
 * @param byteSize size of the buffer in <em>bytes</em>, {@code >= 0}
 * @param alignment alignment of the buffer's first byte in bytes, {@code > 0}
 * @param deviceTag where the memory lives
 * @param syncMode how the producer synchronised its writes
 */
public record BufferSpec(long byteSize, int alignment, DeviceTag deviceTag, SyncMode syncMode) {
    /**
     * Checks what a Java value can check; the format rules are the native library's.
     *
     * @throws IllegalArgumentException for a negative size or a non-positive alignment
     * @throws NullPointerException for a null tag or mode
     */
    public BufferSpec {
        if (byteSize < 0) {
            throw new IllegalArgumentException("negative buffer size " + byteSize);
        }
        if (alignment <= 0) {
            throw new IllegalArgumentException("alignment must be positive, got " + alignment);
        }
        Objects.requireNonNull(deviceTag, "deviceTag");
        Objects.requireNonNull(syncMode, "syncMode");
    }

    /** A CPU buffer of {@code byteSize} bytes at the default 64-byte alignment, producer-synced. */
    public static BufferSpec cpu(long byteSize) {
        return new BufferSpec(byteSize, DeviceTag.MIN_ALIGNMENT, DeviceTag.CPU, SyncMode.PRODUCER_SYNCED);
    }

    // equals and hashCode are written out (the same component-wise rule a record derives): the
    // derived ones are bootstrapped through ObjectMethods on first use, which a fresh JVM pays
    // for on its first descriptor.

    @Override
    public boolean equals(Object o) {
        return o instanceof BufferSpec b && byteSize == b.byteSize && alignment == b.alignment
                && deviceTag == b.deviceTag && syncMode == b.syncMode;
    }

    @Override
    public int hashCode() {
        return ((Long.hashCode(byteSize) * 31 + alignment) * 31 + deviceTag.hashCode()) * 31 + syncMode.hashCode();
    }

    /** {@code 24B@64 cpu}, plus the sync mode when it is not producer-synced. */
    @Override
    public String toString() {
        String s = byteSize + "B@" + alignment + " " + deviceTag.name().toLowerCase(java.util.Locale.ROOT);
        return syncMode == SyncMode.PRODUCER_SYNCED ? s : s + " " + syncMode.name().toLowerCase(java.util.Locale.ROOT);
    }
}
