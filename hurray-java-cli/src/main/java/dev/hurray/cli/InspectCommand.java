package dev.hurray.cli;

import com.fasterxml.jackson.core.JsonFactory;
import dev.hurray.cli.io.ReadLimits;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import dev.hurray.Quantization;
import dev.hurray.Reader;
import dev.hurray.formats.Format;
import dev.hurray.cli.io.Entry;
import dev.hurray.cli.io.Source;
import dev.hurray.cli.io.StreamSource;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code hurray inspect FILE|-}: one row per tensor (name, dtype, shape, layout, quantization,
 * bytes, offset), or the same as JSON with {@code --json}. An HRRYFILE is listed from its index
 * alone (no payload is read), entry by entry as the index is read, so its size does not
 * matter; a stream (a {@code .hrrys} file, or stdin for {@code -}) has no
 * index, so it is read through and its payloads discarded.
 *
 * <p>JSON shape: {@code {"file", "format", "tensor_count", "total_bytes", "metadata": {…},
 * "tensors": [{"name", "dtype", "shape": […], "layout", "quantization": null |
 * {"kind": "affine", "scale", "bias", "dequantized"} | {"kind": "per-channel-affine", "axis",
 * "dequantized"} | {"kind": "cast", "dequantized"} | {"kind": "nf4" | "mx" | "nvfp4" | "per-group" |
 * "q8_0" | "q4_0", "block", "axis", ["block2",] "scale_type", "dequantized"}, "bytes", "offset": N | null}]}}.
 * {@code dtype} is the stored type; {@code bytes} the payload size (all buffers); {@code offset}
 * the byte offset of the payload (buffer 0) in the file (for tfjs: in its group's concatenated
 * shards), null when it has none (npz entries, byte-swapped npy data, streams). Metadata values
 * are strings when they are UTF-8 text, else {@code "hex:…"}.
 */
@Command(name = "inspect", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "List the tensors of a file: name, dtype, shape, layout, quantization, bytes, offset.")
final class InspectCommand implements Callable<Integer> {
    /** Writes {@code --json}; the command's writer stays open after the document. */
    private static final JsonFactory JSON = JsonFactory.builder().disable(StreamWriteFeature.AUTO_CLOSE_TARGET).build();

    @Spec
    CommandSpec spec;

    @ParentCommand
    HurrayCommand parent;

    @Mixin
    CommonOptions common;

    @Parameters(index = "0", paramLabel = "FILE",
            description = "HRRYFILE (.hrry), stream (.hrrys), safetensors, .npy, .npz, .gguf, tfjs model.json / "
                    + "*weights_manifest.json; '-' reads a stream from stdin.")
    String file;

    @Option(names = "--json", description = "Machine-readable output.")
    boolean json;

    @Mixin
    SharedOptions.From input;

    @Override
    public Integer call() throws CliException {
        String name = file;
        try (Source src = open()) {
            List<Entry> entries;
            try {
                entries = src.entries().orElse(null);
                if (entries == null) {
                    List<Entry> read = new ArrayList<>();
                    src.forEach(item -> read.add(Entry.of(item.descriptor(), item.sourceOffset())));
                    entries = read;
                }
            } catch (IOException e) {
                throw Errors.reading(e, name, null);
            }
            PrintWriter out = spec.commandLine().getOut();
            if (json) {
                printJson(out, name, src.format(), src.metadata(), entries);
            } else {
                printTable(out, name, src.format(), src.metadata(), entries);
            }
            out.flush();
        } catch (IOException e) {
            throw Errors.reading(e, name, null);
        } catch (java.io.UncheckedIOException e) {
            throw Errors.reading(e.getCause(), name, null); // from a lazily read index
        }
        return ExitCode.OK;
    }

    private Source open() throws CliException {
        if (file.equals("-")) {
            try {
                return new StreamSource(Reader.of(parent.stdin(), ReadLimits.streams()));
            } catch (IOException e) {
                throw Errors.reading(e, "stdin", null);
            }
        }
        Path in = Path.of(file);
        return Inputs.open(in, Inputs.format(in, input.format), false, null);
    }

    static long total(List<Entry> entries) {
        long n = 0;
        for (Entry e : entries) {
            n += e.bytes();
        }
        return n;
    }

    /** Longest metadata value the table prints whole, in characters. */
    static final int MAX_TABLE_VALUE = 160;

