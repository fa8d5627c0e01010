"""pip install ./python: the package with libloom.so inside it, built by the
project's build (../bazelw build //runtime:libloom.so), or copied from
$LOOM_LIBRARY where that names one already built. The rest of the
package's description is pyproject.toml."""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def built_library():
    """The path of libloom.so: $LOOM_LIBRARY's, or built now by Bazel."""
    given = os.environ.get("LOOM_LIBRARY")
    if given:
        return given
    bazelw = os.path.join(ROOT, "bazelw")
    if not os.path.exists(bazelw):
        raise SystemExit("loom: no %s to build libloom.so with: install from loom's "
                         "checkout (pip install ./python), or set LOOM_LIBRARY to a built "
                         "libloom.so" % bazelw)
    subprocess.run([bazelw, "build", "-c", "opt", "//runtime:libloom.so"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "bazel-bin", "runtime", "libloom.so")


class BuildWithLibrary(build_py):
    """build_py, then libloom.so copied into the package."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "loom", "libloom.so")
        shutil.copyfile(built_library(), target)
        os.chmod(target, 0o755)


class BinaryDistribution(Distribution):
    """A wheel for this platform: it holds a native library."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
