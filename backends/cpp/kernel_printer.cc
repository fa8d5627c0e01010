#include "backends/cpp/kernel_printer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cpp/library_calls.h"
#include "backends/cpp/outline.h"
#include "ir/shape_constants.h"

namespace loom::cpp {

using cscalar::CType;
using cscalar::StorageCType;

namespace {

// Below this many iterations of the loops around a flat kernel's innermost,
// the threads share the innermost too (collapsed with them, which GCC does
// not vectorise: a linear layer's bias over [32, 8000] ran scalar, 80 us of
// a 0.62 ms language model); from it on, a row or more each.
constexpr int64_t kShareInnermostBelow = 8;

constexpr absl::string_view kParallelFor = "#pragma omp parallel for";

// A plain kernel of at most this many lines decides as it runs whether the
// threads share its outer loops, printed both ways, so that its code is the
// same for every shape (a transformer's fused LayerNorm or softmax rows
// take 80 to 130); a longer one (the steps of an unrolled recurrence, whose
// code is for one sequence length anyway) is printed once, as the plan
// decided, as the compiler parses both ways even where one is dead.
constexpr int64_t kMaxLinesDecidingThreads = 160;

// Members whose code has fewer lines stay inline where they repeat: a call
// would save g++ little (a product's one-line loom_matvec call).
constexpr int kMinOutlinedLines = 3;

}  // namespace

// Pointwise loops get
// no `omp simd`: GCC 12 at -O2 vectorised such a loop over a slice of a
// local array with aligned stores at an unaligned address (random graph
// 5374 crashed); its own vectoriser handles them.
std::vector<std::string> LoopPragmas(size_t count, bool vector, bool split,
                                     absl::string_view clauses) {
  std::vector<std::string> pragmas(count);
  if (count == 0) return pragmas;
  if (vector) pragmas.back() = absl::StrCat("#pragma omp simd", clauses);
  if (split) {
    pragmas.front() = absl::StrCat("#pragma omp parallel for", vector && count == 1 ? " simd" : "",
                                   clauses, " if(loom_split)");
  }
  return pragmas;
}

// A load's or store's place, e.g. "p3[(64*x0 + x1)]", "l1[x1]" or "acc0".
std::string KernelPrinter::RefText(const ComputeNode& node, const Ref& ref) {
  switch (ref.kind) {
    case Ref::Kind::kParam:
      return absl::StrCat(RefName(ref), "[", ToCppMarked(planner_.ParamIndex(ref), var_names_),
                          "]");
    case Ref::Kind::kLocal: {
      std::vector<std::string> names = var_names_;
      if (!local_row_.empty()) names[0] = local_row_;
      return absl::StrCat(RefName(ref), "[",
                          ToCppMarked(planner_.LocalOffset(node, ref.index, ref.id), names), "]");
    }
    default:
      return RefName(ref);
  }
}

std::string KernelPrinter::PrintStep(const ComputeNode& node, int i) {
  const ScalarOp& op = node.body[i];
  switch (op.kind) {
    case ScalarOp::Kind::kLoad: {
      const Ref& ref = plan_.load_refs[step_base_ + i];
      if (op.args.empty() || ref.kind != Ref::Kind::kParam) return RefText(node, ref);
      // Indirect: plus stride * an earlier step.
      const std::string scaled = absl::StrCat(op.stride, " * (int64_t)", Temp(op.args[0]));
      const Expr index = planner_.ParamIndex(ref);
      return absl::StrCat(
          "p", ref.id, "[",
          index->is_const(0) ? scaled : absl::StrCat(ToCppMarked(index, var_names_), " + ", scaled),
          "]");
    }
    case ScalarOp::Kind::kIndex:
      return ToCppMarked(op.index, var_names_);
    case ScalarOp::Kind::kCheckIndex:
      return cscalar::CheckIndexExpr(Temp(op.args[0]), op.extent, op.site,
                                     absl::StrCat("p", plan_.load_refs[step_base_ + i].id),
                                     helpers_);
    default:
      return cscalar::ValueStepExpr(node, i, step_base_, helpers_, cscalar::FloatExp::kPolynomial,
                                    &libm_calls_);
  }
}

int KernelPrinter::OpenLoops(const std::vector<int64_t>& extents, size_t first, int depth,
                             const std::vector<std::string>& pragmas) {
  for (size_t i = first; i < extents.size(); ++i, ++depth) {
    if (i - first < pragmas.size() && !pragmas[i - first].empty()) {
      Line(depth, pragmas[i - first]);
    }
    Line(depth, absl::StrFormat("for (int64_t x%d = 0; x%d < %s; ++x%d) {", i, i,
                                MarkShapeConstant(extents[i]), i));
  }
  return depth;
}

int KernelPrinter::CloseLoops(size_t count, int depth) {
  for (size_t i = 0; i < count; ++i) Line(--depth, "}");
  return depth;
}

void KernelPrinter::PrintBody(const ComputeNode& node, int depth) {
  for (int i = 0; i < static_cast<int>(node.body.size()); ++i) {
    Line(depth, absl::StrCat("const ", CType(node.body[i].dtype), " ", Temp(i), " = ",
                             PrintStep(node, i), ";"));
  }
}

void KernelPrinter::PrintStreamingLoop(const ComputeNode& node, int member, int depth) {
  const int inner = static_cast<int>(node.ranges.size()) - 1;
  const std::string run = absl::StrCat("x", inner, "r");  // the run's first iteration
  Line(depth, absl::StrFormat("for (int64_t %s = 0; %s < %d; %s += %d) {", run, run,
                              node.ranges.back(), run, kStreamLanes));
  Line(depth + 1, absl::StrCat("LOOM_LINE_ALIGNED float loom_lanes[", kStreamLanes, "];"));
  Line(depth + 1, absl::StrFormat("for (int64_t x%d = %s; x%d < %s + %d; ++x%d) {", inner, run,
                                  inner, run, kStreamLanes, inner));
  PrintBody(node, depth + 2);
  Line(depth + 2, absl::StrFormat("loom_lanes[x%d - %s] = %s;", inner, run, Temp(node.root)));
  Line(depth + 1, "}");
  const Ref& store = plan_.members[member].store;
  std::vector<std::string> names = var_names_;
  names[inner] = run;
  Line(depth + 1, absl::StrCat("loom_stream16(&p", store.id, "[",
                               ToCppMarked(planner_.ParamIndex(store), names), "], loom_lanes);"));
  Line(depth, "}");
}

void KernelPrinter::PrintMember(const ComputeNode& node, int member, int depth) {
  NameLoopVariables(node);
  const size_t inner_loops = node.ranges.size() - plan_.outer_loops;
  if (plan_.members[member].streams) {
    const std::vector<int64_t> around(node.ranges.begin(), node.ranges.end() - 1);
    const int inner_depth = OpenLoops(around, plan_.outer_loops, depth, {});
    PrintStreamingLoop(node, member, inner_depth);
    CloseLoops(inner_loops - 1, inner_depth);
    step_base_ += static_cast<int>(node.body.size());
    return;
  }
  if (plan_.members[member].matvec.has_value()) {
    PrintMatVec(node, member, depth, *plan_.members[member].matvec);
    step_base_ += static_cast<int>(node.body.size());
    return;
  }
  if (plan_.members[member].vectorizes) {
    const std::vector<int64_t> around(node.ranges.begin(), node.ranges.end() - 1);
    const int inner_depth = OpenLoops(around, plan_.outer_loops, depth, {});
    PrintVectorLoop(node, member, inner_depth);
    CloseLoops(inner_loops - 1, inner_depth);
    step_base_ += static_cast<int>(node.body.size());
    return;
  }
  std::vector<std::string> pragmas =
      LoopPragmas(inner_loops, /*vector=*/false, plan_.Splits(member), "");
  if (node.reduce == ReduceKind::kNone && !pragmas.empty() && pragmas.back().empty()) {
    // Inside a function OpenMP outlines, the parameters' restrict is lost:
    // GCC would need a run-time overlap check to vectorise, and at -O2 it
    // keeps such a loop scalar (layer_norm_large's last loop: 2.3 -> 1.2
    // ms for AVX2). A pointwise loop stores only its own buffer, which no
    // load of the loop overlaps but at the same position (the memory
    // plan's in-place rule).
    pragmas.back() = "#pragma GCC ivdep";
  }
  depth = OpenLoops(node.ranges, plan_.outer_loops, depth, std::move(pragmas));
  std::string result;
  if (node.reduce != ReduceKind::kNone) {
    PrintReduction(node, member, depth, result);
  } else {
    PrintBody(node, depth);
    result = Temp(node.root);
  }
  // An internal buffer with no inner loops stays in `result`.
  if (!plan_.members[member].internal || inner_loops > 0) {
    Line(depth, absl::StrCat(RefText(node, plan_.members[member].store), " = ", result, ";"));
  }
  CloseLoops(inner_loops, depth);
  step_base_ += static_cast<int>(node.body.size());
}

bool KernelPrinter::Flat(const Kernel& kernel) const {
  for (int m : kernel.nodes) {
    const ComputeNode& node = program_.nodes[m];
    if (node.ranges.size() != plan_.outer.size() || node.reduce != ReduceKind::kNone) return false;
  }
  return true;
}

// The pragmas of the outer loops, shared by the threads where `parallel`.
std::vector<std::string> KernelPrinter::OuterLoopPragmas(const Kernel& kernel,
                                                         const std::vector<int64_t>& outer,
                                                         bool parallel) {
  std::vector<std::string> pragmas(outer.size());
  if (outer.empty()) return pragmas;
  if (plan_.ordered_loop >= 0) {
    // The loops before the ordered one may be shared; it and those inside
    // it run as they are (their iterations depend on each other).
    if (parallel) pragmas.front() = ParallelFor(plan_.ordered_loop, "");
    return pragmas;
  }
  if (Flat(kernel)) {
    // Threads share the loops around the innermost one (which the compiler
    // vectorises), unless those are too few: then they share it too. GCC
    // -O2 vectorises the innermost only told that its iterations are
    // independent (the fuser keeps data from crossing them): it drops the
    // restrict of pointers read from the argument array, and would need a
    // run-time overlap check (an elementwise add of 2^20 floats stayed
    // scalar).
    const int64_t around = Product(outer, 0, outer.size() - 1);
    const bool shares_innermost = parallel && around < kShareInnermostBelow;
    if (parallel) {
      pragmas.front() = ParallelFor(shares_innermost ? outer.size() : outer.size() - 1, "");
    }
    if (!shares_innermost) {
      pragmas.back() = "#pragma GCC ivdep";
    } else if (outer.size() == 1) {
      pragmas.front() = "#pragma omp parallel for simd";
    }
  } else if (parallel) {
    pragmas.front() = ParallelFor(outer.size(), "");
  }
  return pragmas;
}

void KernelPrinter::NameLoopVariables(const ComputeNode& node) {
  while (var_names_.size() < node.ranges.size() + node.reduction_ranges.size()) {
    var_names_.push_back(absl::StrCat("x", var_names_.size()));
  }
}

void KernelPrinter::PrintMembers(const Kernel& kernel, int depth) {
  for (int m : plan_.locals) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    // A shape constant: in a template the array's length is known only as
    // it runs (a variable-length array, which GCC takes in C++ too).
    Line(depth, absl::StrCat(StorageCType(program_.buffers[node.output].dtype), " l", m, "[",
                             MarkShapeConstant(plan_.members[m].local_length), "];"));
  }
  const size_t first = body_.size();
  std::vector<std::string> codes(kernel.nodes.size());
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const size_t begin = body_.size();
    PrintMember(program_.nodes[kernel.nodes[m]], static_cast<int>(m), depth);
    codes[m] = body_.substr(begin);
  }
  if (outlined_ == nullptr) return;
  OutlineRepeatedMembers(kernel, depth, codes);
  std::vector<bool> may_roll(codes.size());
  for (size_t m = 0; m < codes.size(); ++m) may_roll[m] = MayOutline(kernel, m);
  body_.resize(first);
  body_.append(RollRepeatedMembers(
      codes, may_roll, depth, [&](absl::string_view name) { return DeclaredType(kernel, name); }));
}

