#ifndef LOOM_BACKENDS_CPP_KERNEL_PRINTER_H_
#define LOOM_BACKENDS_CPP_KERNEL_PRINTER_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/common/c_scalar.h"
#include "backends/cpp/cpp_options.pb.h"
#include "backends/cpp/outline.h"
#include "backends/cpp/plan.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom::cpp {

// Pragmas for a nest of `count` loops: the innermost runs in vector lanes
// when `vector` (reductions: their lanes may be reassociated); with `split`,
// the outermost is shared by the threads when `loom_split` holds.
// `clauses` (e.g. " reduction(+:acc0)") go with both.
std::vector<std::string> LoopPragmas(size_t count, bool vector, bool split,
                                     absl::string_view clauses);

// Prints the function of one planned kernel (CppPlanner, after PlanVectors).
// Each parameter p0, p1, ... is a (buffer, constant offset) pair of the
// plan, the constant part of every index in the argument the launch passes,
// so kernels that differ only in where their data lives (the steps of an
// unrolled recurrence) print identically and share one function.
class KernelPrinter {
 public:
  // Members that repeat in a kernel become calls of functions in
  // `outlined`, where it is not null.
  KernelPrinter(const LoopProgram& program, cscalar::HelperSet& helpers,
                cscalar::LibmCalls& libm_calls, CppPlanner& planner,
                OutlinedFunctions* outlined = nullptr)
      : program_(program),
        helpers_(helpers),
        libm_calls_(libm_calls),
        planner_(planner),
        plan_(planner.plan()),
        outlined_(outlined) {}

  // The function's body, parameter declarations included.
  std::string Print(const Kernel& kernel);
  // The declarations of the parameters p0, p1, ... (from a[0], a[1], ...),
  // `restrict` unless other pointers of the function may write what they
  // point at (a gemm's product, which its epilogue reads; a loop's state,
  // read at one slot and written at the next).
  std::string ParamDeclarations(bool restrict = true) const;
  // The kernel's loops over the rows [loom_first, loom_last) of its first
  // `row_loops` outer loops (collapsed, row-major), then the rest of its
  // outer loops and its members: one thread's block of a gemm's rows
  // (PrintGemmWithEpilogue). Only for a kernel that runs its outer loops
  // plainly (no split, team or alone product).
  std::string PrintRows(const Kernel& kernel, int row_loops);

