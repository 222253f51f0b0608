package dev.hurray.cli;

import dev.hurray.HurrayException;
import dev.hurray.Status;
import dev.hurray.formats.ForeignFormatException;
import dev.hurray.cli.io.WriteFailure;
import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/**
 * Turns exceptions into the one-line messages and exit codes the command reports.
 *
 * <p>Native statuses ({@link HurrayException}): what the input's bytes caused
 * ({@code INVALID_MAGIC}, {@code VERSION_MISMATCH}, {@code CORRUPT}, {@code TRUNCATED}, the
 * validation and limit statuses, {@code UNSUPPORTED}, {@code NOT_FOUND}) is bad input, exit 2;
 * what the transport caused ({@code TRANSPORT}, {@code SINK_CLOSED}, {@code POISONED}) and
 * {@code OUT_OF_MEMORY} are I/O errors, exit 3; statuses that can only mean a bug
 * ({@code NULL_POINTER}, {@code INTERNAL_PANIC}, {@code USE_AFTER_DESTROY},
 * {@code INVALID_STATE}) are internal errors, exit 70. {@code verify} turns exit 2 into 4.
 */
final class Errors {
    private Errors() {
    }

    /** A one-line description of an I/O failure, naming the file where there is one. */
    static String describe(IOException e) {
        if (e instanceof WriteFailure w) {
            return describe(w.getCause());
        }
        if (e instanceof ForeignFormatException) {
            return oneLine(e.getMessage());
        }
        if (e instanceof HurrayException h) {
            String m = h.status().name() + (h.nativeMessage().isEmpty() ? "" : ": " + h.nativeMessage());
            if (h.getCause() instanceof IOException io && h.status() == Status.TRANSPORT) {
                return oneLine(describe(io) + " (" + h.status().name() + ")");
            }
            return oneLine(m);
        }
        if (e instanceof FileSystemException fse) {
            String file = fse.getFile();
            String reason;
            if (e instanceof NoSuchFileException) {
                reason = "no such file or directory";
            } else if (e instanceof AccessDeniedException) {
                reason = "permission denied";
            } else if (e instanceof NotDirectoryException) {
                reason = "not a directory";
            } else if (e instanceof FileAlreadyExistsException) {
                reason = fse.getReason() == null ? "already exists" : fse.getReason();
            } else {
                reason = fse.getReason() == null ? e.getClass().getSimpleName() : fse.getReason();
            }
            if (fse.getOtherFile() != null) {
                return file + " -> " + fse.getOtherFile() + ": " + reason;
            }
            return (file == null ? "" : file + ": ") + reason;
        }
        if (e instanceof ConnectException) {
            return "connection refused";
        }
        if (e instanceof UnknownHostException) {
            return "unknown host " + e.getMessage();
        }
        if (e instanceof NoRouteToHostException) {
            return "no route to host";
        }
        if (e instanceof SocketTimeoutException) {
            return "timed out";
        }
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : oneLine(m);
    }

    /**
     * {@code s} on one line, for a terminal: line breaks become spaces and the other control
     * characters are shown escaped ({@link #printable}).
     */
    static String oneLine(String s) {
        if (s == null) {
            return "";
        }
        return printable(s.replace('\n', ' ').replace('\r', ' ')).trim();
    }

    /**
     * {@code s} with each control character other than tab (C0, DEL, C1) written as
     * {@code \xNN}, and each bidirectional formatting character (U+200E, U+200F, U+202A–U+202E,
     * U+2066–U+2069) as {@code <U+NNNN>}: names, keys and metadata come from the input, and an
     * escape sequence in them must not reach the terminal (clear the screen, retitle it, set the
     * clipboard), nor a direction override reorder what the terminal shows.
     */
    static String printable(String s) {
        StringBuilder b = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean control = c != '\t' && (c < 0x20 || (c >= 0x7F && c <= 0x9F));
            boolean bidi = c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
            if ((control || bidi) && b == null) {
                b = new StringBuilder(s.length() + 8).append(s, 0, i);
            }
            if (control) {
                b.append(String.format("\\x%02x", (int) c));
            } else if (bidi) {
                b.append(String.format("<U+%04X>", (int) c));
            } else if (b != null) {
                b.append(c);
            }
        }
        return b == null ? s : b.toString();
    }

    /** The exit code a native status stands for (see the class comment). */
    static int exitCode(Status s) {
        return switch (s) {
            case TRANSPORT, SINK_CLOSED, POISONED, OUT_OF_MEMORY -> ExitCode.IO_ERROR;
            case NULL_POINTER, INTERNAL_PANIC, USE_AFTER_DESTROY, INVALID_STATE -> ExitCode.INTERNAL;
            default -> ExitCode.BAD_INPUT;
        };
    }

    /**
     * Reading {@code what} failed: malformed content is bad input (2), anything else an I/O
     * error (3); a {@link WriteFailure} is reported as {@link #writing}.
     */
    static CliException reading(IOException e, Object what, Object target) {
        if (e instanceof WriteFailure w) {
            return writing(w.getCause(), target);
        }
        String prefix = what == null ? "" : what + ": ";
        if (e instanceof ForeignFormatException) {
            // Foreign-format messages already name the file.
            return new CliException(ExitCode.BAD_INPUT, describe(e), e);
        }
        if (e instanceof NoSuchFileException) {
            return new CliException(ExitCode.BAD_INPUT, describe(e), e);
        }
        if (e instanceof HurrayException h) {
            int code = exitCode(h.status());
            return new CliException(code, (code == ExitCode.IO_ERROR ? "reading failed: " : "") + prefix + describe(e), e);
        }
        return new CliException(ExitCode.IO_ERROR, "reading failed: " + prefix + describe(e), e);
    }

    /** As {@link #reading(IOException, Object, Object)} for a failure that cannot come from a sink. */
    static CliException reading(IOException e) {
        return reading(e, null, null);
    }

    /** Writing {@code target} failed: content the format cannot hold is bad input (2), else I/O (3). */
    static CliException writing(IOException e, Object target) {
        if (e instanceof WriteFailure w) {
            e = w.getCause();
        }
        String msg = "cannot write " + target + ": " + describe(e);
        if (e instanceof ForeignFormatException) {
            return new CliException(ExitCode.BAD_INPUT, msg, e);
        }
        if (e instanceof HurrayException h) {
            int code = exitCode(h.status());
            return new CliException(code == ExitCode.BAD_INPUT ? ExitCode.BAD_INPUT : code, msg, e);
        }
        return new CliException(ExitCode.IO_ERROR, msg, e);
    }
}
