package dev.hurray.kafka;

import java.net.URI;
import java.util.Objects;

/**
 * What a claim-check record holds instead of a large tensor: where the tensor was put and how to
 * check it. Carried in the record as the metadata of a small Hurray descriptor
 * (docs/spec/kafka.md §Claim-check reference).
 *
 * @param store the URI of the store that holds the file ({@link ClaimCheckStore#uri()}); a
 *     deserializer only resolves references to its own configured store
 * @param file the file's key inside the store (for {@link SharedDirectoryStore}, a file name:
 *     letters, digits, {@code . _ -}, at most 255 characters)
 * @param tensor the tensor's name inside the HRRYFILE
 * @param size the sum of the tensor's payload sizes, in bytes
 * @param crc32c CRC32C (Castagnoli) of the tensor's payloads in buffer-table order, each exactly
 *     its byte size, as an unsigned 32-bit value
 */
public record ClaimCheckReference(URI store, String file, String tensor, long size, long crc32c) {
    /**
     * Checks the fields.
     *
     * @throws IllegalArgumentException for a negative size or a CRC outside 0..2^32-1
     */
    public ClaimCheckReference {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(tensor, "tensor");
        if (size < 0) {
            throw new IllegalArgumentException("negative size " + size);
        }
        if (crc32c < 0 || crc32c > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("crc32c " + crc32c + " is not an unsigned 32-bit value");
        }
    }

    /** {@code STORE/FILE#TENSOR (SIZE bytes, crc32c=XXXXXXXX)}, for messages. */
    @Override
    public String toString() {
        return store + (store.toString().endsWith("/") ? "" : "/") + file + "#" + tensor + " (" + size
                + " bytes, crc32c=" + String.format("%08x", crc32c) + ")";
    }
}
