package dev.hurray.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * The tfjs models bundled as resources under {@code models/face-api/} (from
 * {@code @vladmandic/face-api} 1.7.15, MIT; see that folder's README for hashes). Each is a
 * {@code NAME-weights_manifest.json} plus {@code NAME.bin}.
 */
final class BundledModels {
    /** The demo's default model. */
    static final String DEFAULT = "tiny_face_detector_model";
    /** Every bundled model, by its file-name stem. */
    static final List<String> NAMES = List.of("tiny_face_detector_model", "face_landmark_68_tiny_model",
            "age_gender_model");
    private static final String ROOT = "/models/face-api/";

    private BundledModels() {
    }

    /**
     * Copies model {@code name}'s manifest and shard out of the class path into {@code dir}
     * (readers take files, and a jar's resources are not), returning the manifest's path.
     *
     * @throws IllegalArgumentException if {@code name} is not bundled
     * @throws IOException              if a resource is missing (a broken build) or copying fails
     */
    static Path extract(String name, Path dir) throws IOException {
        if (!NAMES.contains(name)) {
            throw new IllegalArgumentException("no bundled model '" + dev.hurray.TensorNames.forMessage(name) + "'");
        }
        Path manifest = null;
        for (String file : List.of(name + "-weights_manifest.json", name + ".bin")) {
            try (InputStream in = BundledModels.class.getResourceAsStream(ROOT + file)) {
                if (in == null) {
                    throw new IOException("bundled resource " + ROOT + file + " is missing from this build");
                }
                Path target = dir.resolve(file);
                Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                if (manifest == null) {
                    manifest = target;
                }
            }
        }
        return manifest;
    }
}
