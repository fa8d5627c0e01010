"""Op inventory of exported ONNX models: what an importer must handle.

  tests/zoo/run.sh inventory.py ROOT [ROOT...] [--out=FILE]

Finds every model.onnx under the ROOTs (export.py's layout:
<exporter>/<name>/model.onnx) and writes, per model: the opset imports, every
(domain, op_type) with its count and the since_version of the schema the
model's opset selects (marked '*' where that is above 17: an op new after
opset 17, or one whose inputs, attributes or types changed after 17), usage
of those changes that are visible in the node (Reduce* axes as an input,
Split num_outputs, ...), the element types of graph inputs, initializers,
Constant nodes, Cast targets and value_info; then a union table: op_type ->
the models that use it. Subgraphs (If, Loop, Scan) and model-local
functions are walked too.
"""

import argparse
import collections
import os
import sys

import onnx
from onnx import defs, helper

DT = {v: k for k, v in onnx.TensorProto.DataType.items()}

REDUCES = {"ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceSum",
           "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum",
           "ReduceLogSumExp"}


def _versions():
    v = collections.defaultdict(set)
    for sch in defs.get_all_schemas_with_history():
        v[(sch.domain or "ai.onnx", sch.name)].add(sch.since_version)
    return v


VERSIONS = _versions()


def since(op, domain, opset):
    try:
        return defs.get_schema(op, opset, domain).since_version
    except Exception:  # noqa: BLE001  (no schema: custom or unknown op)
        return None


