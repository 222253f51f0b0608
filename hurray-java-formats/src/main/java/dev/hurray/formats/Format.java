package dev.hurray.formats;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The file formats the {@code hurray} command knows, how to name them ({@code --from}/{@code --to})
 * and how to recognise them: by content first (magic bytes), then by file name.
 */
public enum Format {
    SAFETENSORS("safetensors", true),
    NPY("npy", true),
    NPZ("npz", true),
    /** tfjs weights: {@code *weights_manifest.json} or {@code model.json} plus shards; read only. */
    TFJS("tfjs", true),
    /** llama.cpp / ggml model files (magic {@code GGUF}), extension {@code .gguf}; see {@link Gguf}. */
    GGUF("gguf", true),
    /**
     * Arrow IPC files ({@code .arrow}, magic {@code ARROW1}) and streams ({@code .arrows}) with
     * tensor columns; read and written by the {@code hurray-arrow} module, not this one.
     */
    ARROW("arrow", true),
    /** Hurray's random-access container (magic {@code HRRYFILE}), extension {@code .hrry}. */
    HRRYFILE("hrry", false),
    /** A Hurray stream saved to a file (magic {@code HRRYSTRM}), extension {@code .hrrys}. */
    STREAM("stream", false);

    private final String id;
    private final boolean foreign;

    Format(String id, boolean foreign) {
        this.id = id;
        this.foreign = foreign;
    }

    /** The name used on the command line. */
    public String id() {
        return id;
    }

    /** True for formats this module parses itself (not Hurray's own). */
    public boolean isForeign() {
        return foreign;
    }

    /** Whether the command can write the format (all but tfjs). */
    public boolean writable() {
        return this != TFJS;
    }

    @Override
    public String toString() {
        return id;
    }

    /** Parses a {@code --from}/{@code --to} value (case-insensitive; {@code hrryfile} also works). */
    public static Format parse(String s) {
        String n = s.toLowerCase(Locale.ROOT);
        if (n.equals("hrryfile")) {
            return HRRYFILE;
        }
        for (Format f : values()) {
            if (f.id.equals(n)) {
                return f;
            }
        }
        throw new IllegalArgumentException("unknown format '" + s + "' (known: safetensors, npy, npz, tfjs, gguf, arrow, hrry, stream)");
    }

    /** The format a file name implies, or {@code null}. */
    public static Format byName(Path p) {
        String n = p.getFileName() == null ? "" : p.getFileName().toString().toLowerCase(Locale.ROOT);
        if (n.endsWith(".safetensors")) {
            return SAFETENSORS;
        }
        if (n.endsWith(".npy")) {
            return NPY;
        }
        if (n.endsWith(".npz")) {
            return NPZ;
        }
        if (n.endsWith(".gguf")) {
            return GGUF;
        }
        if (n.endsWith(".arrow") || n.endsWith(".arrows")) {
            return ARROW;
        }
        if (n.endsWith(".json")) {
            return TFJS;
        }
        if (n.endsWith(".hrry") || n.endsWith(".hrryfile")) {
            return HRRYFILE;
        }
        if (n.endsWith(".hrrys")) {
            return STREAM;
        }
        return null;
    }

    /**
     * Recognises an existing file: by its first bytes when they are conclusive, else by name.
     *
     * @throws ForeignFormatException if neither content nor name identifies a known format
     * @throws IOException            if the file cannot be read
     */
    public static Format detect(Path p) throws IOException {
        byte[] head;
        try (InputStream in = Files.newInputStream(p)) {
            head = in.readNBytes(16);
        }
        Format byContent = byContent(head);
        if (byContent != null) {
            return byContent;
        }
        Format byName = byName(p);
        if (byName != null) {
            return byName;
        }
        throw new ForeignFormatException(p + ": unrecognised format (not safetensors, npy, npz, GGUF, tfjs JSON or Hurray);"
                + " name it by extension or pass --from");
    }

    static Format byContent(byte[] h) {
        if (Npy.hasMagic(h)) {
            return NPY;
        }
        if (h.length >= 4 && h[0] == 'P' && h[1] == 'K' && ((h[2] == 3 && h[3] == 4) || (h[2] == 5 && h[3] == 6))) {
            return NPZ;
        }
        if (startsWith(h, "GGUF")) {
            return GGUF;
        }
        if (startsWith(h, "ARROW1")) {
            return ARROW;
        }
        if (startsWith(h, "HRRYFILE")) {
            return HRRYFILE;
        }
        if (startsWith(h, "HRRYSTRM")) {
            return STREAM;
        }
        if (h.length >= 9 && h[8] == '{') {
            long n = 0;
            for (int i = 7; i >= 0; i--) {
                n = (n << 8) | (h[i] & 0xFF);
            }
            if (n > 0 && n <= Safetensors.MAX_HEADER_BYTES) {
                return SAFETENSORS;
            }
        }
        int i = 0;
        if (h.length >= 3 && (h[0] & 0xFF) == 0xEF && (h[1] & 0xFF) == 0xBB && (h[2] & 0xFF) == 0xBF) {
            i = 3; // UTF-8 byte order mark
        }
        while (i < h.length && (h[i] == ' ' || h[i] == '\n' || h[i] == '\r' || h[i] == '\t')) {
            i++;
        }
        if (i < h.length && (h[i] == '[' || h[i] == '{')) {
            return TFJS;
        }
        return null;
    }

    private static boolean startsWith(byte[] h, String magic) {
        if (h.length < magic.length()) {
            return false;
        }
        for (int i = 0; i < magic.length(); i++) {
            if (h[i] != magic.charAt(i)) {
                return false;
            }
        }
        return true;
    }
}
