package dev.hurray;

import java.io.IOException;
import java.util.Objects;

/**
 * A failure reported by the native library: the {@link Status}, the raw status value, and the
 * library's message for the failing call ({@code hurray_last_error_message}).
 *
 * <p>When the failure started in a transport callback (an {@code InputStream}, channel or
 * {@code OutputStream} threw), the status is {@link Status#TRANSPORT} and the
 * {@linkplain #getCause() cause} is exactly the {@code Throwable} the Java source or sink threw
 * (an {@code IOException}, a {@code RuntimeException} or an {@code Error}): the upcall caught
 * it, reported a failed transfer of zero bytes to the native library, and the Java caller of
 * the downcall rethrows it wrapped here. That is the contract of every {@link Reader} and
 * {@link Writer} method; the original exception type is never rethrown bare.
 *
 * <p><b>Retrying.</b> {@link #isRetryable()} says whether calling the failed method again on
 * the same reader or writer can succeed. Only a {@link Status#TRANSPORT} failure can be: the
 * native handle moved no bytes, so a reader resumes mid-tensor and a writer that had not yet put
 * a byte of the item on the wire writes it whole. It is retryable unless the source or sink
 * itself is dead, which the cause tells ({@link #isRetryableCause}): a connection reset, broken
 * pipe or closed socket ({@link java.net.SocketException}) or a closed or interrupted channel
 * ({@link java.nio.channels.ClosedChannelException}) is fatal; a timeout
 * ({@link java.io.InterruptedIOException}), other {@code IOException}s and whatever else the
 * source or sink threw are retryable. A
 * reader or writer whose transport failed fatally reports that same failure again on every
 * later call, whether it reads a socket's stream or its channel, instead of a misleading
 * {@code TRUNCATED} or a retryable status. A write that fails after the item's first byte
 * poisons the writer and is never retryable; every other status is sticky.
 */
public class HurrayException extends IOException {
    private static final long serialVersionUID = 1L;

    /** The status. */
    private final Status status;
    /** The raw native status value. */
    private final int code;
    /** The native library's message. */
    private final String nativeMessage;

    /**
     * An exception for status {@code status} with the native library's message.
     *
     * @param status the status (not {@link Status#OK})
     * @param nativeMessage the library's message for the failing call; may be empty
     * @param cause the exception a transport callback threw, or null
     */
    public HurrayException(Status status, String nativeMessage, Throwable cause) {
        this(status, status.value(), nativeMessage, cause);
    }

    /**
     * An exception for a raw status value (which may be unknown to this build).
     *
     * @param status the status ({@link Status#UNKNOWN} for an unknown value)
     * @param code the raw native value
     * @param nativeMessage the library's message; may be empty
     * @param cause the exception a transport callback threw, or null
     */
    public HurrayException(Status status, int code, String nativeMessage, Throwable cause) {
        super(format(status, code, nativeMessage, cause), cause);
        this.status = Objects.requireNonNull(status, "status");
        this.code = code;
        this.nativeMessage = nativeMessage == null ? "" : nativeMessage;
    }

    private static String format(Status status, int code, String nativeMessage, Throwable cause) {
        StringBuilder b = new StringBuilder(status == Status.UNKNOWN ? "status " + code : status.name());
        if (nativeMessage != null && !nativeMessage.isEmpty()) {
            b.append(": ").append(nativeMessage);
        }
        if (cause != null) {
            b.append(" (caused by ").append(cause).append(')');
        }
        return b.toString();
    }

    /**
     * Whether calling the failed method again on the same handle can succeed: the status is
     * {@link Status#TRANSPORT}, the cause (if any) {@linkplain #isRetryableCause is retryable},
     * and the failure did not poison a writer. A retry loop should stop on {@code false}.
     */
    public boolean isRetryable() {
        return status == Status.TRANSPORT
                && (getCause() == null || isRetryableCause(getCause()))
                && !nativeMessage.contains(POISONED_MARK);
    }

    /**
     * Whether a source or sink that threw {@code t} may work if asked again. {@code false} for
     * a {@link java.net.SocketException} (connection reset, broken pipe, socket closed), a
     * {@link java.nio.channels.ClosedChannelException} (closed, asynchronously closed or
     * interrupted channel), an {@link java.io.EOFException}, an {@code IOException} whose
     * message says the connection was reset or the pipe broken (NIO reports some of these
     * as plain {@code IOException}s): the connection is gone. {@code true} for other
     * {@code IOException}s, including timeouts, and for anything else a source or sink threw
     * ({@code RuntimeException}, {@code Error}): it moved nothing and said so, so the handle
     * can resume once the source or sink works again.
     *
     * @param t what the source or sink threw (not null)
     */
    public static boolean isRetryableCause(Throwable t) {
        if (!(t instanceof IOException)) {
            return true;
        }
        if (t instanceof java.net.SocketException
                || t instanceof java.nio.channels.ClosedChannelException
                || t instanceof java.io.EOFException) {
            return false;
        }
        if (t instanceof java.io.InterruptedIOException) {
            return true;
        }
        String m = t.getMessage();
        if (m != null) {
            String lower = m.toLowerCase(java.util.Locale.ROOT);
            return !(lower.contains("connection reset") || lower.contains("broken pipe")
                    || lower.contains("connection aborted"));
        }
        return true;
    }

    /** What the native writer appends to the message of the call that poisoned it. */
    private static final String POISONED_MARK = "the writer is poisoned";

    /** The status. */
    public Status status() {
        return status;
    }

    /** The raw native status value (equal to {@code status().value()} unless the status is unknown). */
    public int code() {
        return code;
    }

    /** The native library's message for the failing call (possibly empty). */
    public String nativeMessage() {
        return nativeMessage;
    }

    /**
     * This failure as the unchecked exception of a caller mistake, for a call that only checks
     * the caller's arguments (hurray-java-core/README.md §Exceptions): an
     * {@link IllegalStateException} when the library itself failed ({@link Status#OUT_OF_MEMORY},
     * {@link Status#INTERNAL_PANIC}), else an {@link IllegalArgumentException}; this is the cause.
     */
    RuntimeException asCallerMistake() {
        if (status == Status.OUT_OF_MEMORY || status == Status.INTERNAL_PANIC) {
            return new IllegalStateException(getMessage(), this);
        }
        return new IllegalArgumentException(getMessage(), this);
    }
}
