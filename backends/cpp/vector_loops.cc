#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpp/kernel_printer.h"
#include "ir/expr_analysis.h"
#include "ir/shape_constants.h"

namespace loom::cpp {

using cscalar::CType;
using cscalar::StorageCType;

void KernelPrinter::PrintVectorLoop(const ComputeNode& node, int member, int depth) {
  const std::string x = absl::StrCat("x", node.ranges.size() - 1);
  const int64_t extent = node.ranges.back();
  // The whole vectors' part as an expression of the extent, not a second
  // shape constant: a template that reads the extent reads it too.
  const std::string full =
      absl::StrCat(MarkShapeConstant(extent), " / ", kVectorLanes, " * ", kVectorLanes);
  const std::string store = RefText(node, plan_.members[member].store);
  // The next member's sum (SumsWhatTheVectorLoopStored): lanes, then a tail.
  const bool sums = static_cast<size_t>(member) + 1 < plan_.members.size() &&
                    plan_.members[member + 1].sum_in_vector_loop;
  const std::string sum = absl::StrCat("acc", member + 1);
  const std::string lanes = absl::StrCat("lanes", member + 1);
  if (sums) Line(depth, absl::StrCat("loom_f32v16 ", lanes, " = loom_splat16(0.0f);"));
  Line(depth,
       absl::StrFormat("for (int64_t %s = 0; %s < %s; %s += %d) {", x, x, full, x, kVectorLanes));
  PrintPrefetches(node, member, depth + 1);
  for (int i = 0; i < static_cast<int>(node.body.size()); ++i) {
    Line(depth + 1,
         absl::StrCat("const loom_f32v16 ", Temp(i), " = ", PrintVectorStep(node, i), ";"));
  }
  Line(depth + 1, absl::StrCat("loom_store16(&", store, ", ", Temp(node.root), ");"));
  if (sums) Line(depth + 1, absl::StrCat(lanes, " += ", Temp(node.root), ";"));
  Line(depth, "}");
  if (sums) Line(depth, absl::StrCat("float ", sum, " = loom_sum16(", lanes, ");"));
  // The remainder, also where there is none at this shape (the compiler
  // drops an empty loop), so that the code is the same for every extent.
  Line(depth, absl::StrFormat("for (int64_t %s = %s; %s < %s; ++%s) {", x, full, x,
                              MarkShapeConstant(extent), x));
  PrintBody(node, depth + 1);
  Line(depth + 1, absl::StrCat(store, " = ", Temp(node.root), ";"));
  if (sums) Line(depth + 1, absl::StrCat(sum, " += ", Temp(node.root), ";"));
  Line(depth, "}");
}

void KernelPrinter::PrintPrefetches(const ComputeNode& node, int member, int depth) {
  if (plan_.outer_loops > 0) {  // a kernel may have no outer loop
    std::vector<std::string> next = var_names_;
    next[plan_.outer_loops - 1] = absl::StrCat("(", next[plan_.outer_loops - 1], " + 1)");
    for (int i = 0; i < static_cast<int>(node.body.size()); ++i) {
      const Ref& load = plan_.load_refs[step_base_ + i];
      // Only what the next iteration reads anew (not a bias, the same in
      // every one).
      if (load.kind != Ref::Kind::kParam || planner_.RefStride(node, load) != 1 ||
          !UsesVar(planner_.ParamIndex(load), plan_.outer_loops - 1)) {
        continue;
      }
      Line(depth, absl::StrCat("__builtin_prefetch(&p", load.id, "[",
                               ToCppMarked(planner_.ParamIndex(load), next), "]);"));
    }
  }
  if (const std::optional<Ref>& store = plan_.members[member].store_alongside) {
    Line(depth, absl::StrCat("__builtin_prefetch(&", RefText(node, *store), ", 1);"));
  }
}

std::string KernelPrinter::PrintVectorStep(const ComputeNode& node, int i) {
  const ScalarOp& op = node.body[i];
  if (op.kind == ScalarOp::Kind::kConst) {
    return absl::StrCat("loom_splat16(", cscalar::Literal(op.constant, op.dtype), ")");
  }
  if (op.kind == ScalarOp::Kind::kLoad) {
    const Ref& ref = plan_.load_refs[step_base_ + i];
    const std::string place = RefText(node, ref);
    return planner_.RefStride(node, ref) == 1 ? absl::StrCat("loom_load16(&", place, ")")
                                              : absl::StrCat("loom_splat16(", place, ")");
  }
  const std::string a = Temp(op.args[0]);
  switch (op.fn) {
    case ScalarFn::kExp:
      return absl::StrCat("loom_exp16(", a, ")");
    case ScalarFn::kSigmoid:  // as cscalar::CallExpr
      return absl::StrCat("loom_splat16(1.0f) / (loom_splat16(1.0f) + loom_exp16(-", a, "))");
    case ScalarFn::kTanh:
      return absl::StrCat("loom_tanh16(", a, ")");
    case ScalarFn::kErf:
      return absl::StrCat("loom_erf16(", a, ")");
    case ScalarFn::kNeg:
      return absl::StrCat("-", a);
    case ScalarFn::kAdd:
      return absl::StrCat(a, " + ", Temp(op.args[1]));
    case ScalarFn::kSub:
      return absl::StrCat(a, " - ", Temp(op.args[1]));
    case ScalarFn::kMul:
      return absl::StrCat(a, " * ", Temp(op.args[1]));
    case ScalarFn::kDiv:
      return absl::StrCat(a, " / ", Temp(op.args[1]));
    default:
      break;
  }
  return a;  // VectorizesExp admits no other step
}

std::string KernelPrinter::MatVecCall(const ComputeNode& node, int member, const MatVec& matvec,
                                      const std::string& first_row, int64_t rows) {
  const size_t row = node.ranges.size() - 1;
  const std::vector<std::string> names = var_names_;
  var_names_[row] = first_row;
  var_names_[row + 1] = "0";
  const std::string call =
      matvec.rows_summed
          ? MatVecsCall(node, member, matvec, TeamStrides{}, "1", 1, absl::StrCat(rows), rows)
          : absl::StrCat("loom_matvec<", node.reduction_ranges[0], ">(&",
                         RefText(node, plan_.load_refs[step_base_ + matvec.vector_step]), ", &",
                         RefText(node, plan_.load_refs[step_base_ + matvec.matrix_step]), ", ",
                         matvec.leading, ", ", rows, ", &",
                         RefText(node, plan_.members[member].store), ", ", matvec.out_stride, ");");
  var_names_ = names;
  return call;
}

void KernelPrinter::PrintMatVecBlocks(const ComputeNode& node, int member, int depth,
                                      const MatVec& matvec, const std::string& pragma) {
  const std::string block = absl::StrCat("x", node.ranges.size() - 1, "b");
  Line(depth, pragma);
  Line(depth, absl::StrFormat("for (int64_t %s = 0; %s < %d; %s += %d) {", block, block,
                              node.ranges.back(), block, kDotRows));
  Line(depth + 1, MatVecCall(node, member, matvec, block, kDotRows));
  Line(depth, "}");
}

void KernelPrinter::PrintMatVec(const ComputeNode& node, int member, int depth,
                                const MatVec& matvec) {
  const size_t inner_loops = node.ranges.size() - plan_.outer_loops;
  const std::vector<std::string> pragmas =
      LoopPragmas(inner_loops, /*vector=*/false, plan_.Splits(member), "");
  const std::vector<int64_t> around(node.ranges.begin(), node.ranges.end() - 1);
  depth = OpenLoops(around, plan_.outer_loops, depth, pragmas);
  // Shared by the threads, a call per block of rows; else one for all.
  if (!pragmas.back().empty()) {
    PrintMatVecBlocks(node, member, depth, matvec, pragmas.back());
  } else {
    Line(depth, MatVecCall(node, member, matvec, "0", node.ranges.back()));
  }
  CloseLoops(inner_loops - 1, depth);
}

std::string KernelPrinter::PrintAloneMatVec(const ComputeNode& node, const MatVec& matvec) {
  const std::vector<int64_t> around(node.ranges.begin(), node.ranges.end() - 1);
  if (plan_.alone_matvec_shared && !around.empty()) {
    // One parallel region for all the products, each thread the same
    // blocks of each, without waiting between them: a region a product
    // started and joined the threads each time (16 products of 256 x 64,
    // an LSTM layer's input at batch 1: 32 us).
    Line(1, "#pragma omp parallel");
    Line(1, "{");
    const int depth = OpenLoops(around, 0, 2, {});
    PrintMatVecBlocks(node, 0, depth, matvec, "#pragma omp for schedule(static) nowait");
    CloseLoops(around.size(), depth);
    Line(1, "}");
    return body_;
  }
  const int depth = OpenLoops(around, 0, 1, {});
  if (plan_.alone_matvec_shared) {
    PrintMatVecBlocks(node, 0, depth, matvec, "#pragma omp parallel for");
  } else {
    Line(depth, MatVecCall(node, 0, matvec, "0", node.ranges.back()));
  }
  CloseLoops(around.size(), depth);
  return body_;
}

namespace {

// The rows of a block of loom_vecmats' matrix of k rows and `columns` for
// fewer than four vectors: all of them where the matrix fits
// kVecMatCachedBytes, else kVecMatRowBlock where that divides k.
int64_t VecMatRowBlock(int64_t k, int64_t columns) {
  constexpr int64_t kVecMatCachedBytes = 256 << 10, kVecMatRowBlock = 4;
  if (k * columns * 4 <= kVecMatCachedBytes || k % kVecMatRowBlock != 0) return k;
  return kVecMatRowBlock;
}

// loom_vecmats' N for calls of at most `most_vectors` vectors: their count
// below four, where a tile of that many is what a call runs; from four on
// the widest tile of any target, whose last tile of a call tests its count
// of rows (four rows so ran at 52-82 GFLOP/s on a Zen 3 core, a tile of
// four at 45-56), so that every batch from four on compiles the same code.
int64_t VecMatTileVectors(int64_t most_vectors) {
  return most_vectors < 4 ? most_vectors : kVecMatTileVectors;
}

}  // namespace

std::string KernelPrinter::MatVecsCall(const ComputeNode& node, int member, const MatVec& matvec,
                                       const TeamStrides& strides, absl::string_view vectors,
                                       int64_t most_vectors, absl::string_view rows,
                                       int64_t most_rows) {
  const std::string out = absl::StrCat("&", RefText(node, plan_.members[member].store), ", ");
  const int64_t k = node.reduction_ranges[0];
  return absl::StrCat(
      matvec.rows_summed ? absl::StrCat("loom_vecmats<", k, ", ", VecMatRowBlock(k, most_rows),
                                        ", ", VecMatTileVectors(most_vectors), ", ",
                                        most_rows % kVecMatColumns == 0 ? "true" : "false", ">(&")
                         : absl::StrCat("loom_matvecs<", k, ">(&"),
      RefText(node, plan_.load_refs[step_base_ + matvec.vector_step]), ", ", strides.vector, ", ",
      vectors, ", &", RefText(node, plan_.load_refs[step_base_ + matvec.matrix_step]), ", ",
      matvec.leading, ", ", rows, ", ", out,
      matvec.rows_summed ? "" : absl::StrCat(matvec.out_stride, ", "), strides.out, ");");
}

void KernelPrinter::PrintTeamMatVec(const ComputeNode& node, int member, const MatVec& matvec,
                                    int64_t rows, int depth) {
  const TeamStrides strides = *plan_.members[member].team_strides;
  const size_t row = node.ranges.size() - 1;  // the reduction variable is row + 1
  const std::string block = absl::StrCat("x", row, "b");
  const int64_t results = node.ranges.back();
  if (!plan_.outer.empty()) var_names_[0] = "0";
  var_names_[row] = block;
  var_names_[row + 1] = "0";
  if (matvec.rows_summed) {
    // Each thread its own run of the columns, the same every time, in one
    // call that reads the matrix's rows as sequential streams.
    const int64_t unit = results % kVecMatColumns == 0 ? kVecMatColumns : kVectorLanes;
    const int64_t blocks = results / unit;
    Line(depth, "{");
    Line(depth + 1,
         "const int64_t loom_team = omp_get_num_threads(), loom_me = omp_get_thread_num();");
    Line(depth + 1, absl::StrFormat("const int64_t %s = %d * (%d * loom_me / loom_team);", block,
                                    unit, blocks));
    Line(depth + 1,
         absl::StrFormat("const int64_t loom_end = %d * (%d * (loom_me + 1) / loom_team);", unit,
                         blocks));
    Line(depth + 1, absl::StrCat("if (", block, " < loom_end) ",
                                 MatVecsCall(node, member, matvec, strides, absl::StrCat(rows),
                                             rows, absl::StrCat("loom_end - ", block), results)));
    Line(depth, "}");
    Line(depth, "#pragma omp barrier");
  } else {
    Line(depth, "#pragma omp for schedule(static)");
    Line(depth, absl::StrFormat("for (int64_t %s = 0; %s < %d; %s += %d) {", block, block, results,
                                block, kDotRows));
    Line(depth + 1, MatVecsCall(node, member, matvec, strides, absl::StrCat(rows), rows,
                                absl::StrCat(kDotRows), kDotRows));
    Line(depth, "}");
  }
  for (size_t i = 0; i <= row + 1; ++i) var_names_[i] = absl::StrCat("x", i);
}

std::string KernelPrinter::PrintTeam(const Kernel& kernel) {
  // An ordered kernel's team runs its steps in order inside the parallel
  // region, a barrier after each member's loop; its rows are the first
  // outer loop.
  const bool ordered = plan_.ordered_loop >= 0;
  const std::vector<int64_t> rows_loop =
      ordered ? std::vector<int64_t>{plan_.outer[0]} : plan_.outer;
  const int64_t rows = NumElements(rows_loop);
  for (int m : plan_.locals) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    Line(1, absl::StrCat(StorageCType(program_.buffers[node.output].dtype), " l", m, "[",
                         rows * plan_.members[m].local_length, "];"));
  }
  Line(1, "#pragma omp parallel");
  Line(1, "{");
  const int base = ordered ? 3 : 2;
  if (ordered) {
    Line(2, absl::StrFormat("for (int64_t x1 = 0; x1 < %s; ++x1) {",
                            MarkShapeConstant(plan_.outer[1])));
  }
  // Where each pointwise member's code is in body_ (empty for a product),
  // all at one depth.
  std::vector<std::pair<size_t, size_t>> spans(kernel.nodes.size());
  int member_depth = 0;
  for (size_t m = 0; m < kernel.nodes.size();) {
    if (plan_.members[m].matvec.has_value()) {
      const ComputeNode& node = program_.nodes[kernel.nodes[m]];
      NameLoopVariables(node);
      PrintTeamMatVec(node, static_cast<int>(m), *plan_.members[m].matvec, rows, base);
      step_base_ += static_cast<int>(node.body.size());
      ++m;
      continue;
    }
    // The pointwise members up to the next product, in one loop over the
    // outer iterations (the fuser made each legal within one), or run by
    // one thread without an outer loop.
    Line(base, rows_loop.empty() ? "#pragma omp single" : "#pragma omp for");
    const int depth = rows_loop.empty() ? base + 1 : OpenLoops(rows_loop, 0, base, {});
    if (rows_loop.empty()) Line(base, "{");
    for (; m < kernel.nodes.size() && !plan_.members[m].matvec.has_value(); ++m) {
      const ComputeNode& node = program_.nodes[kernel.nodes[m]];
      NameLoopVariables(node);
      spans[m].first = body_.size();
      PrintMember(node, static_cast<int>(m), depth);
      spans[m].second = body_.size();
      member_depth = depth;
    }
    if (rows_loop.empty()) Line(base, "}");
    CloseLoops(rows_loop.size(), depth);
  }
  if (ordered) Line(2, "}");
  Line(1, "}");
  if (outlined_ != nullptr) {
    std::vector<std::string> codes(kernel.nodes.size());
    for (size_t m = 0; m < codes.size(); ++m) {
      codes[m] = body_.substr(spans[m].first, spans[m].second - spans[m].first);
    }
    OutlineRepeatedMembers(kernel, member_depth, codes);
    for (size_t m = codes.size(); m-- > 0;) {  // from the back: earlier spans stay put
      body_.replace(spans[m].first, spans[m].second - spans[m].first, codes[m]);
    }
  }
  return body_;
}

