package dev.hurray;

import dev.hurray.ffm.hurray_h;

/**
 * How the producer synchronised its device writes before handing a buffer off
 * (docs/spec/descriptor.md §Sync modes, docs/spec/c-abi.md §Buffer handoff and sync modes);
 * byte 13 of the 16-byte binary buffer handle.
 *
 * <p>Wire codes 0x03–0xFE are reserved and 0xFF is invalid: {@link #fromCode} rejects them, as
 * the native library does with {@link Status#INVALID_SYNC_MODE}. Host memory written by Java is
 * always {@link #PRODUCER_SYNCED}, the version-1 behaviour and the safe default.
 */
public enum SyncMode {
    /** 0x00: the producer waited on the host before handoff (default). */
    PRODUCER_SYNCED(hurray_h.HURRAY_SYNC_PRODUCER_SYNCED()),
    /** 0x01: an event handle travels with the handoff; the consumer stream-waits on it. */
    EVENT(hurray_h.HURRAY_SYNC_EVENT()),
    /** 0x02: the consumer supplies its stream and the producer orders its writes onto it. */
    CONSUMER_STREAM(hurray_h.HURRAY_SYNC_CONSUMER_STREAM());

    private final int code;

    SyncMode(int code) {
        this.code = code & 0xFF;
    }

    /** The one-byte wire code. */
    public int code() {
        return code;
    }

    /**
     * The sync mode with wire code {@code code}.
     *
     * @throws IllegalArgumentException for the reserved codes 0x03–0xFE, the invalid code 0xFF,
     *     and anything outside a byte; the message names {@code INVALID_SYNC_MODE}
     */
    public static SyncMode fromCode(int code) {
        for (SyncMode m : values()) {
            if (m.code == code) {
                return m;
            }
        }
        String why = code >= 0x03 && code <= 0xFE ? "reserved" : code == 0xFF ? "invalid" : "not a byte";
        throw new IllegalArgumentException("INVALID_SYNC_MODE: sync mode " + code + " is " + why);
    }
}
