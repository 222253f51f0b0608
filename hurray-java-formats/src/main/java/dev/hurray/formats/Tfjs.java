package dev.hurray.formats;

import dev.hurray.BufferSpec;
import dev.hurray.ElementType;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.Quantization;
import dev.hurray.Tensor;
import dev.hurray.TensorDescriptor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * TensorFlow.js weights: a {@code *weights_manifest.json} (a JSON array of groups) or a
 * {@code model.json} whose {@code weightsManifest} holds that array, plus the binary shard
 * files each group lists in {@code paths}.
 *
 * <p><b>Layout</b> (as tfjs-core's {@code io_utils.decodeWeights} reads it): a group's shards
 * are concatenated in order, and its weights follow one another in that byte stream with no
 * alignment or padding. A weight's stored size is {@code product(shape)} times the width of its
 * stored type: the quantization dtype ({@code uint8} 1, {@code uint16} 2, {@code float16} 2)
 * when it has a {@code quantization} entry, else its {@code dtype} ({@code float32} 4,
 * {@code int32} 4, {@code bool} 1, {@code complex64} 8). {@code string} weights (variable
 * length) are rejected.
 *
 * <p><b>Quantization</b> is kept, not applied: {@code uint8}/{@code uint16} with
 * {@code scale}/{@code min} becomes {@link Quantization.PerTensorAffine} (stored uint8/uint16,
 * {@code bias = min}, dequantized type = the weight's {@code dtype}, float32 or int32), and
 * {@code float16} becomes {@link Quantization.Cast} (stored float16, logical float32). With
 * {@code dequantize}, values are computed instead, exactly as tfjs-core 4.22 does, by the native core
 * ({@link Tensor#dequantize(ElementType)}; docs/spec/descriptor.md §Dequantization).
 *
 * <p><b>Checks.</b> Shard paths must be relative and stay inside the manifest's directory;
 * every listed shard must exist; each group's shards must hold exactly the bytes its weights
 * need (nothing is allocated before this is checked); names must be unique; shapes must be
 * non-negative integers. Each payload is read on first use ({@link ForeignTensor}, §Lazy
 * payloads) into 64-byte aligned memory owned by its tensor (tfjs weights start at arbitrary byte
 * offsets, e.g. odd ones after a uint8 weight of odd size); the model keeps the shards open until
 * it is closed.
 *
 * <p>{@link ForeignTensor#sourceOffset()} is the weight's byte offset in its group's
 * concatenated shards (the offset in the {@code .bin} file when the group has one shard).
 */
public final class Tfjs {
    /** Largest manifest or model.json accepted, in bytes. */
    public static final long MAX_JSON_BYTES = 256L << 20;
    private static final int MAX_RANK = ForeignTensor.MAX_RANK;

    private Tfjs() {
    }

    /**
     * Reads tfjs weights.
     *
     * @param manifest   a {@code *weights_manifest.json} or a {@code model.json}
     * @param dequantize compute dequantized float32/int32 values instead of keeping quantization
     * @param progress   called with byte counts as a weight's payload is read from its shards
     *                   (when the weight is first used, on the thread that uses it), or {@code null}
     * @throws ForeignFormatException on an invalid manifest, a missing or short shard, or an
     *                                unsupported dtype or quantization
     */
    public static ForeignModel read(Path manifest, boolean dequantize, LongConsumer progress) throws IOException {
        String what = manifest.toString();
        byte[] bytes;
        try (java.io.InputStream in = Files.newInputStream(manifest)) {
            bytes = in.readNBytes((int) MAX_JSON_BYTES + 1); // bounded even for a device or a FIFO
        }
        if (bytes.length > MAX_JSON_BYTES) {
            throw new ForeignFormatException(what + ": more than " + MAX_JSON_BYTES + " bytes, the limit for a tfjs manifest");
        }
        Object root = Json.parse(bytes, 0, bytes.length, what);
        Map<String, String> metadata = new LinkedHashMap<>();
        List<?> groups;
        if (root instanceof List<?> l) {
            groups = l;
        } else if (root instanceof Map<?, ?> m) {
            if (!(m.get("weightsManifest") instanceof List<?> l)) {
                throw new ForeignFormatException(what + ": not tfjs weights: a JSON object without a weightsManifest array");
            }
            groups = l;
            for (String k : List.of("format", "generatedBy", "convertedBy")) {
                if (m.get(k) instanceof String s) {
                    metadata.put("tfjs." + k, s);
                }
            }
        } else {
            throw new ForeignFormatException(what + ": not tfjs weights: JSON " + Json.typeOf(root)
                    + " is neither a manifest array nor a model.json object");
        }
        Path dir = manifest.toAbsolutePath().getParent();
        List<Group> parsed = new ArrayList<>();
        for (int g = 0; g < groups.size(); g++) {
            parsed.add(group(groups.get(g), g, dir, what));
        }
        List<FileChannel> channels = new ArrayList<>();
        try {
            List<ForeignTensor> tensors = new ArrayList<>();
            java.util.Set<String> names = new java.util.HashSet<>();
            for (Group g : parsed) {
                for (Weight w : g.weights) {
                    if (!names.add(w.name)) {
                        throw new ForeignFormatException(what + ": weight '" + dev.hurray.TensorNames.forMessage(w.name) + "' appears twice");
                    }
                }
                addGroup(g, channels, dequantize, tensors, what, progress);
            }
            return new ForeignModel(tensors, metadata, null, channels);
        } catch (Throwable t) {
            for (FileChannel ch : channels) {
                ch.close();
            }
            throw t;
        }
    }

    private record Weight(String name, long[] shape, String dtype, ElementType stored, Quantization quant, long bytes) {
    }

    private record Group(int index, List<Path> shards, List<Long> shardSizes, List<Weight> weights) {
    }

    private static Group group(Object o, int index, Path dir, String what) throws IOException {
        String where = what + ": weightsManifest[" + index + "]";
        if (!(o instanceof Map<?, ?> m)) {
            throw new ForeignFormatException(where + " is a JSON " + Json.typeOf(o) + ", not an object");
        }
        if (!(m.get("paths") instanceof List<?> pl)) {
            throw new ForeignFormatException(where + ": paths is missing or not an array");
        }
        if (!(m.get("weights") instanceof List<?> wl)) {
            throw new ForeignFormatException(where + ": weights is missing or not an array");
        }
        List<Path> shards = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        long have = 0;
        for (Object p : pl) {
            if (!(p instanceof String ps) || ps.isEmpty()) {
                throw new ForeignFormatException(where + ": a shard path is not a non-empty string");
            }
            Path rel;
            try {
                rel = Path.of(ps);
            } catch (java.nio.file.InvalidPathException e) {
                throw new ForeignFormatException(where + ": shard path '" + ps + "' is not a valid path");
            }
            if (rel.isAbsolute() || ps.startsWith("/") || ps.contains("\\")) {
                throw new ForeignFormatException(where + ": shard path '" + ps + "' is absolute");
            }
            for (Path part : rel) {
                if (part.toString().equals("..")) {
                    throw new ForeignFormatException(where + ": shard path '" + ps + "' leaves the manifest's directory");
                }
            }
            Path shard = dir.resolve(rel);
            if (!Files.exists(shard)) {
                throw new ForeignFormatException(what + ": shard '" + ps + "' listed in the manifest is missing");
            }
            // A symbolic link (the shard itself or a folder on its way) may point anywhere: read
            // only files whose real path lies inside the manifest's real folder.
            Path realDir = dir.toRealPath();
            shard = shard.toRealPath();
            if (!shard.startsWith(realDir)) {
                throw new ForeignFormatException(where + ": shard path '" + ps
                        + "' resolves outside the model folder (through a symbolic link)");
            }
            if (!Files.isRegularFile(shard)) {
                throw new ForeignFormatException(what + ": shard '" + ps + "' is not a regular file");
            }
            long sz = Files.size(shard);
            shards.add(shard);
            sizes.add(sz);
            have += sz;
        }
        List<Weight> weights = new ArrayList<>();
        long need = 0;
        for (int i = 0; i < wl.size(); i++) {
            Weight w = weight(wl.get(i), where + ".weights[" + i + "]");
            weights.add(w);
            try {
                need = Math.addExact(need, w.bytes);
            } catch (ArithmeticException e) {
                throw new ForeignFormatException(where + ": the weights' total size overflows");
            }
        }
        if (need != have) {
            throw new ForeignFormatException(what + ": weightsManifest[" + index + "] weights need " + need
                    + " bytes but its shards hold " + have + (have < need ? " (truncated shard?)" : " (trailing bytes)"));
        }
        return new Group(index, shards, sizes, weights);
    }

    private static Weight weight(Object o, String where) throws ForeignFormatException {
        if (!(o instanceof Map<?, ?> m)) {
            throw new ForeignFormatException(where + " is a JSON " + Json.typeOf(o) + ", not an object");
        }
        if (!(m.get("name") instanceof String name) || name.isEmpty()) {
            throw new ForeignFormatException(where + ": name is missing or not a non-empty string");
        }
        where = where + " '" + dev.hurray.TensorNames.forMessage(name) + "'";
        if (!(m.get("shape") instanceof List<?> sl)) {
            throw new ForeignFormatException(where + ": shape is missing or not an array");
        }
        if (sl.size() > MAX_RANK) {
            throw new ForeignFormatException(where + ": rank " + sl.size() + " exceeds " + MAX_RANK + ", the most a Hurray tensor has");
        }
        long[] shape = new long[sl.size()];
        for (int i = 0; i < shape.length; i++) {
            if (!(sl.get(i) instanceof BigInteger b) || b.signum() < 0 || b.bitLength() > 63) {
                throw new ForeignFormatException(where + ": shape[" + i + "] = " + sl.get(i)
                        + " is not a non-negative integer");
            }
            shape[i] = b.longValue();
        }
        if (!(m.get("dtype") instanceof String dtype)) {
            throw new ForeignFormatException(where + ": dtype is missing or not a string");
        }
        ElementType logical = switch (dtype) {
            case "float32" -> ElementType.FLOAT32;
            case "int32" -> ElementType.INT32;
            case "bool" -> ElementType.BOOL;
            case "complex64" -> ElementType.COMPLEX64;
            case "string" -> throw new ForeignFormatException(where + ": tfjs string tensors are not supported");
            default -> throw new ForeignFormatException(where + ": unsupported tfjs dtype '" + dtype + "'");
        };
        ElementType stored = logical;
        Quantization quant = null;
        Object qo = m.get("quantization");
        if (qo != null) {
            if (!(qo instanceof Map<?, ?> q)) {
                throw new ForeignFormatException(where + ": quantization is not an object");
            }
            if (!(q.get("dtype") instanceof String qd)) {
                throw new ForeignFormatException(where + ": quantization dtype is missing or not a string");
            }
            if (q.get("original_dtype") instanceof String od && !od.equals(dtype)) {
                throw new ForeignFormatException(where + ": quantization original_dtype '" + od
                        + "' differs from the weight's dtype '" + dtype + "'");
            }
            switch (qd) {
                case "uint8", "uint16" -> {
                    Double scale = Json.number(q.get("scale"));
                    Double min = Json.number(q.get("min"));
                    if (scale == null || min == null) {
                        throw new ForeignFormatException(where + ": " + qd + " quantization needs numeric scale and min");
                    }
                    if (!Double.isFinite(scale) || !Double.isFinite(min)) {
                        throw new ForeignFormatException(where + ": quantization scale/min are not finite");
                    }
                    if (logical != ElementType.FLOAT32 && logical != ElementType.INT32) {
                        throw new ForeignFormatException(where + ": " + qd + " quantization of a " + dtype
                                + " weight is not supported (tfjs allows float32 and int32)");
                    }
                    stored = qd.equals("uint8") ? ElementType.UINT8 : ElementType.UINT16;
                    quant = new Quantization.PerTensorAffine(scale, min, logical);
                }
                case "float16" -> {
                    if (logical != ElementType.FLOAT32) {
                        throw new ForeignFormatException(where + ": float16 quantization of a " + dtype
                                + " weight is not supported (tfjs allows float32 only)");
                    }
                    stored = ElementType.FLOAT16;
                    quant = new Quantization.Cast(ElementType.FLOAT32);
                }
                default -> throw new ForeignFormatException(where + ": unknown quantization dtype '" + qd
                        + "' (tfjs knows uint8, uint16 and float16)");
            }
        }
        long bytes;
        try {
            bytes = stored.byteSizeOf(ForeignTensor.elementCount(shape));
        } catch (ArithmeticException e) {
            throw new ForeignFormatException(where + ": the byte size of its shape overflows");
        }
        return new Weight(name, shape, dtype, stored, quant, bytes);
    }

    /** A weight's bytes in one shard: {@code bytes} from byte {@code offset} of shard {@code shard}. */
    private record Piece(int shard, long offset, long bytes) {
    }

    /**
     * Opens {@code g}'s shards (kept in {@code channels}, which the model closes) and adds its
     * weights to {@code out} as lazy tensors, each reading its pieces of the shards on first use.
     */
    private static void addGroup(Group g, List<FileChannel> channels, boolean dequantize, List<ForeignTensor> out,
                                 String what, LongConsumer progress) throws IOException {
        // Positional reads from the shards, never a mapping: a shard another process shortens
        // meanwhile is an error, not SIGBUS.
        List<FileChannel> shards = new ArrayList<>();
        List<String> whats = new ArrayList<>();
        for (int i = 0; i < g.shards.size(); i++) {
            FileChannel ch = FileChannel.open(g.shards.get(i), StandardOpenOption.READ);
            channels.add(ch);
            shards.add(ch);
            whats.add(what + ": shard " + g.shards.get(i).getFileName());
            if (ch.size() != g.shardSizes.get(i)) {
                throw new ForeignFormatException(what + ": shard " + g.shards.get(i).getFileName()
                        + " changed size while being read");
            }
        }
        long offset = 0;
        int shard = 0;
        long inShard = 0;
        for (Weight w : g.weights) {
            List<Piece> pieces = new ArrayList<>();
            long done = 0;
            while (done < w.bytes) {
                while (inShard == g.shardSizes.get(shard)) {
                    shard++;
                    inShard = 0;
                }
                long n = Math.min(w.bytes - done, g.shardSizes.get(shard) - inShard);
                pieces.add(new Piece(shard, inShard, n));
                done += n;
                inShard += n;
            }
            ForeignTensor.Loader read = bufs -> {
                long at = 0;
                for (Piece p : pieces) {
                    Payloads.readAt(shards.get(p.shard), p.offset, bufs[0].asSlice(at, p.bytes), whats.get(p.shard),
                            g.shardSizes.get(p.shard));
                    at += p.bytes;
                    if (progress != null) {
                        progress.accept(p.bytes);
                    }
                }
            };
            ForeignTensor t;
            if (dequantize && w.quant != null) {
                t = ForeignTensor.lazy(w.name, w.quant.dequantized(), w.shape, Layout.Kind.ROW_MAJOR, null, new long[0],
                        offset, bufs -> {
                            try (Arena scratch = Arena.ofConfined()) {
                                MemorySegment stored = Payloads.allocate(scratch, w.bytes);
                                read.load(new MemorySegment[] {stored});
                                dequantize(w, stored, bufs[0], what);
                            }
                        });
            } else {
                t = ForeignTensor.lazy(w.name, w.stored, w.shape, Layout.Kind.ROW_MAJOR, w.quant, new long[0], offset,
                        read);
            }
            out.add(t);
            offset += w.bytes;
        }
    }

    /**
     * The dequantized values of one weight, computed by the native core
     * ({@link Tensor#dequantize(ElementType)}): {@code q × scale + min} in float64 rounded once,
     * to nearest-even float32 (tfjs's {@code Float32Array} store) or, for int32 weights, halves
     * towards +∞ wrapped modulo 2^32 (its {@code Math.round} into an {@code Int32Array});
     * float16 widened exactly. Copied into {@code out}, which has the dequantized size.
     */
    private static void dequantize(Weight w, MemorySegment stored, MemorySegment out, String what)
            throws ForeignFormatException {
        try {
            TensorDescriptor d = TensorDescriptor.builder(w.stored, w.shape).quantization(w.quant)
                    .buffer(BufferSpec.cpu(stored.byteSize())).build();
            try (Tensor t = Tensor.wrap(d, stored); Tensor v = t.dequantize(w.quant.dequantized())) {
                MemorySegment.copy(v.buffer(0), 0, out, 0, out.byteSize());
            }
        } catch (HurrayException | IllegalArgumentException e) {
            throw new ForeignFormatException(what + ": weight '" + dev.hurray.TensorNames.forMessage(w.name) + "': " + e.getMessage(), e);
        }
    }
}
