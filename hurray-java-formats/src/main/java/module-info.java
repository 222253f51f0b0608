/**
 * Foreign tensor formats as Hurray tensors: safetensors, npy/npz, tfjs weights and GGUF
 * ({@link dev.hurray.formats.ForeignFormats}, {@link dev.hurray.formats.ForeignModel}).
 *
 * <p>This module calls no restricted method itself: on the module path the flag the core library
 * needs is enough, {@code --enable-native-access=dev.hurray.ffm,dev.hurray}.
 */
module dev.hurray.formats {
    requires transitive dev.hurray;
    requires com.fasterxml.jackson.core;

    exports dev.hurray.formats;
}
