#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpp/kernel_printer.h"
#include "ir/shape_constants.h"

namespace loom::cpp {

using cscalar::CType;

namespace {

// Max and min fold a plain maximum, which vector lanes can share, and set
// the flag `nan` when a value is NaN (the result is then NaN, as in the
// interpreter); integers need no flag.
std::string ExtremeUpdate(ReduceKind kind, DType dtype, const std::string& value,
                          const std::string& acc, const std::string& nan) {
  return absl::StrCat(
      acc, " = ", value, kind == ReduceKind::kMax ? " > " : " < ", acc, " ? ", value, " : ", acc,
      ";", IsFloat(dtype) ? absl::StrCat(" ", nan, " |= ", value, " != ", value, ";") : "");
}

// Welford's update runs in lanes over the innermost reduction loop: one
// vector of floats on AVX-512, or four when that loop is a multiple of four
// vectors. A lane's running mean waits on its previous update (a
// subtraction, then a multiply-add), so one vector leaves the units idle
// most of the time; four independent ones keep them busy.
constexpr int kWelfordLanes = 16;
constexpr int kWelfordChains = 4;
int WelfordLanes(int64_t extent) {
  const int chains = kWelfordLanes * kWelfordChains;
  return extent % chains == 0 ? chains : kWelfordLanes;
}

// The row-major position among the reduction loops' iterations, e.g.
// "x2 * 5 + x3" for reduction loops x2 in [0, 4), x3 in [0, 5).
std::string ReductionPosition(const ComputeNode& node) {
  const int first = static_cast<int>(node.ranges.size());
  std::string position = absl::StrCat("x", first);
  for (size_t i = 1; i < node.reduction_ranges.size(); ++i) {
    position = absl::StrCat("(", position, ") * ", node.reduction_ranges[i], " + x",
                            first + static_cast<int>(i));
  }
  return position;
}

// The variables of a Welford member (KernelPrinter::PrintWelford): the C
// type of its values, its running mean, M2 and count, and its variance.
struct WelfordVars {
  const char* type;
  std::string mean, m2, count, acc;
};

WelfordVars WelfordVarsOf(const LoopProgram& program, const ComputeNode& node, int member) {
  return {CType(program.buffers[node.output].dtype), absl::StrCat("wmean", member),
          absl::StrCat("wm2", member), absl::StrCat("wn", member), absl::StrCat("acc", member)};
}

// The names of a block of columns' variables: its first column, its
// count of columns and the lane.
struct ColumnNames {
  std::string first, count, lane;
};

ColumnNames ColumnNamesOf(int column) {
  const std::string x = absl::StrCat("x", column);
  return {x + "b", x + "n", x + "j"};
}

}  // namespace

// A member's reduction loops and body; `result` becomes the folded value.
// Sums and products over floats may be reassociated into vector lanes.
void KernelPrinter::PrintReduction(const ComputeNode& node, int member, int depth,
                                   std::string& result) {
  result = absl::StrCat("acc", member);
  if (plan_.members[member].sum_in_vector_loop) return;  // the previous member's loop summed
  if (plan_.members[member].vector_extreme) return PrintVectorExtreme(node, member, depth);
  if (node.reduce == ReduceKind::kVar) return PrintWelford(node, member, depth);
  if (plan_.members[member].sum_from_variance) {
    const DType type = program_.buffers[node.output].dtype;
    Line(depth,
         absl::StrCat(CType(type), " ", result, " = wmean", member - 1, " * ",
                      cscalar::Literal(
                          Product(node.reduction_ranges, 0, node.reduction_ranges.size()), type),
                      ";"));
    return;
  }
  const std::vector<int64_t> ranges = node.AllRanges();
  const DType out_type = program_.buffers[node.output].dtype;
  const bool arg_reduce = IsArgReduce(node.reduce);
  // An arg reduction folds the root's values and stores a position.
  const DType acc_type = arg_reduce ? node.body[node.root].dtype : out_type;
  const std::string acc = absl::StrCat("acc", member);
  const std::string arg = absl::StrCat("arg", member);
  Line(depth, absl::StrCat(CType(acc_type), " ", acc, " = ",
                           cscalar::ReduceInit(node.reduce, acc_type), ";"));
  if (arg_reduce) Line(depth, absl::StrCat("int64_t ", arg, " = 0;"));
  // Max and min run in vector lanes as a plain maximum plus a flag that
  // any NaN was seen (which then is the result, as in ReduceUpdate).
  const bool extreme = node.reduce == ReduceKind::kMax || node.reduce == ReduceKind::kMin;
  const bool is_float = IsFloat(acc_type);
  std::string clauses;
  if (node.reduce == ReduceKind::kSum || node.reduce == ReduceKind::kProd) {
    clauses =
        absl::StrCat(" reduction(", node.reduce == ReduceKind::kSum ? "+" : "*", ":", acc, ")");
  } else if (extreme) {
    clauses = absl::StrCat(" reduction(", node.reduce == ReduceKind::kMax ? "max" : "min", ":", acc,
                           ")", is_float ? absl::StrCat(" reduction(|:", arg, ")") : "");
    if (is_float) Line(depth, absl::StrCat("int ", arg, " = 0;"));
  }
  // Split over the threads only when no inner loop already is.
  const bool split = !clauses.empty() && plan_.Splits(member) &&
                     node.ranges.size() == static_cast<size_t>(plan_.outer_loops);
  depth = OpenLoops(ranges, node.ranges.size(), depth,
                    LoopPragmas(node.reduction_ranges.size(), !clauses.empty(), split, clauses));
  PrintBody(node, depth);
  Line(depth, extreme ? ExtremeUpdate(node.reduce, acc_type, Temp(node.root), acc, arg)
                      : cscalar::ReduceUpdate(node.reduce, acc_type, Temp(node.root),
                                              arg_reduce ? ReductionPosition(node) : "", acc, arg));
  depth = CloseLoops(node.reduction_ranges.size(), depth);
  if (extreme && is_float) {
    Line(depth, absl::StrCat("if (", arg, ") ", acc, " = ", cscalar::Literal(NAN, acc_type), ";"));
  }
  result = arg_reduce ? arg : acc;
}

// Welford's update of a running mean and M2 by `value`.
void KernelPrinter::PrintRunningUpdate(const char* type, const std::string& mean,
                                       const std::string& m2, const std::string& count,
                                       const std::string& value, int depth) {
  Line(depth, absl::StrCat("const ", type, " ", mean, "_d = ", value, " - ", mean, ";"));
  Line(depth, absl::StrCat(mean, " += ", mean, "_d / (", type, ")++", count, ";"));
  Line(depth, absl::StrCat(m2, " += ", mean, "_d * (", value, " - ", mean, ");"));
}

void KernelPrinter::PrintWelfordChains(const ComputeNode& node, int member, int depth, int chains) {
  const auto [t, mean, m2, count, acc] = WelfordVarsOf(program_, node, member);
  const int inner = static_cast<int>(node.ranges.size() + node.reduction_ranges.size()) - 1;
  const std::string value = Temp(node.root);
  Line(depth, absl::StrCat("const loom_f32v16 ", count, "_rv = loom_splat16(", count, "_r);"));
  for (int c = 0; c < chains; ++c) {
    Line(depth, "{");
    Line(depth + 1,
         absl::StrFormat("const int64_t x%d = x%dr + %d;", inner, inner, c * kVectorLanes));
    for (int i = 0; i < static_cast<int>(node.body.size()); ++i) {
      Line(depth + 1,
           absl::StrCat("const loom_f32v16 ", Temp(i), " = ", PrintVectorStep(node, i), ";"));
    }
    const std::string m = absl::StrCat(mean, "v", c);
    Line(depth + 1, absl::StrCat("const loom_f32v16 ", mean, "_d = ", value, " - ", m, ";"));
    Line(depth + 1, absl::StrCat(m, " += ", mean, "_d * ", count, "_rv;"));
    Line(depth + 1, absl::StrCat(m2, "v", c, " += ", mean, "_d * (", value, " - ", m, ");"));
    Line(depth, "}");
  }
}

void KernelPrinter::PrintWelford(const ComputeNode& node, int member, int depth) {
  const auto [t, mean, m2, count, acc] = WelfordVarsOf(program_, node, member);
  const std::vector<int64_t> ranges = node.AllRanges();
  const int64_t inner_extent = ranges.back();
  // Chains of explicit vectors where the body allows them, else GCC's
  // vectors over lane arrays.
  const int chains = plan_.members[member].welford_chains;
  const int lanes = chains > 0 ? chains * kVectorLanes : WelfordLanes(inner_extent);
  const int64_t full = inner_extent / lanes * lanes;  // the lanes' part
  Line(depth, absl::StrCat("int64_t ", count, " = 0;"));
  if (full == 0) {  // too few values for the lanes: one running update
    Line(depth, absl::StrCat(t, " ", mean, " = 0, ", m2, " = 0;"));
    const int d = OpenLoops(ranges, node.ranges.size(), depth, {});
    PrintBody(node, d);
    PrintRunningUpdate(t, mean, m2, count, Temp(node.root), d);
    CloseLoops(node.reduction_ranges.size(), d);
    Line(depth, absl::StrCat(t, " ", acc, " = ", m2, " / (", t, ")", count, ";"));
    return;
  }
  PrintWelfordLoops(node, member, depth, lanes, full);
  PrintWelfordJoin(node, member, depth, lanes, full < inner_extent);
}

// Lane j takes the values at positions j mod `lanes` of the innermost
// loop, so every lane has taken `count` values; the rest of that loop (its
// tail) has a running update of its own. The lanes' loop is the vector
// loop (`omp simd`: GCC alone keeps the lanes in memory); the arrays are
// aligned for its whole-vector stores.
void KernelPrinter::PrintWelfordLoops(const ComputeNode& node, int member, int depth, int lanes,
                                      int64_t full) {
  const auto [t, mean, m2, count, acc] = WelfordVarsOf(program_, node, member);
  const std::string value = Temp(node.root);
  const std::vector<int64_t> ranges = node.AllRanges();
  const int inner = static_cast<int>(ranges.size()) - 1;
  const int64_t inner_extent = ranges.back();
  const int chains = plan_.members[member].welford_chains;
  const bool tail = full < inner_extent;
  for (const std::string& array : {mean, m2}) {
    Line(depth, absl::StrCat(t, " ", array, "s[", lanes, "] __attribute__((aligned(64))) = {0};"));
    for (int c = 0; c < chains; ++c) {
      Line(depth, absl::StrFormat("loom_f32v16 %sv%d = loom_splat16(0.0f);", array, c));
    }
  }
  if (tail) {
    Line(depth, absl::StrCat("int64_t ", count, "t = 0;"));
    Line(depth, absl::StrCat(t, " ", mean, "t = 0, ", m2, "t = 0;"));
  }
  const std::vector<int64_t> around(ranges.begin(), ranges.end() - 1);
  const int d = OpenLoops(around, node.ranges.size(), depth, {});
  const std::string run = absl::StrCat("x", inner, "r");
  Line(d, absl::StrFormat("for (int64_t %s = 0; %s < %s; %s += %d) {", run, run,
                          MarkShapeConstant(full), run, lanes));
  Line(d + 1, absl::StrCat("const ", t, " ", count, "_r = (", t, ")1 / (", t, ")++", count, ";"));
  if (chains > 0) {
    PrintWelfordChains(node, member, d + 1, chains);
  } else {
    const std::string j = absl::StrCat("x", inner, "j");
    Line(d + 1, "#pragma omp simd");
    Line(d + 1, absl::StrFormat("for (int64_t %s = 0; %s < %d; ++%s) {", j, j, lanes, j));
    Line(d + 2, absl::StrFormat("const int64_t x%d = %s + %s;", inner, run, j));
    PrintBody(node, d + 2);
    const std::string lane = absl::StrCat("[", j, "]");
    Line(d + 2, absl::StrCat("const ", t, " ", mean, "_d = ", value, " - ", mean, "s", lane, ";"));
    Line(d + 2, absl::StrCat(mean, "s", lane, " += ", mean, "_d * ", count, "_r;"));
    Line(d + 2,
         absl::StrCat(m2, "s", lane, " += ", mean, "_d * (", value, " - ", mean, "s", lane, ");"));
    Line(d + 1, "}");
  }
  Line(d, "}");
  if (tail) {
    Line(d,
         absl::StrFormat("for (int64_t x%d = %s; x%d < %s; ++x%d) {", inner,
                         MarkShapeConstant(full), inner, MarkShapeConstant(inner_extent), inner));
    PrintBody(node, d + 1);
    PrintRunningUpdate(t, mean + "t", m2 + "t", count + "t", value, d + 1);
    Line(d, "}");
  }
  CloseLoops(around.size() - node.ranges.size(), d);
}

void KernelPrinter::PrintWelfordJoin(const ComputeNode& node, int member, int depth, int lanes,
                                     bool tail) {
  const auto [t, mean, m2, count, acc] = WelfordVarsOf(program_, node, member);
  for (int c = 0; c < plan_.members[member].welford_chains; ++c) {
    Line(depth, absl::StrFormat("loom_store16(&%ss[%d], %sv%d);", mean, c * kVectorLanes, mean, c));
    Line(depth, absl::StrFormat("loom_store16(&%ss[%d], %sv%d);", m2, c * kVectorLanes, m2, c));
  }
  // Chan et al. in a tree: lanes j and j + w, each of n values, join into
  // lane j with equal weights (n * n / (n + n) = n / 2), w halving and n
  // doubling: log2(lanes) short vector steps, not lanes - 1 dependent
  // scalar ones.
  const std::string half = count + "_h";
  Line(depth, absl::StrCat(t, " ", half, " = (", t, ")", count, " * (", t, ")0.5;"));
  Line(depth, absl::StrFormat("for (int w = %d; w > 0; w /= 2, %s *= 2) {", lanes / 2, half));
  Line(depth + 1, "for (int j = 0; j < w; ++j) {");
  Line(depth + 2,
       absl::StrCat("const ", t, " ", mean, "_d = ", mean, "s[j + w] - ", mean, "s[j];"));
  Line(depth + 2, absl::StrCat(mean, "s[j] += ", mean, "_d * (", t, ")0.5;"));
  Line(depth + 2,
       absl::StrCat(m2, "s[j] += ", m2, "s[j + w] + ", mean, "_d * ", mean, "_d * ", half, ";"));
  Line(depth + 1, "}");
  Line(depth, "}");
  Line(depth, absl::StrCat(t, " ", mean, " = ", mean, "s[0], ", m2, " = ", m2, "s[0];"));
  if (!tail) {
    Line(depth, absl::StrCat(t, " ", acc, " = ", m2, " / (", t, ")(", count, " * ", lanes, ");"));
    return;
  }
  // Then the tail joins the lanes.
  const std::string na = count + "a", nb = count + "b";
  Line(depth, absl::StrCat("const ", t, " ", na, " = (", t, ")(", count, " * ", lanes, "), ", nb,
                           " = (", t, ")", count, "t;"));
  Line(depth, absl::StrCat("if (", nb, " > 0) {"));
  Line(depth + 1, absl::StrCat("const ", t, " ", mean, "_d = ", mean, "t - ", mean, ";"));
  Line(depth + 1, absl::StrCat(mean, " += ", mean, "_d * ", nb, " / (", na, " + ", nb, ");"));
  Line(depth + 1, absl::StrCat(m2, " += ", m2, "t + ", mean, "_d * ", mean, "_d * ", na, " * ", nb,
                               " / (", na, " + ", nb, ");"));
  Line(depth, "}");
  Line(depth, absl::StrCat(t, " ", acc, " = ", m2, " / (", na, " + ", nb, ");"));
}

std::string KernelPrinter::PrintColumns(const Kernel& kernel) {
  const int column = plan_.outer_loops - 1;
  const int64_t columns = plan_.outer.back();
  const int64_t block = plan_.column_block;
  const auto [first, count, lane] = ColumnNamesOf(column);
  const std::vector<int64_t> around(plan_.outer.begin(), plan_.outer.end() - 1);
  if (plan_.parallel_outer) Line(1, ParallelFor(around.size() + 1, ""));
  int depth = OpenLoops(around, 0, 1, {});
  Line(depth, absl::StrFormat("for (int64_t %s = 0; %s < %d; %s += %d) {", first, first, columns,
                              first, block));
  ++depth;
  // A constant count where every block is whole, for the vectoriser.
  if (columns % block == 0) {
    Line(depth, absl::StrFormat("constexpr int64_t %s = %d;", count, block));
  } else {
    Line(depth, absl::StrFormat("const int64_t %s = %d - %s < %d ? %d - %s : %d;", count, columns,
                                first, block, columns, first, block));
  }
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    NameLoopVariables(node);
    if (node.reduce == ReduceKind::kNone) continue;
    step_base_ = plan_.members[m].first_step;
    PrintColumnReduction(node, static_cast<int>(m), depth);
  }
  // GCC vectorises the lanes' loop told that its iterations are independent
  // (see OuterLoopPragmas).
  Line(depth, "#pragma GCC ivdep");
  Line(depth, absl::StrFormat("for (int64_t %s = 0; %s < %s; ++%s) {", lane, lane, count, lane));
  Line(depth + 1, absl::StrFormat("const int64_t x%d = %s + %s;", column, first, lane));
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    const CppMemberPlan& member = plan_.members[m];
    step_base_ = member.first_step;
    std::string result = Temp(node.root);
    if (node.reduce == ReduceKind::kNone) {
      PrintBody(node, depth + 1);
    } else {
      const DType type = program_.buffers[node.output].dtype;
      result = absl::StrCat("acc", m);
      Line(depth + 1, absl::StrCat(CType(type), " ", result, " = ", result, "s[", lane, "];"));
      if ((node.reduce == ReduceKind::kMax || node.reduce == ReduceKind::kMin) && IsFloat(type)) {
        Line(depth + 1, absl::StrCat("if (nan", m, "s[", lane, "]) ", result, " = ",
                                     cscalar::Literal(NAN, type), ";"));
      }
    }
    if (!member.internal) {
      Line(depth + 1, absl::StrCat(RefText(node, member.store), " = ", result, ";"));
    }
  }
  Line(depth, "}");
  CloseLoops(around.size() + 1, depth);
  return body_;
}