bool KernelPrinter::MayOutline(const Kernel& kernel, size_t m) const {
  const Ref::Kind store = plan_.members[m].store.kind;
  const bool next_reads_its_variables =
      m + 1 < kernel.nodes.size() &&
      (plan_.members[m + 1].sum_in_vector_loop || plan_.members[m + 1].sum_from_variance);
  return !plan_.Splits(m) && !next_reads_its_variables &&
         (store == Ref::Kind::kParam || store == Ref::Kind::kLocal);
}

std::string KernelPrinter::BufferType(const Kernel& kernel, size_t m,
                                      absl::string_view name) const {
  const int id = std::stoi(std::string(name.substr(1)));
  const DType dtype = name[0] == 'l'
                          ? program_.buffers[program_.nodes[kernel.nodes[id]].output].dtype
                          : program_.buffers[plan_.params.args()[id].buffer].dtype;
  // const where the member only reads it: a step that reads the initial
  // state (a parameter) shares the function of those that read a local.
  const bool written = RefName(plan_.members[m].store) == name;
  return absl::StrCat(written ? "" : "const ", StorageCType(dtype), "*");
}

void KernelPrinter::OutlineRepeatedMembers(const Kernel& kernel, int depth,
                                           std::vector<std::string>& codes) {
  const size_t count = kernel.nodes.size();
  std::vector<RenamedCode> renamed(count);
  std::vector<std::vector<std::string>> types(count);  // of each member's buffers
  std::vector<std::string> keys(count);
  absl::flat_hash_map<std::string, int> repeats;
  for (size_t m = 0; m < count; ++m) {
    if (!MayOutline(kernel, m) || absl::c_count(codes[m], '\n') < kMinOutlinedLines) continue;
    renamed[m] = RenameNumberedNames(codes[m]);
    if (renamed[m].uses_outer_names) continue;
    for (const std::string& buffer : renamed[m].buffers) {
      types[m].push_back(BufferType(kernel, m, buffer));
    }
    keys[m] = absl::StrCat(absl::StrJoin(types[m], ","), "\n", renamed[m].text);
    ++repeats[keys[m]];
  }
  for (size_t m = 0; m < count; ++m) {
    if (keys[m].empty() || repeats[keys[m]] < 2) continue;
    std::vector<std::string> params, args = renamed[m].buffers;
    for (size_t i = 0; i < args.size(); ++i) {
      params.push_back(absl::StrCat(types[m][i], " LOOM_RESTRICT a", i));
    }
    for (int i = 0; i < plan_.outer_loops; ++i) {
      params.push_back(absl::StrCat("int64_t x", i));
      args.push_back(absl::StrCat("x", i));
    }
    // Its shape constants are arguments, which the callers pass marked: the
    // function is the same for every shape, and a shape template reads
    // them in the kernel. (A shape's own code passes them too: the function
    // may be compiled apart from its callers. The unrolled recurrences that
    // outline members ran level: lstm_l6_h256 2.0-2.8 ms against 2.2-3.1.)
    const NamedShapeConstants constants = NameShapeConstants(renamed[m].text, "loom_k");
    for (size_t i = 0; i < constants.values.size(); ++i) {
      params.push_back(absl::StrCat("int64_t loom_k", i));
      args.push_back(MarkShapeConstant(constants.values[i]));
    }
    const std::string& name =
        outlined_->Add(absl::StrJoin(params, ", "), Reindented(constants.text, depth, 1));
    codes[m] =
        absl::StrCat(std::string(2 * depth, ' '), name, "(", absl::StrJoin(args, ", "), ");\n");
  }
}

