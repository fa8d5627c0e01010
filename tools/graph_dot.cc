#include "tools/graph_dot.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "backends/cpp/subprocess.h"
#include "ir/dtype.h"
#include "ir/file_io.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

constexpr int kNodesListed = 10;  // per box; the rest are counted

// `text` inside a double-quoted dot string, its lines left-aligned.
std::string Quoted(absl::string_view text) {
  return absl::StrCat(
      "\"", absl::StrReplaceAll(text, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\l"}}), "\\l\"");
}

std::string Extents(const std::vector<int64_t>& extents) {
  return absl::StrCat("[", absl::StrJoin(extents, ","), "]");
}

std::string Bytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20)) return absl::StrCat(bytes >> 20, " MiB");
  if (bytes >= 1024) return absl::StrCat(bytes >> 10, " KiB");
  return absl::StrCat(bytes, " B");
}

std::string BufferText(const Buffer& buffer) {
  return absl::StrCat(buffer.name, " ", DTypeName(buffer.dtype), Extents(buffer.sizes), " ",
                      Bytes(NumBytes(buffer.dtype, buffer.sizes)));
}

// What the code of function `name` in `text` does, read from the helpers it
// calls and its pragmas.
std::string CodeTraits(const std::string& text, const std::string& name) {
  const size_t start = text.find(absl::StrCat(" ", name, "("));
  if (start == std::string::npos) return "";
  const size_t end = text.find("\n}\n", start);
  const absl::string_view body(text.data() + start,
                               (end == std::string::npos ? text.size() : end) - start);
  std::vector<std::string> traits;
  static constexpr std::pair<const char*, const char*> kMarkers[] = {
      {"omp parallel", "threads"},      {"loom_load16", "explicit vectors"},
      {"ivdep", "vector loops"},        {"omp simd", "vector loops"},
      {"loom_matvec", "matrix-vector"}, {"dnnl_sgemm", "oneDNN gemm"},
      {"cblas_dgemm", "CBLAS gemm"},    {"loom_stream16", "streaming stores"},
  };
  for (const auto& [marker, trait] : kMarkers) {
    if (absl::StrContains(body, marker) && absl::c_find(traits, trait) == traits.end()) {
      traits.push_back(trait);
    }
  }
  return absl::StrJoin(traits, ", ");
}

std::string NodeText(const ComputeNode& node) {
  std::string text = absl::StrCat(node.name, " ", Extents(node.ranges));
  if (!node.reduction_ranges.empty()) {
    absl::StrAppend(&text, " reduce ", Extents(node.reduction_ranges));
  }
  if (node.extern_op == ExternOp::kGemm) absl::StrAppend(&text, " (gemm call)");
  if (node.extern_op == ExternOp::kConv) absl::StrAppend(&text, " (conv call)");
  return text;
}

// The kernels grouped by the function they call: one box each.
struct Box {
  std::string id;
  std::vector<int> kernels;
};

// The schedule's kernels as boxes, one per function they share, and the box
// of every kernel, compute node and buffer writer (-1: none).
struct Boxes {
  std::vector<Box> boxes;
  std::vector<int> of_kernel, of_node, of_writer;
};

// The function that runs kernel k, or -1 (no source, or a library call).
int KernelFunction(const GeneratedSource* source, int k) {
  if (source == nullptr) return -1;
  const int launch = source->launches.LaunchOfKernel(k);
  return launch >= 0 ? std::max(source->launches.function[launch], -1) : -1;
}

Boxes GroupKernels(const LoopProgram& program, const Schedule& schedule,
                   const GeneratedSource* source) {
  Boxes b;
  std::map<int, int> box_of_function;
  b.of_kernel.resize(schedule.kernels.size());
  for (size_t k = 0; k < schedule.kernels.size(); ++k) {
    // A kernel without a shared function (no source yet, or a library
    // call) is a box of its own.
    const int function = KernelFunction(source, static_cast<int>(k));
    const int box_key = function >= 0 ? function : -1 - static_cast<int>(k);
    auto [it, added] = box_of_function.try_emplace(box_key, static_cast<int>(b.boxes.size()));
    if (added) b.boxes.push_back({absl::StrCat("k", k), {}});
    b.boxes[it->second].kernels.push_back(static_cast<int>(k));
    b.of_kernel[k] = it->second;
  }
  b.of_node.assign(program.nodes.size(), -1);
  b.of_writer.assign(program.buffers.size(), -1);
  for (size_t k = 0; k < schedule.kernels.size(); ++k) {
    for (int n : schedule.kernels[k].nodes) {
      b.of_node[n] = b.of_kernel[k];
      b.of_writer[program.nodes[n].output] = b.of_kernel[k];
    }
  }
  return b;
}