void KernelPrinter::PrintColumnReduction(const ComputeNode& node, int member, int depth) {
  const int column = plan_.outer_loops - 1;
  const auto [first, count, lane] = ColumnNamesOf(column);
  const DType type = program_.buffers[node.output].dtype;
  const bool nan_flags =
      (node.reduce == ReduceKind::kMax || node.reduce == ReduceKind::kMin) && IsFloat(type);
  const std::string accs = absl::StrCat("acc", member, "s");
  const std::string nans = absl::StrCat("nan", member, "s");
  const std::string array_size =
      absl::StrCat("[", plan_.column_block, "] __attribute__((aligned(64)));");
  Line(depth, absl::StrCat(CType(type), " ", accs, array_size));
  if (nan_flags) Line(depth, absl::StrCat("int ", nans, array_size));
  Line(depth, absl::StrFormat("for (int64_t %s = 0; %s < %s; ++%s) {", lane, lane, count, lane));
  Line(depth + 1,
       absl::StrCat(accs, "[", lane, "] = ", cscalar::ReduceInit(node.reduce, type), ";"));
  if (nan_flags) Line(depth + 1, absl::StrCat(nans, "[", lane, "] = 0;"));
  Line(depth, "}");
  const int d = OpenLoops(node.AllRanges(), node.ranges.size(), depth, {});
  Line(d, "#pragma omp simd");
  Line(d, absl::StrFormat("for (int64_t %s = 0; %s < %s; ++%s) {", lane, lane, count, lane));
  Line(d + 1, absl::StrFormat("const int64_t x%d = %s + %s;", column, first, lane));
  PrintBody(node, d + 1);
  const std::string acc = absl::StrCat(accs, "[", lane, "]");
  Line(d + 1, nan_flags ? ExtremeUpdate(node.reduce, type, Temp(node.root), acc,
                                        absl::StrCat(nans, "[", lane, "]"))
                        : cscalar::ReduceUpdate(node.reduce, type, Temp(node.root), "", acc, ""));
  Line(d, "}");
  CloseLoops(node.reduction_ranges.size(), d);
}

