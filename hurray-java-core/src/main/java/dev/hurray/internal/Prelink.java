package dev.hurray.internal;

import dev.hurray.ffm.NativeLibrary;
import dev.hurray.ffm.hurray_h;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Links the stream path's native functions on a background thread while the application's
 * first call is still on its way, so that a fresh JVM's first tensor does not pay each link in
 * turn on the caller's thread.
 *
 * <p>A fresh JVM pays for every distinct downcall shape the first time it is linked (the JDK
 * generates a stub class and method handles: several milliseconds each), and for loading the
 * library itself. The first touch of {@code TensorDescriptor}, {@code Tensor}, {@code Reader},
 * {@code Writer} or {@code HurrayFile} starts one daemon platform thread,
 * {@code hurray-prelink}, that loads the library and links the functions a first stream write
 * and read use. A caller that needs one of them meanwhile waits for that one link (class
 * initialization is the lock), never for the whole list. Failures are ignored here: the
 * caller's own first call reports them (a failed load is remembered and reported alike).
 *
 * <p>Turned off with {@code -Dhurray.prelink=false}. It costs the same CPU as linking on
 * demand, spent once per JVM, on another core when one is free.
 */
public final class Prelink {
    /** The system property that turns prelinking off ({@code false}). */
    public static final String PROPERTY = "hurray.prelink";

    private static final AtomicBoolean STARTED = new AtomicBoolean();
    private static final java.util.concurrent.CountDownLatch DONE = new java.util.concurrent.CountDownLatch(1);
    private static volatile boolean running;

    private Prelink() {
    }

    /** Starts the background thread once per class loader; later calls do nothing. */
    public static void start() {
        if (!STARTED.compareAndSet(false, true)) {
            return;
        }
        if ("false".equalsIgnoreCase(System.getProperty(PROPERTY, "true").strip())) {
            return;
        }
        try {
            Thread.ofPlatform().name("hurray-prelink").daemon().start(Prelink::run);
            running = true;
        } catch (RuntimeException | Error e) {
            // No thread (a restricted environment): the functions link on demand instead.
        }
    }

    private static void run() {
        try {
            NativeLibrary.load();
            // The order of a first write then read, so the caller rarely waits long.
            hurray_h.hurray_descriptor_new$handle();
            hurray_h.hurray_descriptor_encoded$handle();
            hurray_h.hurray_descriptor_destroy$handle();
            hurray_h.hurray_descriptor_buffer_spec$handle();
            hurray_h.hurray_descriptor_encode_with_name$handle();
            hurray_h.hurray_writer_options_init$handle();
            hurray_h.hurray_encoder_new$handle();
            hurray_h.hurray_encoder_set_coalesce_bytes$handle();
            hurray_h.hurray_encoder_encode_encoded$handle();
            hurray_h.hurray_encoder_encode$handle();
            hurray_h.hurray_encoder_output$handle();
            hurray_h.hurray_encoder_consume$handle();
            hurray_h.hurray_encoder_finish$handle();
            hurray_h.hurray_encoder_destroy$handle();
            hurray_h.hurray_reader_options_init$handle();
            hurray_h.hurray_decoder_new$handle();
            hurray_h.hurray_decoder_next$handle();
            hurray_h.hurray_tensor_destroy$handle();
            hurray_h.hurray_decoder_destroy$handle();
            hurray_h.hurray_last_error_message$handle();
            Class.forName(Leaks.class.getName(), true, Prelink.class.getClassLoader());
        } catch (Throwable t) {
            // Reported by the caller's own first call.
        } finally {
            DONE.countDown();
        }
    }

    /**
     * Whether a prelink thread was started in this class loader, and if so waits up to
     * {@code millis} for it to finish; for tests and diagnostics.
     *
     * @return false if none was started (turned off, or no thread could be made) or it is
     *     still running after {@code millis}
     */
    public static boolean awaitDone(long millis) throws InterruptedException {
        return running && DONE.await(millis, java.util.concurrent.TimeUnit.MILLISECONDS);
    }
}