def walk_graphs(graph):
    """The graph and its subgraphs (If, Loop, Scan bodies), at any depth."""
    yield graph
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from walk_graphs(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from walk_graphs(g)


def type_name(tp):
    if tp.HasField("tensor_type"):
        return DT.get(tp.tensor_type.elem_type, str(tp.tensor_type.elem_type))
    return tp.WhichOneof("value")


def usage_notes(n, opset):
    """Post-opset-17 forms visible in a node."""
    notes = []
    attrs = {a.name: a for a in n.attribute}
    if n.op_type in REDUCES:
        if len(n.input) >= 2 and n.input[1]:
            notes.append(f"{n.op_type}: axes as input")
        elif "axes" in attrs:
            notes.append(f"{n.op_type}: axes attribute")
        else:
            notes.append(f"{n.op_type}: no axes (all)")
        if "noop_with_empty_axes" in attrs:
            notes.append(f"{n.op_type}: noop_with_empty_axes={attrs['noop_with_empty_axes'].i}")
    if n.op_type == "Split":
        if "num_outputs" in attrs:
            notes.append("Split: num_outputs attribute")
        elif len(n.input) >= 2 and n.input[1]:
            notes.append("Split: split sizes as input")
        elif "split" in attrs:
            notes.append("Split: split attribute")
        else:
            notes.append("Split: equal parts by output count")
    if n.op_type == "Pad" and len(n.input) >= 4 and n.input[3]:
        notes.append("Pad: axes input")
    if n.op_type == "Pad" and "mode" in attrs:
        notes.append(f"Pad: mode={attrs['mode'].s.decode()}")
    if n.op_type == "Resize":
        for k in ("antialias", "keep_aspect_ratio_policy", "axes",
                  "coordinate_transformation_mode", "mode", "nearest_mode"):
            if k in attrs:
                v = helper.get_attribute_value(attrs[k])
                notes.append(f"Resize: {k}={v.decode() if isinstance(v, bytes) else v}")
    if n.op_type == "Cast" and "saturate" in attrs:
        notes.append(f"Cast: saturate={attrs['saturate'].i}")
    if n.op_type in ("ScatterElements", "ScatterND") and "reduction" in attrs:
        notes.append(f"{n.op_type}: reduction={attrs['reduction'].s.decode()}")
    if n.op_type in ("AveragePool", "MaxPool") and "dilations" in attrs:
        notes.append(f"{n.op_type}: dilations attribute")
    if n.op_type == "Gelu" and "approximate" in attrs:
        notes.append(f"Gelu: approximate={attrs['approximate'].s.decode()}")
    if n.op_type == "LayerNormalization":
        notes.append(f"LayerNormalization: {sum(1 for o in n.output if o)} output(s)")
    if n.op_type in ("Attention", "RMSNormalization", "RotaryEmbedding"):
        vals = []
        for k in sorted(attrs):
            v = helper.get_attribute_value(attrs[k])
            vals.append(f"{k}={v.decode() if isinstance(v, bytes) else v}")
        present = [str(i) for i, x in enumerate(n.input) if x]
        notes.append(f"{n.op_type}: inputs {','.join(present)} of {len(n.input)}; "
                     f"outputs {sum(1 for o in n.output if o)}; " + " ".join(vals))
    return notes


def inventory(path):
    m = onnx.load(path, load_external_data=False)
    opsets = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    default = opsets.get("ai.onnx", 0)
    ops = collections.Counter()
    notes = collections.Counter()
    types = collections.defaultdict(set)
    nodes = [n for g in walk_graphs(m.graph) for n in g.node]
    for f in m.functions:
        nodes.extend(f.node)
    for n in nodes:
        dom = n.domain or "ai.onnx"
        ops[(dom, n.op_type)] += 1
        for s in usage_notes(n, opsets.get(dom, default)):
            notes[s] += 1
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    types["Constant"].add(DT[a.t.data_type])
                else:
                    types["Constant"].add(f"attr:{a.name}")
        if n.op_type == "Cast":
            for a in n.attribute:
                if a.name == "to":
                    types["Cast to"].add(DT[a.i])
    for g in walk_graphs(m.graph):
        inits = {i.name for i in g.initializer}
        for i in g.initializer:
            types["initializers"].add(DT[i.data_type])
        for i in g.input:
            if i.name not in inits:
                types["graph inputs"].add(type_name(i.type))
        for o in g.output:
            types["graph outputs"].add(type_name(o.type))
        for v in g.value_info:
            types["value_info"].add(type_name(v.type))
    external = any(i.data_location == onnx.TensorProto.EXTERNAL
                   for i in m.graph.initializer)
    return {"opsets": opsets, "ops": ops, "notes": notes, "types": types,
            "functions": [f"{f.domain}::{f.name}" for f in m.functions],
            "external": external, "n_init": len(m.graph.initializer),
            "ir_version": m.ir_version, "producer": f"{m.producer_name} {m.producer_version}"}


def models_by_folder(title, models):
    """Lines naming `models` (export folder/model name) under `title`, a line per folder."""
    groups = collections.defaultdict(list)  # export folder -> model names
    for m in models:
        folder, _, model_name = m.rpartition("/")
        groups[folder].append(model_name)
    lines = [f"{title} ({len(models)} models):"]
    for folder, names in sorted(groups.items()):
        lines.append(f"    {folder or '.'} [{len(names)}]: {' '.join(names)}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("roots", nargs="+")
    ap.add_argument("--out", default="/tmp/zoo/ops_inventory.txt")
    a = ap.parse_args()
    paths = []
    for r in a.roots:
        for d, _, files in os.walk(r):
            if "model.onnx" in files:
                paths.append(os.path.join(d, "model.onnx"))
    paths.sort()
    lines = []
    union = collections.defaultdict(list)   # (domain, op) -> [model]
    newer = collections.defaultdict(set)    # (domain, op) -> {(opset, since)}
    note_union = collections.defaultdict(list)
    for p in paths:
        label = os.path.relpath(os.path.dirname(p), os.path.commonpath(a.roots)
                                if len(a.roots) > 1 else a.roots[0])
        try:
            inv = inventory(p)
        except Exception as e:  # noqa: BLE001
            lines.append(f"## {label}: cannot read: {e}\n")
            continue
        opsets = inv["opsets"]
        lines.append(f"## {label}")
        lines.append(f"opset_import: {', '.join(f'{d}={v}' for d, v in sorted(opsets.items()))}"
                     f"  ir_version={inv['ir_version']}  producer={inv['producer']}")
        nondef = sorted(d for d in opsets if d != "ai.onnx")
        used_nondef = sorted({d for d, _ in inv["ops"] if d != "ai.onnx"})
        lines.append(f"non-default domains imported: {nondef or 'none'}; used by nodes: {used_nondef or 'none'}")
        if inv["functions"]:
            lines.append(f"local functions: {inv['functions']}")
        lines.append(f"weights: {'external data' if inv['external'] else 'inline'} ({inv['n_init']} initializers)")
        for k in ("graph inputs", "graph outputs", "initializers", "Constant", "Cast to", "value_info"):
            if inv["types"].get(k):
                lines.append(f"types {k}: {sorted(inv['types'][k])}")
        lines.append(f"ops ({sum(inv['ops'].values())} nodes, {len(inv['ops'])} kinds):")
        for (dom, op), c in sorted(inv["ops"].items(), key=lambda x: (x[0][0], x[0][1])):
            s = since(op, "" if dom == "ai.onnx" else dom, opsets.get(dom, 0))
            mark = "*" if (s or 0) > 17 and dom == "ai.onnx" else " "
            dom_s = "" if dom == "ai.onnx" else dom + "::"
            lines.append(f"  {mark} {dom_s}{op:<28} x{c:<5} since_version={s}")
            union[(dom, op)].append(label)
            if mark == "*":
                newer[(dom, op)].add((opsets.get(dom, 0), s))
        if inv["notes"]:
            lines.append("forms:")
            for s, c in sorted(inv["notes"].items()):
                lines.append(f"    {s} x{c}")
                note_union[s].append(label)
        lines.append("")

    head = ["# ONNX op inventory of the loom model zoo (tests/zoo/)",
            f"# {len(paths)} models under {', '.join(a.roots)}",
            "# '*': the schema the model's opset selects has since_version > 17,",
            "#      i.e. the op is new after opset 17 or changed after it.",
            ""]
    folders = sorted({m.rpartition("/")[0] for ms in union.values() for m in ms})
    tail = ["", "# ===== matrix: op_type -> number of models using it, per export folder =====",
            "# versions>17: the op's schema versions after 17 that onnx "
            f"{onnx.__version__} knows (its opsets up to {defs.onnx_opset_version()})", ""]
    w = max([18] + [len(f) + 2 for f in folders])
    tail.append(f"{'op_type':<26}" + "".join(f"{f:>{w}}" for f in folders) + "   versions>17")
    for (dom, op), ms in sorted(union.items()):
        counts = collections.Counter(m.rpartition("/")[0] for m in ms)
        later = sorted(x for x in VERSIONS.get((dom, op), ()) if x > 17)
        dom_s = "" if dom == "ai.onnx" else dom + "::"
        tail.append(f"{dom_s + op:<26}" + "".join(f"{counts.get(f, 0):>{w}}" for f in folders)
                    + f"   {later or '-'}")
    tail += ["", "# ===== union: op_type -> models =====", ""]
    for (dom, op), ms in sorted(union.items()):
        dom_s = "" if dom == "ai.onnx" else dom + "::"
        tail += models_by_folder(f"{dom_s}{op}", ms)
    tail += ["", "# ===== ops whose selected schema is newer than opset 17 =====", ""]
    for (dom, op), vs in sorted(newer.items()):
        tail.append(f"{op}: " + ", ".join(f"opset {o} -> since_version {s}" for o, s in sorted(vs))
                    + f"  ({len(union[(dom, op)])} models)")
    tail += ["", "# ===== forms (attribute/input usage) -> models =====", ""]
    for s, ms in sorted(note_union.items()):
        tail += models_by_folder(s, ms)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(head + lines + tail) + "\n")
    print(f"wrote {a.out}: {len(paths)} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
