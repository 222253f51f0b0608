package dev.hurray.formats;

/** Lets tests in other packages build safetensors files by hand. */
public final class SafetensorsTestAccess {
    private SafetensorsTestAccess() {
    }

    public static byte[] file(String header, byte[] data) {
        return SafetensorsTest.file(header, data);
    }
}