std::string KernelPrinter::DeclaredType(const Kernel& kernel, absl::string_view name) const {
  const int id = std::stoi(std::string(name.substr(1)));
  if (name[0] == 'l') {
    return absl::StrCat(
        StorageCType(program_.buffers[program_.nodes[kernel.nodes[id]].output].dtype), "*");
  }
  return ParamType(id);
}

std::string KernelPrinter::ParamType(size_t p) const {
  return absl::StrCat(plan_.params.written(p) ? "" : "const ",
                      StorageCType(program_.buffers[plan_.params.args()[p].buffer].dtype), "*");
}

std::string KernelPrinter::ParamDeclarations(bool restrict) const {
  const char* name = restrict ? " LOOM_RESTRICT p" : " p";
  std::string params;
  for (size_t p = 0; p < plan_.params.size(); ++p) {
    const std::string type = ParamType(p);
    absl::StrAppend(&params, "  ", type, name, p, " = (", type, ")a[", p, "];\n");
  }
  return params;
}

std::string KernelPrinter::Print(const Kernel& kernel) {
  const std::string params = ParamDeclarations(/*restrict=*/plan_.ordered_loop < 0);
  if (plan_.alone_matvec) {
    const ComputeNode& first = program_.nodes[kernel.nodes[0]];
    var_names_.clear();
    for (size_t i = 0; i <= first.ranges.size(); ++i) var_names_.push_back(absl::StrCat("x", i));
    return absl::StrCat(params, PrintAloneMatVec(first, *plan_.members[0].matvec));
  }
  if (plan_.team) return absl::StrCat(params, PrintTeam(kernel));
  if (plan_.row_blocks) return absl::StrCat(params, PrintRowBlocks(kernel));
  if (plan_.column_block > 0) return absl::StrCat(params, PrintColumns(kernel));
  const std::vector<std::string> pragmas =
      OuterLoopPragmas(kernel, plan_.outer, plan_.parallel_outer);
  if (plan_.may_split) return absl::StrCat(params, PrintSplitting(kernel, pragmas));
  if (plan_.streams) return absl::StrCat(params, PrintStreaming(kernel, pragmas));
  PrintOuterLoops(kernel, pragmas, 1);
  if (plan_.parallel_condition.empty() || absl::c_count(body_, '\n') > kMaxLinesDecidingThreads) {
    return absl::StrCat(params, body_);
  }
  // The threads share the loops where the kernel's shapes ask for it, as
  // it runs (the branch not taken costs nothing where the condition is
  // known to the compiler).
  body_.clear();
  Line(1, absl::StrCat("if (", plan_.parallel_condition, ") {"));
  PrintOuterLoops(kernel, OuterLoopPragmas(kernel, plan_.outer, /*parallel=*/true), 2);
  Line(1, "} else {");
  PrintOuterLoops(kernel, OuterLoopPragmas(kernel, plan_.outer, /*parallel=*/false), 2);
  Line(1, "}");
  return absl::StrCat(params, body_);
}