// The kernels that run with kernel k in one launch (a product and its
// epilogue), k first; just k without a source.
std::vector<int> LaunchKernels(const GeneratedSource* source, int k) {
  const int launch = source == nullptr ? -1 : source->launches.LaunchOfKernel(k);
  if (launch < 0) return {k};
  const std::vector<int32_t>& offsets = source->launches.kernel_offsets;
  std::vector<int> kernels;
  for (int32_t i = offsets[launch]; i < offsets[launch + 1]; ++i) kernels.push_back(i);
  return kernels;
}

// A box's label: its function (with the traits of its code) or kernel, how
// many launches call it, its outer loops and the first of the nodes of its
// first launch.
std::string BoxLabel(const Box& box, const LoopProgram& program, const Schedule& schedule,
                     const GeneratedSource* source) {
  const Kernel& first = schedule.kernels[box.kernels.front()];
  const ComputeNode& lead = program.nodes[first.nodes.front()];
  std::vector<int> nodes;
  size_t kept_inside = 0;
  for (int k : LaunchKernels(source, box.kernels.front())) {
    nodes.insert(nodes.end(), schedule.kernels[k].nodes.begin(), schedule.kernels[k].nodes.end());
    kept_inside += schedule.kernels[k].internal.size();
  }
  std::string label;
  if (const int f = KernelFunction(source, box.kernels.front()); f >= 0) {
    const std::string& function = source->functions[f];
    absl::StrAppend(&label, function);
    const std::string traits = CodeTraits(source->text, function);
    if (!traits.empty()) absl::StrAppend(&label, " (", traits, ")");
  } else {
    absl::StrAppend(&label, first.name);
  }
  std::set<int> launches;  // without a source, a kernel each
  for (int k : box.kernels) {
    launches.insert(source == nullptr ? k : source->launches.LaunchOfKernel(k));
  }
  if (launches.size() > 1) absl::StrAppend(&label, ", called by ", launches.size(), " launches");
  const std::vector<int64_t> outer(lead.ranges.begin(), lead.ranges.begin() + first.outer_loops);
  absl::StrAppend(
      &label, "\nouter loops ", Extents(outer),
      first.ordered_loop < 0 ? "" : absl::StrCat(" (", outer[first.ordered_loop], " in order)"),
      ", ", nodes.size(), " nodes",
      kept_inside == 0 ? "" : absl::StrCat(", ", kept_inside, " kept inside"));
  for (int i = 0; i < static_cast<int>(nodes.size()) && i < kNodesListed; ++i) {
    absl::StrAppend(&label, "\n  ", NodeText(program.nodes[nodes[i]]));
  }
  if (nodes.size() > kNodesListed) {
    absl::StrAppend(&label, "\n  ... ", nodes.size() - kNodesListed, " more");
  }
  return label;
}

// Buffers: from the box (or model input) that writes one to each box that
// reads it, several between the same two boxes as one edge; with the model's
// inputs and outputs as ellipses.
std::string FlowEdges(const Boxes& b, const LoopProgram& program, const Schedule& schedule) {
  std::map<std::pair<std::string, std::string>, std::vector<BufferId>> flows;
  std::set<BufferId> inputs;
  for (size_t k = 0; k < schedule.kernels.size(); ++k) {
    const std::string& to = b.boxes[b.of_kernel[k]].id;
    for (int n : schedule.kernels[k].nodes) {
      for (const ScalarOp& op : program.nodes[n].body) {
        if (op.kind != ScalarOp::Kind::kLoad) continue;
        const Buffer& buffer = program.buffers[op.buffer];
        if (buffer.kind == BufferKind::kWeight) continue;
        std::string from;
        if (buffer.kind == BufferKind::kInput) {
          from = absl::StrCat("in", op.buffer);
          inputs.insert(op.buffer);
        } else if (b.of_writer[op.buffer] >= 0 && b.boxes[b.of_writer[op.buffer]].id != to) {
          from = b.boxes[b.of_writer[op.buffer]].id;
        } else {
          continue;
        }
        std::vector<BufferId>& buffers = flows[{from, to}];
        if (absl::c_find(buffers, op.buffer) == buffers.end()) buffers.push_back(op.buffer);
      }
    }
  }
  std::string dot;
  for (BufferId id : inputs) {
    absl::StrAppend(&dot, "  in", id,
                    " [shape=ellipse, label=", Quoted(BufferText(program.buffers[id])), "];\n");
  }
  for (BufferId id : program.outputs) {
    absl::StrAppend(&dot, "  out", id,
                    " [shape=ellipse, label=", Quoted(BufferText(program.buffers[id])), "];\n");
    if (b.of_writer[id] >= 0) flows[{b.boxes[b.of_writer[id]].id, absl::StrCat("out", id)}];
  }
  for (const auto& [ends, buffers] : flows) {
    std::string label;
    if (buffers.size() == 1) {
      label = BufferText(program.buffers[buffers.front()]);
    } else if (!buffers.empty()) {
      int64_t bytes = 0;
      for (BufferId id : buffers) {
        bytes += NumBytes(program.buffers[id].dtype, program.buffers[id].sizes);
      }
      label = absl::StrCat(buffers.size(), " buffers, ", Bytes(bytes));
    }
    absl::StrAppend(&dot, "  ", ends.first, " -> ", ends.second,
                    label.empty() ? "" : absl::StrCat(" [label=", Quoted(label), "]"), ";\n");
  }
  return dot;
}