 private:
  // A load's or store's place, e.g. "p3[(64*x0 + x1)]", "l1[x1]" or "acc0".
  std::string RefText(const ComputeNode& node, const Ref& ref);
  // The local arrays and every member, inside the outer loops.
  void PrintMembers(const Kernel& kernel, int depth);
  // Replaces in `codes` (each member's, printed at `depth`) each member
  // whose code repeats, renamed, in another member of the kernel
  // (outline.h) by a call of one function of outlined_ for all of them.
  void OutlineRepeatedMembers(const Kernel& kernel, int depth, std::vector<std::string>& codes);
  // Whether member m's code may run in a function of its own as far as the
  // plan tells: it leaves no value in a variable for later members and
  // does not split over the threads (loom_split). What it reads that
  // others declare shows in its renamed code (RenamedCode::uses_outer_names).
  bool MayOutline(const Kernel& kernel, size_t m) const;
  // The pointer type of a buffer p<N> or l<N> of the kernel in member m.
  std::string BufferType(const Kernel& kernel, size_t m, absl::string_view name) const;
  // The type of p<N> or l<N> as the kernel declares it (a pointer for a
  // local array).
  std::string DeclaredType(const Kernel& kernel, absl::string_view name) const;
  // Parameter p's pointer type, e.g. "const float*".
  std::string ParamType(size_t p) const;
  void PrintMember(const ComputeNode& node, int member, int depth);
  void PrintReduction(const ComputeNode& node, int member, int depth, std::string& result);
  // A variance (kVar): Welford's update, in lanes over the innermost
  // reduction loop (a running update for its tail), leaving the variance
  // in acc<member> and the mean in wmean<member>.
  void PrintWelford(const ComputeNode& node, int member, int depth);
  // Its loops when the lanes take `full` values of the innermost loop.
  void PrintWelfordLoops(const ComputeNode& node, int member, int depth, int lanes, int64_t full);
  // Then the lanes joined in a tree, and the tail's running update.
  void PrintWelfordJoin(const ComputeNode& node, int member, int depth, int lanes, bool tail);
  void PrintWelfordChains(const ComputeNode& node, int member, int depth, int chains);
  void PrintRunningUpdate(const char* type, const std::string& mean, const std::string& m2,
                          const std::string& count, const std::string& value, int depth);
  // Opens loops first .. extents.size()-1, each after its pragma (if
  // any; pragmas[0] is loop `first`'s); returns the new depth.
  int OpenLoops(const std::vector<int64_t>& extents, size_t first, int depth,
                const std::vector<std::string>& pragmas);
  int CloseLoops(size_t count, int depth);
  // The innermost loop of a streaming member, in runs of kStreamLanes
  // iterations gathered in `loom_lanes` and stored as one line each.
  void PrintStreamingLoop(const ComputeNode& node, int member, int depth);
  // The call for `rows` rows from the row named `first_row`.
  std::string MatVecCall(const ComputeNode& node, int member, const MatVec& matvec,
                         const std::string& first_row, int64_t rows);
  // The call per block of kDotRows rows, the blocks' loop under `pragma`.
  void PrintMatVecBlocks(const ComputeNode& node, int member, int depth, const MatVec& matvec,
                         const std::string& pragma);
  void PrintMatVec(const ComputeNode& node, int member, int depth, const MatVec& matvec);
  // The body of a kernel that is one matrix-vector product, rows outermost.
  std::string PrintAloneMatVec(const ComputeNode& node, const MatVec& matvec);
  // The body of a kernel that runs as a team (CppPlanner::RunsAsTeam,
  // PlanOrderedRows): one parallel region in which every member runs for
  // all outer iterations before the next starts (a barrier between), its
  // local arrays holding every outer iteration's slice. A product is
  // shared by blocks of its rows, each block's matrix rows loaded once for
  // all outer iterations (loom_matvecs), or, where the sum runs over the
  // matrix's rows, by each thread's run of its columns (loom_vecmats); a
  // pointwise member by its outer iterations (run by one thread without
  // any). An ordered kernel's team runs this for each step in order, over
  // its rows.
  std::string PrintTeam(const Kernel& kernel);
  // A product of the team's `rows` rows, shared by blocks, at `depth`.
  void PrintTeamMatVec(const ComputeNode& node, int member, const MatVec& matvec, int64_t rows,
                       int depth);
  // The loom_matvecs call (loom_vecmats when the matrix's rows are summed)
  // for `vectors` vectors, `rows` results each (C expressions, at most
  // `most_vectors` and `most_rows`; `rows` a multiple of kVecMatColumns
  // where `most_rows` is), the vectors and their results `strides` apart.
  std::string MatVecsCall(const ComputeNode& node, int member, const MatVec& matvec,
                          const TeamStrides& strides, absl::string_view vectors,
                          int64_t most_vectors, absl::string_view rows, int64_t most_rows);
  // The body of an ordered kernel whose rows run in blocks (CppKernelPlan::
  // row_blocks): the threads share the blocks; in each, the steps run in
  // order, each step's products over all the block's rows in one
  // loom_matvecs call (the matrix read once for them), the members between
  // in a loop over the block's rows.
  std::string PrintRowBlocks(const Kernel& kernel);
  // The body of a kernel whose members may split their loops over the
  // threads (CppKernelPlan::may_split).
  std::string PrintSplitting(const Kernel& kernel, const std::vector<std::string>& pragmas);
  // A kernel with streaming stores: its outer loops (after `pragmas`), then
  // a fence on each thread.
  std::string PrintStreaming(const Kernel& kernel, std::vector<std::string> pragmas);
  // The body of a kernel of column reductions (CppKernelPlan::column_block):
  // the outer loops but the last, then that loop in blocks; in each block
  // every reduction in an array of the block's lanes, its own loops outside
  // the lanes' loop, then one loop over the lanes for the members' values.
  std::string PrintColumns(const Kernel& kernel);
  // One reduction's loops over a block of columns, its values left in the
  // array acc<member>s (and, for a float maximum or minimum, whether a lane
  // saw a NaN in nan<member>s).
  void PrintColumnReduction(const ComputeNode& node, int member, int depth);
  // Names the node's loop variables x0, x1, ... where none is named yet.
  void NameLoopVariables(const ComputeNode& node);
  // A vector extreme: kExtremeChains vectors of running extremes (so that
  // each waits on its own previous maximum only) and a NaN flag, then the
  // rest of the loop one by one.
  void PrintVectorExtreme(const ComputeNode& node, int member, int depth);
  // A vector member's innermost loop: runs of kVectorLanes iterations as
  // vectors, then the rest one by one.
  void PrintVectorLoop(const ComputeNode& node, int member, int depth);
  // In one run of a vector loop: prefetches of the lines its loads of
  // parameters read in the next outer iteration, and of the one the
  // nearest later store writes in this one. The loop computes long enough
  // for the memory to fetch them, which would otherwise idle until the
  // next pass asks.
  void PrintPrefetches(const ComputeNode& node, int member, int depth);
  std::string PrintVectorStep(const ComputeNode& node, int i);
  void PrintBody(const ComputeNode& node, int depth);
  // Whether every member runs exactly the outer loops, pointwise.
  bool Flat(const Kernel& kernel) const;
  std::vector<std::string> OuterLoopPragmas(const Kernel& kernel, const std::vector<int64_t>& outer,
                                            bool parallel);
  // The outer loops (with `pragmas`) and the members inside them, at `depth`.
  void PrintOuterLoops(const Kernel& kernel, const std::vector<std::string>& pragmas, int depth);
  std::string PrintStep(const ComputeNode& node, int i);
  std::string Temp(int i) const { return absl::StrCat("t", step_base_ + i); }
  void Line(int depth, absl::string_view text) {
    body_.append(2 * depth, ' ');
    body_.append(text.data(), text.size());
    body_.push_back('\n');
  }

  const LoopProgram& program_;
  cscalar::HelperSet& helpers_;
  cscalar::LibmCalls& libm_calls_;
  CppPlanner& planner_;  // for the places of loads and stores
  const CppKernelPlan& plan_;

  std::vector<std::string> var_names_;  // x0, x1, ... (at least one per loop)
  // The name of variable 0 in local arrays' places, where it differs (the
  // row within a block of rows, CppKernelPlan::row_blocks).
  std::string local_row_;
  std::string body_;
  OutlinedFunctions* outlined_;  // for repeated members, or null
  int step_base_ = 0;            // steps of earlier members, so names stay unique
};

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_KERNEL_PRINTER_H_
