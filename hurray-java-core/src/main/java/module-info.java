/**
 * Hurray for the JVM: tensors, streams ({@link dev.hurray.Reader}, {@link dev.hurray.Writer})
 * and HRRYFILE containers ({@link dev.hurray.HurrayFile}) over the native library.
 *
 * <p>On the module path, run with {@code --enable-native-access=dev.hurray.ffm,dev.hurray}:
 * both modules call restricted FFM methods. The library logs through SLF4J; add a provider
 * module (e.g. {@code org.slf4j.nop} or {@code org.slf4j.simple}) to see or silence its logs.
 */
module dev.hurray {
    requires dev.hurray.ffm;
    requires org.slf4j;

    exports dev.hurray;
}
