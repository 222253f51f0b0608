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
 * <p>Whether the failed call can be retried depends on the status: {@link Status#TRANSPORT}
 * is retryable on a reader (it resumes mid-tensor) and on a writer that had not yet put a byte
 * of the item on the wire; every other reader error is sticky.
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
}
