"""Bundles libhurray into the package: the library native/build.sh stages under
native/target/dist/ (or the file HURRAY_LIBRARY_PATH names) is copied to hurray/_native/.
Without one the package still installs and finds the library at run time through
HURRAY_LIBRARY_PATH."""

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

NAME = "libhurray.dylib" if sys.platform == "darwin" else "libhurray.so"
HERE = Path(__file__).resolve().parent


def library():
    env = os.environ.get("HURRAY_LIBRARY_PATH")
    if env:
        return Path(env)
    p = HERE.parent / "native" / "target" / "dist" / NAME
    return p if p.is_file() else None


class BuildPy(build_py):
    def run(self):
        super().run()
        lib = library()
        if lib is not None:
            dest = Path(self.build_lib) / "hurray" / "_native"
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(lib, dest / NAME)
        else:
            print("hurray: no libhurray found (run native/build.sh); set HURRAY_LIBRARY_PATH at run time")


class BinaryDistribution(Distribution):
    """The wheel carries a native library: tag it for this platform."""

    def has_ext_modules(self):
        return library() is not None


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution)
