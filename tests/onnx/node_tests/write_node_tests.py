"""Writes ONNX's backend node tests from the `onnx` wheel's case generators.

The PyPI wheel ships the generators (onnx/backend/test/case/node/) but not
the data they produce. This writes, for every case, the layout ONNX's own
repository and Debian's libonnx-testdata use and tests/onnx:conformance
reads:

    OUT/<test name>/model.onnx
    OUT/<test name>/test_data_set_<k>/input_<j>.pb, output_<j>.pb

Inputs and outputs that are sequences, maps or optionals are written as
ONNX's SequenceProto, MapProto and OptionalProto (the runner refuses them
by name). Usage: python write_node_tests.py OUT
"""

import os
import shutil
import sys
import warnings

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node


def serialize(value, value_info):
    """One input or output of a data set, as ONNX's test data stores it."""
    kind = value_info.type.WhichOneof("value")
    if kind == "map_type":
        return numpy_helper.from_dict(value, value_info.name)
    if kind == "sequence_type":
        return numpy_helper.from_list(value, value_info.name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, value_info.name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(np.asarray(value), value_info.name)


def write_case(case, out_dir):
    case_dir = os.path.join(out_dir, case.name)
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for k, (inputs, outputs) in enumerate(case.data_sets):
        set_dir = os.path.join(case_dir, f"test_data_set_{k}")
        os.makedirs(set_dir)
        for prefix, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                with open(os.path.join(set_dir, f"{prefix}_{j}.pb"), "wb") as f:
                    f.write(serialize(value, infos[j]).SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: write_node_tests.py OUT")
    out_dir = sys.argv[1]
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    with warnings.catch_warnings():
        # The generators divide by zero on purpose (inf and nan cases).
        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        cases = node.collect_testcases()
    for case in cases:
        write_case(case, out_dir)
    print(f"wrote {len(cases)} node tests to {out_dir}")


if __name__ == "__main__":
    main()
