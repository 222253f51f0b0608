/**
 * Hurray for the JVM: stream tensors over sockets, pipes and memory, and read and write
 * HRRYFILE containers, through the native Hurray library, with no JNI (the FFM API,
 * {@code java.lang.foreign}).
 *
 * <h2>The pieces</h2>
 * <ul>
 *   <li>{@link dev.hurray.TensorDescriptor} (with its {@link dev.hurray.TensorDescriptor.Builder})
 *       says what a tensor's bytes mean: {@link dev.hurray.ElementType}, {@link dev.hurray.Shape},
 *       {@link dev.hurray.Layout}, byte offset, the {@link dev.hurray.BufferSpec buffer table},
 *       optional {@link dev.hurray.Quantization}, name and metadata. The native library validates
 *       and encodes it; Java never encodes format bytes itself.</li>
 *   <li>{@link dev.hurray.Tensor} is a descriptor plus its buffers as native
 *       {@link java.lang.foreign.MemorySegment}s ({@link dev.hurray.BufferList}).</li>
 *   <li>{@link dev.hurray.Reader} reads a stream tensor by tensor from an
 *       {@link java.io.InputStream}, a {@link java.nio.channels.ReadableByteChannel}, a
 *       {@link java.net.Socket} or memory; {@link dev.hurray.Writer} writes one to the matching
 *       sinks.</li>
 *   <li>{@link dev.hurray.HurrayFile} reads an HRRYFILE container (named tensors at aligned
 *       offsets, random access by name, file metadata) through a
 *       {@link java.nio.channels.FileChannel} or a zero-copy memory map, listing
 *       {@link dev.hurray.FileEntry entries} without reading payloads;
 *       {@link dev.hurray.HurrayFileWriter} writes one to a file (atomically), a stream or a
 *       channel.</li>
 *   <li>Failures of I/O and of input data are a {@link dev.hurray.HurrayException} (an
 *       {@link java.io.IOException}) carrying a {@link dev.hurray.Status} and the native
 *       message; a failure of your source or sink is its cause. Caller mistakes (an argument
 *       the format refuses, a call in the wrong state) are an
 *       {@link java.lang.IllegalArgumentException} or {@link java.lang.IllegalStateException},
 *       with the {@code HurrayException} as cause when the native library gave the reason
 *       (hurray-java-core/README.md §Exceptions).</li>
 * </ul>
 *
 * <h2>Units</h2>
 * Shapes, element counts and strides are in <em>elements</em>; buffer sizes, offsets,
 * alignments and limits are in <em>bytes</em>. Element values are little-endian.
 *
 * <h2>Ownership and lifetimes</h2>
 * Readers, writers and tensors are {@link java.lang.AutoCloseable}; closing twice is a no-op. A
 * tensor's buffer segments die with the tensor: using one after {@code close()} throws
 * {@link java.lang.IllegalStateException}, never crashes the JVM. Tensors read from a reader are
 * owned by the caller and outlive the reader. Descriptors need no closing.
 *
 * <h2>Threads</h2>
 * One reader or writer, one thread at a time (docs/spec/c-abi.md §Threads); misuse is refused with
 * {@link java.lang.IllegalStateException}. Tensors are confined to the thread that read or made
 * them unless {@link dev.hurray.TensorScope#SHARED} is chosen. Descriptors and the value types
 * are immutable and thread-safe.
 *
 * <h2>Running</h2>
 * The JVM needs {@code --enable-native-access=ALL-UNNAMED} (class path) or
 * {@code --enable-native-access=dev.hurray.ffm,dev.hurray} (module path; this jar is module
 * {@code dev.hurray}); the native library travels in the {@code hurray-java-ffm} jar (under
 * {@code META-INF/native/OS-ARCH/}) and {@code -Dhurray.library.path=...} points at another
 * build. A successful load logs nothing (it does not start the application's SLF4J provider);
 * {@code dev.hurray.ffm.NativeLibrary.source()} says where the library came from, and
 * {@code -Dhurray.trace.downcalls=true} logs the load and every native call at INFO (loggers
 * {@code dev.hurray.ffm.NativeLibrary} and {@code dev.hurray.ffm.downcalls}).
 *
 * <h2>This documentation</h2>
 * Built with the jar: {@code ./mvnw -B -ntp -q package -DskipTests -pl hurray-java-core -am}
 * writes {@code hurray-java-core/target/hurray-java-core-VERSION-javadoc.jar} and the HTML
 * under {@code hurray-java-core/target/reports/apidocs/}.
 */
package dev.hurray;
