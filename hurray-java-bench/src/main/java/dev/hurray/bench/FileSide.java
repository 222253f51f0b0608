package dev.hurray.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** The HRRYFILE section of {@link SideBySide}: open time, and random reads against FileChannel.read. */
final class FileSide {
    private FileSide() {
    }

    static String table(int rounds, long roundNanos) throws IOException {
        StringBuilder out = new StringBuilder();
        Path dir = Files.createTempDirectory("hurray-side-by-side");
        try {
            out.append("### HRRYFILE open + count + close, and open + entry(name) + close (µs, warm page cache, median of ")
                    .append(rounds).append(" rounds; raw = FileChannel.open + read the 72-byte trailer + close; "
                            + "ratios are time over raw's)\n\n");
            out.append("| operation | tensors | raw µs | open() µs | open()/raw | open()+entry µs | open()+entry/raw "
                    + "| map() µs | map()+entry µs | faults/op open | faults/op map |\n");
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            final String openEntry = FileOpens.OPEN + "+entry", mapEntry = FileOpens.MAP + "+entry";
            for (int count : new int[] {1, 1000, 100_000}) {
                Path file = Containers.write(dir.resolve("open-" + count + ".hrry"), count, 64);
                Containers.warm(file);
                Map<String, Sampler.Op> ops = new LinkedHashMap<>();
                for (String impl : new String[] {FileOpens.RAW, FileOpens.OPEN, FileOpens.MAP}) {
                    ops.put(impl, new FileOpens(impl, file)::openOnce);
                }
                ops.put(openEntry, new FileOpens(FileOpens.OPEN, file, true)::openOnce);
                ops.put(mapEntry, new FileOpens(FileOpens.MAP, file, true)::openOnce);
                Map<String, Sampler.Sample> r = Sampler.run(ops, 3 * roundNanos, rounds, roundNanos);
                double raw = r.get(FileOpens.RAW).usPerOp();
                out.append(String.format(Locale.ROOT,
                        "| open | %,d | %.1f | %.1f | %.2f | %.1f | %.2f | %.1f | %.1f | %.1f | %.1f |%n", count, raw,
                        r.get(FileOpens.OPEN).usPerOp(), r.get(FileOpens.OPEN).usPerOp() / raw,
                        r.get(openEntry).usPerOp(), r.get(openEntry).usPerOp() / raw,
                        r.get(FileOpens.MAP).usPerOp(), r.get(mapEntry).usPerOp(),
                        r.get(FileOpens.OPEN).faultsPerOp(), r.get(FileOpens.MAP).faultsPerOp()));
                Files.delete(file);
            }
            out.append("\n### HRRYFILE random reads of whole tensors, summing their longs (GB/s, 128 MiB container, ")
                    .append("warm page cache; ratio = speed over raw FileChannel.read into a reused direct buffer)\n\n");
            out.append("| operation | size | raw GB/s | open() GB/s | open()/raw | open() no CRC GB/s | no CRC/raw "
                    + "| map() GB/s | map()/raw | faults/op open |\n");
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            for (int size : new int[] {4096, 1 << 20}) {
                Path file = Containers.write(dir.resolve("read-" + size + ".hrry"), FileReadBench.FILE_BYTES / size, size);
                Containers.warm(file);
                Map<String, FileReads> open = new LinkedHashMap<>();
                try {
                    Map<String, Sampler.Op> ops = new LinkedHashMap<>();
                    for (String impl : new String[] {FileReads.RAW, FileReads.OPEN, FileReads.OPEN_NOCRC, FileReads.MAP}) {
                        FileReads fr = FileReads.open(impl, file, 42);
                        open.put(impl, fr);
                        ops.put(impl, fr::readOne);
                    }
                    Map<String, Sampler.Sample> r = Sampler.run(ops, 3 * roundNanos, rounds, roundNanos);
                    double raw = r.get(FileReads.RAW).gbPerSecond();
                    double o = r.get(FileReads.OPEN).gbPerSecond();
                    double n = r.get(FileReads.OPEN_NOCRC).gbPerSecond();
                    double m = r.get(FileReads.MAP).gbPerSecond();
                    out.append(String.format(Locale.ROOT,
                            "| random read | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |%n",
                            size >= 1 << 20 ? (size >> 20) + " MiB" : (size >> 10) + " KiB", raw, o, o / raw, n,
                            n / raw, m, m / raw, r.get(FileReads.OPEN).faultsPerOp()));
                } finally {
                    for (FileReads fr : open.values()) {
                        fr.close();
                    }
                }
                Files.delete(file);
            }
        } finally {
            Containers.deleteTree(dir);
        }
        return out.toString();
    }
}