    /** A metadata value as text when it is UTF-8, else {@code hex:…}. */
    static String text(byte[] value) {
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(value)).toString();
        } catch (CharacterCodingException e) {
            return "hex:" + HexFormat.of().formatHex(value);
        }
    }

    /**
     * The first {@code chars} characters (or fewer, when the value is shorter) of what
     * {@link #text} gives for {@code value}, decoding the value through a small buffer: UTF-8
     * text, or {@code hex:…} when any of the value is not UTF-8.
     */
    static String head(byte[] value, int chars) {
        java.nio.charset.CharsetDecoder d = StandardCharsets.UTF_8.newDecoder(); // reports malformed input
        ByteBuffer in = ByteBuffer.wrap(value);
        java.nio.CharBuffer buf = java.nio.CharBuffer.allocate(4096);
        StringBuilder head = new StringBuilder();
        java.nio.charset.CoderResult r;
        do {
            r = d.decode(in, buf, true);
            if (r.isError()) {
                String hex = "hex:" + HexFormat.of().formatHex(value, 0, Math.min(value.length, chars / 2 + 1));
                return hex.substring(0, Math.min(hex.length(), chars));
            }
            append(head, buf, chars);
        } while (r.isOverflow());
        do {
            r = d.flush(buf);
            append(head, buf, chars);
        } while (r.isOverflow());
        return head.toString();
    }

    /** Moves what {@code buf} holds into {@code head}, keeping at most {@code chars} characters. */
    private static void append(StringBuilder head, java.nio.CharBuffer buf, int chars) {
        buf.flip();
        head.append(buf, 0, Math.min(buf.remaining(), Math.max(0, chars - head.length())));
        buf.clear();
    }

    private static void printTable(PrintWriter out, String in, Format format, Map<String, byte[]> metadata,
                                   List<Entry> entries) {
        long total = total(entries);
        out.println(in + ": " + format + ", " + Units.count(entries.size(), "tensor") + ", " + Units.bytes(total)
                + " (" + total + " bytes)");
        for (Map.Entry<String, byte[]> e : metadata.entrySet()) {
            // GGUF vocabularies run to megabytes (and a hostile file's to its size): only the
            // head of a long value is decoded, never the whole value as a second copy.
            String head = head(e.getValue(), 2 * MAX_TABLE_VALUE);
            String v = Errors.oneLine(head);
            if (v.length() > MAX_TABLE_VALUE || head.length() >= 2 * MAX_TABLE_VALUE) {
                v = v.substring(0, Math.min(v.length(), MAX_TABLE_VALUE)) + "… (" + e.getValue().length
                        + " bytes; --json prints it whole)";
            }
            out.println("  " + Errors.printable(e.getKey()) + " = " + v);
        }
        // Rows are made as the table iterates them (twice: widths, then lines), never held:
        // a container's entries are a view of its index.
        String[] header = {"NAME", "DTYPE", "SHAPE", "LAYOUT", "QUANTIZATION", "BYTES", "OFFSET"};
        Iterable<String[]> rows = () -> java.util.stream.Stream.concat(java.util.stream.Stream.<String[]>of(header),
                entries.stream().map(t -> new String[] {t.name(), t.elementType().formatName(), t.shapeString(), t.layout(),
                        Entry.describe(t.quantization()), Long.toString(t.bytes()),
                        t.offset() < 0 ? "-" : Long.toString(t.offset())})).iterator();
        Table.print(out, rows, new boolean[] {false, false, false, false, false, true, true});
    }

    private static void printJson(PrintWriter out, String in, Format format, Map<String, byte[]> metadata,
                                  List<Entry> entries) throws CliException {
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.setPrettyPrinter(new DefaultPrettyPrinter());
            g.writeStartObject();
            g.writeStringField("file", in);
            g.writeStringField("format", format.id());
            g.writeNumberField("tensor_count", entries.size());
            g.writeNumberField("total_bytes", total(entries));
            g.writeObjectFieldStart("metadata");
            for (Map.Entry<String, byte[]> e : metadata.entrySet()) {
                g.writeStringField(e.getKey(), text(e.getValue()));
            }
            g.writeEndObject();
            g.writeArrayFieldStart("tensors");
            for (Entry t : entries) {
                g.writeStartObject();
                g.writeStringField("name", t.name());
                g.writeStringField("dtype", t.elementType().formatName());
                g.writeArrayFieldStart("shape");
                for (long d : t.shape()) {
                    g.writeNumber(d);
                }
                g.writeEndArray();
                g.writeStringField("layout", SparseInspect.layoutName(t));
                SparseInspect.write(g, t.descriptor());
                Quantization q = t.quantization();
                if (q == null) {
                    g.writeNullField("quantization");
                } else {
                    g.writeObjectFieldStart("quantization");
                    switch (q) {
                        case Quantization.PerTensorAffine a -> {
                            g.writeStringField("kind", "affine");
                            g.writeNumberField("scale", a.scale());
                            g.writeNumberField("bias", a.bias());
                        }
                        case Quantization.PerChannelAffine p -> {
                            g.writeStringField("kind", "per-channel-affine");
                            g.writeNumberField("axis", p.axis());
                        }
                        case Quantization.Cast c -> g.writeStringField("kind", "cast");
                        case Quantization.BlockScaled b -> {
                            g.writeStringField("kind", b.kindName());
                            g.writeNumberField("block", b.block());
                            g.writeNumberField("axis", b.axis());
                            if (b.block2() > 0) {
                                g.writeNumberField("block2", b.block2());
                            }
                            g.writeStringField("scale_type", b.scaleType().formatName());
                        }
                    }
                    g.writeStringField("dequantized", q.dequantized().formatName());
                    g.writeEndObject();
                }
                g.writeNumberField("bytes", t.bytes());
                if (t.offset() < 0) {
                    g.writeNullField("offset");
                } else {
                    g.writeNumberField("offset", t.offset());
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        } catch (IOException e) {
            throw new CliException(ExitCode.IO_ERROR, "writing output failed: " + Errors.describe(e), e);
        }
        out.println();
    }
}
