package dev.hurray.internal;

import dev.hurray.ffm.hurray_h;

/**
 * Links the downcalls of the hot path (the batch encoder and decoder, descriptor validation,
 * tensor release) on a daemon thread as soon as the library's Java side is first used, so that
 * the JDK's one-time cost of linking each downcall (spinning its method handles) overlaps the
 * application's own start-up instead of delaying its first tensor. Linking is the same work a
 * first call would do, done once; a failure here (no library) is left for that first call to
 * report.
 */
final class Prelink {
    private Prelink() {
    }

    static void start() {
        if (Boolean.getBoolean("hurray.prelink.off")) {
            return;
        }
        Thread t = new Thread(Prelink::run, "hurray-prelink");
        t.setDaemon(true);
        t.start();
    }

    private static void run() {
        try {
            hurray_h.hurray_encoder_encode_batch$handle();
            hurray_h.hurray_decoder_next_batch$handle();
            hurray_h.hurray_encoder_new$handle();
            hurray_h.hurray_decoder_new$handle();
            hurray_h.hurray_tensor_destroy_many$handle();
            hurray_h.hurray_descriptor_new$handle();
            hurray_h.hurray_descriptor_buffer_spec$handle();
            hurray_h.hurray_descriptor_encoded$handle();
            hurray_h.hurray_descriptor_destroy$handle();
            hurray_h.hurray_encoder_destroy$handle();
            hurray_h.hurray_decoder_reset$handle();
        } catch (Throwable ignored) {
            // The first real call reports what is wrong (a missing library or symbol).
        }
    }
}