void KernelPrinter::PrintOuterLoops(const Kernel& kernel, const std::vector<std::string>& pragmas,
                                    int depth) {
  step_base_ = 0;
  const int inner = OpenLoops(plan_.outer, 0, depth, pragmas);
  PrintMembers(kernel, inner);
  CloseLoops(plan_.outer.size(), inner);
}

// Streaming stores are weakly ordered: each thread fences its own before
// the loop's closing barrier, once, as a fence waits for its stores to
// reach memory (one per row of softmax_large cost 0.8 ms of 4-5).
std::string KernelPrinter::PrintStreaming(const Kernel& kernel, std::vector<std::string> pragmas) {
  const bool parallel = !pragmas.empty() && absl::StartsWith(pragmas.front(), kParallelFor);
  int depth = 1;
  if (parallel) {
    Line(1, "#pragma omp parallel");
    Line(1, "{");
    pragmas.front() =
        absl::StrCat("#pragma omp for", pragmas.front().substr(kParallelFor.size()), " nowait");
    depth = 2;
  }
  const int inner_depth = OpenLoops(plan_.outer, 0, depth, pragmas);
  PrintMembers(kernel, inner_depth);
  CloseLoops(plan_.outer.size(), inner_depth);
  Line(depth, "loom_stream_fence();");
  if (parallel) Line(1, "}");
  return body_;
}

