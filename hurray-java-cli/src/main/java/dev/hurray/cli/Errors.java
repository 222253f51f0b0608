package dev.hurray.cli;

import dev.hurray.cli.foreign.ForeignFormatException;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/** Turns exceptions into the one-line messages and exit codes the command reports. */
final class Errors {
    private Errors() {
    }

    /** A one-line description of an I/O failure, naming the file where there is one. */
    static String describe(IOException e) {
        if (e instanceof ForeignFormatException) {
            return oneLine(e.getMessage());
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
                reason = "already exists";
            } else {
                reason = fse.getReason() == null ? e.getClass().getSimpleName() : fse.getReason();
            }
            if (fse.getOtherFile() != null) {
                return file + " -> " + fse.getOtherFile() + ": " + reason;
            }
            return (file == null ? "" : file + ": ") + reason;
        }
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : oneLine(m);
    }

    static String oneLine(String s) {
        if (s == null) {
            return "";
        }
        return s.replace('\n', ' ').replace('\r', ' ').trim();
    }

    /** Reading failed: malformed content is bad input (2), anything else an I/O error (3). */
    static CliException reading(IOException e) {
        if (e instanceof ForeignFormatException || e instanceof NoSuchFileException) {
            return new CliException(ExitCode.BAD_INPUT, describe(e), e);
        }
        return new CliException(ExitCode.IO_ERROR, "reading failed: " + describe(e), e);
    }

    /** Writing {@code target} failed: content the format cannot hold is bad input (2), else I/O (3). */
    static CliException writing(IOException e, java.nio.file.Path target) {
        if (e instanceof ForeignFormatException) {
            return new CliException(ExitCode.BAD_INPUT, "cannot write " + target + ": " + describe(e), e);
        }
        return new CliException(ExitCode.IO_ERROR, "cannot write " + target + ": " + describe(e), e);
    }
}
