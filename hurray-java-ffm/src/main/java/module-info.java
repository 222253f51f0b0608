/**
 * The generated Panama FFM bindings of {@code hurray.h} and the loader of the native library.
 * Internal to Hurray: exported to the core library only. Applications on the module path enable
 * native access for it and the core library:
 * {@code --enable-native-access=dev.hurray.ffm,dev.hurray}.
 */
module dev.hurray.ffm {
    requires org.slf4j;

    exports dev.hurray.ffm to dev.hurray;
}