// Threads share the outer loops when the outer iterations share evenly
// among them or are four a thread or more (SharesEvenly), else the
// members' loops (3 rows on 2 threads kept one thread idle a third of the
// time). The members are one function of the outer positions, called
// from a serial loop or a parallel one: a member's parallel region inside
// the outer loop's (even one that runs alone, `if` false) was a nested
// team, which libgomp starts afresh each time (lstm_l6_h256 sharing its
// products: 100 ms instead of 1.4).
std::string KernelPrinter::PrintSplitting(const Kernel& kernel,
                                          const std::vector<std::string>& pragmas) {
  const std::vector<int64_t>& outer = plan_.outer;
  const std::string rows = MarkShapeConstant(NumElements(outer));
  Line(1, "const int loom_threads = omp_get_max_threads();");
  Line(1, absl::StrCat("const int loom_split = !(", SharesEvenly(rows), ");"));
  std::string params_of_row, row;
  for (size_t i = 0; i < outer.size(); ++i) {
    absl::StrAppend(&params_of_row, i == 0 ? "" : ", ", "int64_t x", i);
    absl::StrAppend(&row, i == 0 ? "" : ", ", "x", i);
  }
  Line(1,
       absl::StrCat("const auto loom_row = [&](", params_of_row, ") __attribute__((noinline)) {"));
  PrintMembers(kernel, 2);
  // Few rows (kSplitBelowOuter): a fence after each costs little.
  if (plan_.streams) Line(2, "loom_stream_fence();");
  Line(1, "};");
  Line(1, "if (loom_split) {");
  int depth = OpenLoops(outer, 0, 2, {});
  Line(depth, absl::StrCat("loom_row(", row, ");"));
  CloseLoops(outer.size(), depth);
  Line(1, "} else {");
  depth = OpenLoops(outer, 0, 2, pragmas);
  Line(depth, absl::StrCat("loom_row(", row, ");"));
  CloseLoops(outer.size(), depth);
  Line(1, "}");
  return body_;
}

