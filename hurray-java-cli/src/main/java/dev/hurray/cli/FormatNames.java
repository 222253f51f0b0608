package dev.hurray.cli;

import java.util.Iterator;
import java.util.List;

/** Completion candidates and help text for {@code --from}/{@code --to}. */
final class FormatNames implements Iterable<String> {
    static final List<String> NAMES = List.of("safetensors", "npy", "npz", "tfjs", "arrow", "hrry", "stream");

    @Override
    public Iterator<String> iterator() {
        return NAMES.iterator();
    }
}
