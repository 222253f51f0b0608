"""The start the GGUF fixture scripts share: their command line
`[GGUF_PY_DIR [OUT_DIR]]` (a gguf-py folder to import instead of an installed `gguf`, and the
folder to write into, by default hurray-java-formats/src/test/resources/gguf)."""
import os
import sys


def output_dir(argv):
    """Puts GGUF_PY_DIR first on the import path, makes OUT_DIR if needed, and returns it."""
    if len(argv) > 1 and argv[1]:
        sys.path.insert(0, argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    out = argv[2] if len(argv) > 2 else os.path.join(here, "..", "..", "hurray-java-formats", "src", "test",
                                                     "resources", "gguf")
    os.makedirs(out, exist_ok=True)
    return out