// Refused fusions between boxes, one edge per pair of boxes and reason.
std::string RefusalEdges(const Boxes& b, const Schedule& schedule) {
  std::map<std::tuple<int, int, FusionReason>, int> refusals;
  for (const FusionDecision& decision : schedule.decisions) {
    if (decision.fused() || decision.producer < 0 || decision.consumer < 0) continue;
    const int from = b.of_node[decision.producer], to = b.of_node[decision.consumer];
    if (from < 0 || to < 0 || from == to) continue;
    ++refusals[{from, to, decision.reason}];
  }
  std::string dot;
  for (const auto& [key, count] : refusals) {
    const auto& [from, to, reason] = key;
    const std::string label = absl::StrCat("not fused: ", FusionReasonText(reason),
                                           count > 1 ? absl::StrCat(" (x", count, ")") : "");
    absl::StrAppend(&dot, "  ", b.boxes[from].id, " -> ", b.boxes[to].id,
                    " [style=dashed, color=gray40, fontcolor=gray40, constraint=false, label=",
                    Quoted(label), "];\n");
  }
  return dot;
}

}  // namespace

std::string ScheduleDot(const Module& module) {
  if (!module.loops.has_value() || !module.schedule.has_value()) {
    return "digraph loom {\n  label=\"no schedule\";\n}\n";
  }
  const LoopProgram& program = *module.loops;
  const Schedule& schedule = *module.schedule;
  const GeneratedSource* source = module.source.has_value() ? &*module.source : nullptr;
  const Boxes boxes = GroupKernels(program, schedule, source);
  std::string dot =
      "digraph loom {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
      "  edge [fontname=\"monospace\", fontsize=9];\n";
  for (const Box& box : boxes.boxes) {
    absl::StrAppend(&dot, "  ", box.id,
                    " [label=", Quoted(BoxLabel(box, program, schedule, source)), "];\n");
  }
  absl::StrAppend(&dot, FlowEdges(boxes, program, schedule), RefusalEdges(boxes, schedule), "}\n");
  return dot;
}

absl::Status WriteScheduleGraph(const Module& module, const std::string& path) {
  const size_t dot_at = path.rfind('.');
  const std::string format = dot_at == std::string::npos ? "" : path.substr(dot_at + 1);
  if (format != "dot" && format != "svg" && format != "png" && format != "pdf") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": --graph writes .dot, .svg, .png or .pdf, not '", format, "'"));
  }
  const std::string text_path = format == "dot" ? path : absl::StrCat(path, ".dot");
  LOOM_RETURN_IF_ERROR(WriteFileBytes(text_path, ScheduleDot(module)));
  if (format == "dot") return absl::OkStatus();
  const std::string dir =
      path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  absl::StatusOr<cpp::ProcessResult> rendered =
      cpp::RunProcess({"dot", absl::StrCat("-T", format), text_path, "-o", path}, dir);
  std::remove(text_path.c_str());
  if (!rendered.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("Graphviz's dot could not be run to draw ",
                                                      path,
                                                      " (install graphviz, or ask for a "
                                                      ".dot file): ",
                                                      rendered.status().message()));
  }
  if (!rendered->Succeeded()) {
    return absl::InternalError(absl::StrCat("dot failed drawing ", path, " (", rendered->Ending(),
                                            "): ", rendered->output));
  }
  return absl::OkStatus();
}

}  // namespace loom