std::string KernelPrinter::PrintRows(const Kernel& kernel, int row_loops) {
  const std::vector<int64_t>& outer = plan_.outer;
  constexpr int kDepth = 2;  // inside the function's parallel region
  if (row_loops == 1) {
    Line(kDepth, "for (int64_t x0 = loom_first; x0 < loom_last; ++x0) {");
  } else {
    Line(kDepth, "for (int64_t loom_row = loom_first; loom_row < loom_last; ++loom_row) {");
    for (int i = 0; i < row_loops; ++i) {
      const int64_t inside = Product(outer, i + 1, row_loops);
      std::string value = absl::StrCat("loom_row / ", MarkShapeConstant(inside));
      if (i > 0) absl::StrAppend(&value, " % ", MarkShapeConstant(outer[i]));
      Line(kDepth + 1, absl::StrCat("const int64_t x", i, " = ", value, ";"));
    }
  }
  std::vector<std::string> pragmas(outer.size() - row_loops);
  if (!pragmas.empty() && Flat(kernel)) pragmas.back() = "#pragma GCC ivdep";
  const int depth = OpenLoops(outer, row_loops, kDepth + 1, pragmas);
  PrintMembers(kernel, depth);
  CloseLoops(outer.size() - row_loops + 1, depth);
  if (plan_.streams) Line(kDepth, "loom_stream_fence();");
  return body_;
}

}  // namespace loom::cpp
