#!/usr/bin/env python3
"""Checks the layer rule of docs/architecture.md on the includes (//tools:layers_test).

Reads the `#include "..."` lines of every C and C++ file under the layers'
folders and checks each include of another top-level folder against the
layers, from the bottom up:

    ir | runtime | pipelines | passes | scheduler | backends, frontends |
    compiler | tools, python | examples, tests

A file may include its own folder and the folders of lower layers, never a
higher layer's nor a sibling's on its layer (backends/ and frontends/ know
nothing of each other). So nothing below tools/ includes tools/, runtime/
includes ir/ alone, and the graph between the folders has no cycle. An
include of a folder that is not a layer's (absl/, gtest/, onnx/, ...) is a
system library's and is not checked.

    tools/check_layers.py [--root=DIR] [--self_test]

DIR is the repository root, by default the folder above this script's real
path (under `bazel test` the test runs outside the sandbox, tags "local",
and follows the runfiles' link back to the source tree). Prints one line per
include that breaks the rule and exits 1 if there is any, else 0.
Python 3, standard library only.
"""

import os
import re
import sys

# The layers from the bottom up; the folders on one layer are siblings.
LAYERS = (
    ("ir",),
    ("runtime",),
    ("pipelines",),
    ("passes",),
    ("scheduler",),
    ("backends", "frontends"),
    ("compiler",),
    ("tools", "python"),
    ("examples", "tests"),
)
LAYER_OF = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
C_EXTENSIONS = (".c", ".cc", ".cpp", ".cu", ".h", ".inc")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes(text):
    """The paths of the file's `#include "..."` lines, in order."""
    return _INCLUDE.findall(text)


def violation(source_folder, included_path):
    """Why `source_folder` may not include `included_path`, or None if it may."""
    target_folder = included_path.split("/", 1)[0]
    if target_folder not in LAYER_OF or target_folder == source_folder:
        return None
    source_rank, target_rank = LAYER_OF[source_folder], LAYER_OF[target_folder]
    if target_rank > source_rank:
        return f"{source_folder}/ includes {target_folder}/, a higher layer"
    if target_rank == source_rank:
        return f"{source_folder}/ includes {target_folder}/, a sibling on its layer"
    return None


def c_files(root):
    """The C and C++ files under the layers' folders, relative to `root`."""
    for folder in sorted(LAYER_OF):
        for directory, subdirectories, files in os.walk(os.path.join(root, folder)):
            subdirectories.sort()
            for name in sorted(files):
                if name.endswith(C_EXTENSIONS):
                    yield os.path.relpath(os.path.join(directory, name), root)


def problems(root):
    """One line per include that breaks the layer rule."""
    found = []
    for path in c_files(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        source_folder = path.split(os.sep, 1)[0]
        for included in includes(text):
            why = violation(source_folder, included)
            if why:
                found.append(f'{path}: #include "{included}": {why}')
    return found


def self_test():
    """The rule on made-up includes: each kind of break is caught."""
    assert includes('#include "ir/graph.h"\n  #  include "a/b.h"\n#include <x.h>\n') == [
        "ir/graph.h",
        "a/b.h",
    ]
    assert violation("passes", "ir/graph.h") is None
    assert violation("runtime", "runtime/model.h") is None
    assert violation("tests", "tools/gen.h") is None
    assert violation("backends", "absl/strings/str_cat.h") is None
    assert "higher layer" in violation("backends", "tools/check.h")
    assert "higher layer" in violation("runtime", "backends/cpp/codegen.h")
    assert "higher layer" in violation("ir", "runtime/model.h")
    assert "sibling" in violation("frontends", "backends/cpp/codegen.h")
    assert "sibling" in violation("tools", "python/loom/x.h")


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for arg in argv[1:]:
        if arg.startswith("--root="):
            root = arg[len("--root="):]
        elif arg == "--self_test":
            self_test()
        else:
            print(f"usage: {argv[0]} [--root=DIR] [--self_test]", file=sys.stderr)
            return 2
    if not os.path.isdir(os.path.join(root, "ir")):
        print(f"{root}: not the repository root (no ir/)", file=sys.stderr)
        return 2
    found = problems(root)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