void KernelPrinter::PrintVectorExtreme(const ComputeNode& node, int member, int depth) {
  const bool max = node.reduce == ReduceKind::kMax;
  const std::string acc = absl::StrCat("acc", member);
  const std::string nan = absl::StrCat("arg", member);
  const std::string chain = absl::StrCat("extreme", member, "_");
  const std::string x = var_names_[node.ranges.size()];
  const std::string block = absl::StrCat(x, "b");
  const int64_t extent = node.reduction_ranges[0];
  // As in PrintVectorLoop, an expression of the extent.
  const std::string full =
      absl::StrCat(MarkShapeConstant(extent), " / ", kExtremeBlock, " * ", kExtremeBlock);
  Line(depth,
       absl::StrCat("float ", acc, " = ", cscalar::ReduceInit(node.reduce, DType::kF32), ";"));
  const std::string nan_lanes = absl::StrCat("nan_lanes", member);
  Line(depth, absl::StrCat("int ", nan, " = 0;"));
  Line(depth, absl::StrCat("loom_nanmask16 ", nan_lanes, " = {};"));
  std::vector<std::string> chains;
  for (int c = 0; c < kExtremeChains; ++c) {
    chains.push_back(absl::StrCat(chain, c));
    Line(depth, absl::StrCat("loom_f32v16 ", chains[c], " = loom_splat16(", acc, ");"));
  }
  Line(depth, absl::StrFormat("for (int64_t %s = 0; %s < %s; %s += %d) {", block, block, full,
                              block, kExtremeBlock));
  for (int c = 0; c < kExtremeChains; ++c) {
    Line(depth + 1, "{");
    Line(depth + 2, absl::StrCat("const int64_t ", x, " = ", block, " + ", c * kVectorLanes, ";"));
    for (int i = 0; i < static_cast<int>(node.body.size()); ++i) {
      Line(depth + 2,
           absl::StrCat("const loom_f32v16 ", Temp(i), " = ", PrintVectorStep(node, i), ";"));
    }
    Line(depth + 2, absl::StrCat(chains[c], " = loom_", max ? "max" : "min", "16(", Temp(node.root),
                                 ", ", chains[c], ");"));
    Line(depth + 2, absl::StrCat(nan_lanes, " |= loom_nan_lanes16(", Temp(node.root), ");"));
    Line(depth + 1, "}");
  }
  Line(depth, "}");
  std::string lanes = chains[0];
  for (int c = 1; c < kExtremeChains; ++c) {
    lanes = absl::StrCat("loom_", max ? "max" : "min", "16(", lanes, ", ", chains[c], ")");
  }
  Line(depth, absl::StrCat(acc, " = loom_h", max ? "max" : "min", "16(", lanes, ");"));
  // The remainder, also where there is none (as in PrintVectorLoop), in
  // the compiler's vectors: a row shorter than a block runs only here.
  Line(depth, absl::StrCat("#pragma omp simd reduction(", max ? "max" : "min", ":", acc,
                           ") reduction(|:", nan, ")"));
  Line(depth, absl::StrFormat("for (int64_t %s = %s; %s < %s; ++%s) {", x, full, x,
                              MarkShapeConstant(extent), x));
  PrintBody(node, depth + 1);
  Line(depth + 1, ExtremeUpdate(node.reduce, DType::kF32, Temp(node.root), acc, nan));
  Line(depth, "}");
  Line(depth, absl::StrCat("if (", nan, " | loom_any16(", nan_lanes, ")) ", acc, " = ",
                           cscalar::Literal(NAN, DType::kF32), ";"));
}

}  // namespace loom::cpp