std::string KernelPrinter::PrintRowBlocks(const Kernel& kernel) {
  const int64_t rows = plan_.outer[0], steps = plan_.outer[1];
  const std::string marked_rows = MarkShapeConstant(rows);
  const bool may_share = !plan_.parallel_condition.empty();
  if (may_share) Line(1, absl::StrCat("const bool loom_shared = ", plan_.parallel_condition, ";"));
  Line(1, absl::StrCat("const int64_t loom_rows = loom_row_block(", marked_rows, ", ",
                       plan_.block_rows, ", ",
                       may_share ? "loom_shared ? omp_get_max_threads() : 1" : "1", ");"));
  if (may_share) Line(1, "#pragma omp parallel for if(loom_shared)");
  Line(1, absl::StrFormat("for (int64_t x0b = 0; x0b < %s; x0b += loom_rows) {", marked_rows));
  Line(2, absl::StrFormat("const int64_t x0n = %s - x0b < loom_rows ? %s - x0b : loom_rows;",
                          marked_rows, marked_rows));
  for (int m : plan_.locals) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    Line(2, absl::StrCat(StorageCType(program_.buffers[node.output].dtype), " l", m, "[",
                         plan_.block_rows * plan_.members[m].local_length, "];"));
  }
  Line(2, absl::StrFormat("for (int64_t x1 = 0; x1 < %s; ++x1) {", MarkShapeConstant(steps)));
  for (size_t m = 0; m < kernel.nodes.size();) {
    if (plan_.members[m].matvec.has_value()) {
      const ComputeNode& node = program_.nodes[kernel.nodes[m]];
      NameLoopVariables(node);
      const size_t row = node.ranges.size() - 1;  // the reduction variable is row + 1
      var_names_[0] = "x0b";
      var_names_[row] = var_names_[row + 1] = local_row_ = "0";
      Line(3, MatVecsCall(node, static_cast<int>(m), *plan_.members[m].matvec,
                          *plan_.members[m].team_strides, "x0n", std::min(rows, plan_.block_rows),
                          absl::StrCat(node.ranges.back()), node.ranges.back()));
      for (size_t i = 0; i <= row + 1; ++i) var_names_[i] = absl::StrCat("x", i);
      step_base_ += static_cast<int>(node.body.size());
      ++m;
      continue;
    }
    // The members up to the next product, row by row.
    Line(3, "for (int64_t x0r = 0; x0r < x0n; ++x0r) {");
    Line(4, "const int64_t x0 = x0b + x0r;");
    local_row_ = "x0r";
    for (; m < kernel.nodes.size() && !plan_.members[m].matvec.has_value(); ++m) {
      PrintMember(program_.nodes[kernel.nodes[m]], static_cast<int>(m), 4);
    }
    Line(3, "}");
  }
  local_row_.clear();
  Line(2, "}");
  Line(1, "}");
  return body_;
}

}  // namespace loom::cpp
