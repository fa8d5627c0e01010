#ifndef LOOM_BACKENDS_CPP_PLAN_H_
#define LOOM_BACKENDS_CPP_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "backends/common/kernel_plan.h"
#include "backends/cpp/cpp_options.pb.h"
#include "ir/expr.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom::cpp {

// The C++ backend's plan of a kernel (the backend-independent
// kplan::KernelPlan, extended): where every load and store goes, and how
// each member runs: its own loops split over the threads, streaming
// stores, explicit vectors, a matrix-vector call, Welford's lanes, a team.
// KernelPrinter only prints a plan; --dump_after=codegen-cpp shows it.

// Streaming stores write runs of this many f32 (one cache line).
constexpr int kStreamLanes = 16;
// Lanes of the explicit vectors (loom_f32v16).
constexpr int kVectorLanes = 16;
// A maximum or minimum in explicit vectors keeps kExtremeChains running
// vectors, each waiting on its own last step only, so a block of the loop
// is that many vectors.
constexpr int kExtremeChains = 4;
constexpr int kExtremeBlock = kExtremeChains * kVectorLanes;
// The rows of a matrix-vector product (a recurrence's step times its
// weight, any sum over one loop of a vector's products with a matrix's
// rows) go to loom_matvec: eight rows at a time, each row's products in the
// lanes of its own vector, the eight vectors' lanes summed in one tree.
// Printed one row at a time, adding up each row's lanes cost more than its
// products (256 rows of 64: 1.69 -> 0.72 us alone; lstm_l2_h64 on one
// thread 0.093 -> 0.082 ms); printed eight rows at a time in every product
// rather than called, the native compile took up to 1.7x longer.
constexpr int kDotRows = 8;
// The most rows of a block of an ordered loop's rows (CppKernelPlan::
// row_blocks), and the most bytes of local arrays, which hold every row of
// a block (or of a team) on a thread's stack: fewer rows where a row's
// slices are large.
constexpr int64_t kMaxBlockRows = 16;
constexpr int64_t kMaxBlockLocalBytes = 256 << 10;
// An ordered kernel whose step multiplies a matrix of more bytes than this
// runs as a team (CppPlanner::PlanOrderedRows).
constexpr int64_t kStepMatrixBytes = 512 << 10;
// loom_vecmats' widest tile of columns (with AVX-512): its calls for a
// multiple of this many columns compile no narrower tiles.
constexpr int64_t kVecMatColumns = 64;
// The most vectors of loom_vecmats's tiles, the most rows of any target's
// LOOM_VECMAT_ROWS (VecMatTileVectors in vector_loops.cc).
constexpr int64_t kVecMatTileVectors = 6;
// A kernel of column reductions (CppPlanner::ColumnBlock) runs its
// innermost outer loop in blocks of this many iterations, or of
// kVectorLanes where blocks this wide would leave fewer than
// kMinColumnBlocks for the threads (or in one block, when fewer).
constexpr int64_t kColumnBlock = 64;
constexpr int64_t kMinColumnBlocks = 8;

// The product of extents[first, last).
int64_t Product(const std::vector<int64_t>& extents, size_t first, size_t last);

// The OpenMP pragma sharing `loops` perfectly nested loops over threads.
std::string ParallelFor(size_t loops, absl::string_view condition);

// Where a load reads or a store writes.
struct Ref {
  enum class Kind : uint8_t {
    kNone,   // no memory: not a load, or a store kept in a variable
    kParam,  // p<id>[index], less the constant that the argument holds
    kLocal,  // l<id>[index % the array's length]: member id's local array
    kTemp,   // t<id>: a value an earlier member stored (no inner loops)
    kAcc,    // acc<id>: the same for a reduction
    kArg,    // arg<id>: the same for an arg reduction
  };
  Kind kind = Kind::kNone;
  int id = -1;
  Expr index = nullptr;
};

// The variable or array `ref` names: p<id>, l<id>, t<id>, acc<id> or
// arg<id>; empty for kNone.
std::string RefName(const Ref& ref);

// A member that is a matrix-vector product: sums over one innermost loop
// of a vector's products with a matrix's rows (two unit-stride loads,
// affine in the rows), printed as a call of loom_matvec. Or, in an ordered
// kernel, `rows_summed`: the sum runs over the matrix's rows, each scaled
// by an element of the vector (the matrix and the results at unit stride
// along the results), printed as a call of loom_vecmats.
struct MatVec {
  int vector_step = -1, matrix_step = -1;  // the loads, steps of the body
  int64_t leading = 0;                     // between the matrix's rows
  int64_t out_stride = 0;                  // between the results
  bool rows_summed = false;
};

// A product's loads and store in a team, their row strides along the
// outer loop.
struct TeamStrides {
  int64_t vector = 0, out = 0;
};

// How one member runs.
struct CppMemberPlan {
  bool internal = false;  // writes an internal buffer
  // Its own loops have enough work to split over the threads when the
  // outer iterations are too few (CppKernelPlan::Splits).
  bool split_work = false;
  bool streams = false;             // streaming stores (kStreamHelpers)
  bool vectorizes = false;          // an exponential in explicit vectors
  bool vector_extreme = false;      // a maximum or minimum in explicit vectors
  bool sum_from_variance = false;   // the previous variance's mean times the count
  bool sum_in_vector_loop = false;  // summed by the previous member's vector loop
  std::optional<MatVec> matvec;
  std::optional<TeamStrides> team_strides;  // in a team, for a product
  int welford_chains = 0;                   // vector chains of a variance, 0 for lane arrays
  int first_step = 0;                       // its first step among the kernel's
  int64_t local_length = 0;                 // its slice of one outer iteration
  Ref store;                                // kParam or kLocal, or kNone: kept in a variable
  // The nearest later member's store along its vector loop, which it
  // prefetches.
  std::optional<Ref> store_alongside;
};

struct CppKernelPlan {
  int outer_loops = 0;
  std::vector<int64_t> outer;  // the outer loops' extents
  // The kernel has few outer iterations and members with much work in
  // each: when there are more threads than outer iterations (`loom_split`
  // at run time), the members' own loops run in parallel instead of the
  // outer ones: a reduction in two levels, per thread and then combined.
  bool few_outer = false;            // the outer iterations may be fewer than threads
  bool may_split = false;            // and a member splits
  bool streams = false;              // a member uses streaming stores
  bool vectorizes = false;           // a member runs in explicit vectors
  bool alone_matvec = false;         // one product, its rows outermost
  bool alone_matvec_shared = false;  // and its blocks of rows shared by the threads
  bool parallel_outer = false;       // the threads may share the outer loops
  // The rule of parallel_outer as a C++ condition of the kernel's shape
  // constants (ir/shape_constants.h), so that the kernel decides as it runs
  // and its code is the same for every shape; empty where the threads can
  // never share the outer loops.
  std::string parallel_condition;
  bool team = false;  // runs as a team (KernelPrinter::PrintTeam)
  // The outer loop that runs in order (Kernel::ordered_loop), or -1: then
  // only the loops before it may run in parallel, its parameters may point
  // into one buffer (a state's slots, read at one and written at the next),
  // and it runs as printed: no split, team, columns or streaming stores.
  int ordered_loop = -1;
  // An ordered loop's rows run in blocks (KernelPrinter::PrintRowBlocks):
  // each block's steps in order, a step's products over all the block's
  // rows at once (loom_vecmats or loom_matvecs, their matrix read once for
  // them all), its other members row by row, local arrays holding every
  // row of a block.
  bool row_blocks = false;
  int64_t block_rows = 0;  // the most rows of a block
  // Column reductions (KernelPrinter::PrintColumns): the innermost outer
  // loop runs innermost, in blocks of this many iterations; 0 if not.
  int64_t column_block = 0;
  kplan::ParamTable params;
  std::vector<Ref> load_refs;  // by step (StepRef)
  std::vector<int> locals;     // members writing a local array
  std::vector<CppMemberPlan> members;

  // Whether member m splits its loops over the threads.
  bool Splits(size_t m) const { return members[m].split_work && !team && column_block == 0; }
  // Whether the kernel runs its outer loops plainly, members inside, so
  // that it may run on a block of a product's rows (KernelPrinter::PrintRows).
  bool RunsOuterLoopsPlainly() const {
    return !may_split && !team && !alone_matvec && column_block == 0 && ordered_loop < 0;
  }
  // The plan as text, one line per decision, for dumps.
  std::string ToString(const LoopProgram& program, const Kernel& kernel) const;
};

// The positions in local arrays that the printed kernels use, by (index,
// length of the array, extents of the loops): kernels repeat them.
using LocalOffsets = absl::flat_hash_map<std::tuple<Expr, int64_t, std::vector<int64_t>>, Expr>;

// Plans one kernel in two phases. Plan resolves every load and store (the
// arguments) and builds a key holding everything the printer reads
// (besides the options, the same for all kernels): kernels with equal keys
// print equal functions. Printing is the costly part of code generation,
// and most kernels of a large program repeat an earlier one, so only a new
// key gets PlanVectors, the decisions only a printed kernel needs.
class CppPlanner {
 public:
  // `key`: where Plan builds the key (shared by the planners of a program).
  CppPlanner(const LoopProgram& program, const proto::CppOptions& options,
             LocalOffsets& local_offsets, kplan::KernelKey& key)
      : program_(program),
        ctx_(*program.exprs),
        options_(options),
        local_offsets_(local_offsets),
        key_(key) {}

  void Plan(const Kernel& kernel);
  // After Plan: how members run in explicit vectors (VectorizesExp,
  // VectorizesExtreme, MatchMatVec and what follows from them), Welford's
  // chains, and whether the kernel runs as a team.
  void PlanVectors(const Kernel& kernel);
  const CppKernelPlan& plan() const { return plan_; }
  absl::string_view key() const { return key_.bytes(); }

  // A parameter's index, less the constant its argument holds.
  Expr ParamIndex(const Ref& ref) const;
  // The position of `index` in local array `member`.
  Expr LocalOffset(const ComputeNode& node, Expr index, int member);
  // The stride of a load's or store's place along the member's innermost
  // loop, pointwise or reduction (see InnerStride); a variable (kTemp,
  // kAcc, kArg) has stride 0.
  int64_t RefStride(const ComputeNode& node, const Ref& ref);

 private:
  // Appends a value to the key.
  template <typename T>
  void Key(T value) {
    key_.Append(value);
  }
  void KeyNode(const ComputeNode& node);
  void KeyRef(const Ref& ref);
  void PlanMemberRefs(const Kernel& kernel, size_t m);
  // The parameter for `buffer` at `index`.
  Ref Param(BufferId buffer, Expr index, bool is_output);
  // The memory a step touches: a load's place, the index error slot of a
  // kCheckIndex; none for the others.
  Ref StepRef(const ScalarOp& op);
  Ref ResolveLoad(const ScalarOp& op);
  // Whether a member with this much work in one outer iteration splits
  // its loops over the threads when the outer loops are too few.
  bool SplitWork(const ComputeNode& node) const;
  // Whether a member stores with streaming stores (kStreamHelpers).
  bool Streams(const ComputeNode& node, size_t m) const;
  // Whether member m sums the same values over the same loops as the
  // variance that member m - 1 computes, both one value per outer
  // iteration: its sum is then that pass's mean times the count. Called
  // by Plan once member m's loads are resolved.
  bool SumsWhatTheVarianceRead(const Kernel& kernel, size_t m) const;
  // Whether member m sums, one value per outer iteration, the local array
  // that member m - 1 stores in explicit vectors (VectorizesExp) in its one
  // inner loop: softmax's sum of exponentials. That loop then adds its
  // vectors up as it stores them, and member m has no loop of its own.
  bool SumsWhatTheVectorLoopStored(const Kernel& kernel, size_t m);
  // Whether explicit vectors (PrintVectorStep) can run every step of a
  // member's body: each f32, a load (no gather), constant, +, -, *, /,
  // negation or exp. Sets `exp` if one is an exponential.
  static bool VectorSteps(const ComputeNode& node, bool& exp);
  // Whether the member's loads have unit or zero stride along its
  // innermost loop.
  bool VectorLoads(const ComputeNode& node, int member);
  // Whether a member computes an f32 exponential in a pointwise innermost
  // loop that explicit vectors can run (kVectorHelpers): VectorSteps and
  // VectorLoads, and a store of unit stride.
  bool VectorizesExp(const ComputeNode& node, int member);
  // Whether a member is an f32 maximum or minimum, one per outer
  // iteration, over one reduction loop that explicit vectors can run
  // (VectorSteps, VectorLoads) in blocks of kExtremeBlock, whatever its
  // extent (fewer values run only the remainder's loop).
  bool VectorizesExtreme(const ComputeNode& node, int member);
  // `alone`: the member is the kernel's only one, whose rows may then be
  // its outer loops.
  std::optional<MatVec> MatchMatVec(const ComputeNode& node, int member, bool alone);
  // The vector chains of a Welford member's lanes, or 0 for lane arrays.
  int WelfordChains(const ComputeNode& node, int member);
  // The store of the nearest later member that writes, in each outer
  // iteration, the same places a vector member's loop runs over (softmax's
  // normalised row) and does not stream: that loop prefetches it
  // (PrintPrefetches).
  std::optional<Ref> LaterStoreAlongside(const Kernel& kernel, size_t m);
  // Whether the kernel runs as a team (see KernelPrinter::PrintTeam): at
  // most one outer loop, of at most kTeamRows iterations, members with
  // inner loops that are pointwise or products shared by the threads
  // (whose matrix is the same in every outer iteration), at least one such
  // product, and no streaming store. Sets plan_.team and the products'
  // team strides if so.
  bool RunsAsTeam(const Kernel& kernel);
  // How an ordered kernel with its one loop of rows, then the ordered one,
  // members that all have inner loops and at least one product whose
  // matrix is the same at every row and step runs: as a team (with OpenMP)
  // when a product's matrix outgrows kStepMatrixBytes and its rows' local
  // arrays fit a block's, the threads sharing each step's products by
  // blocks of the matrix, each thread the same blocks every step, which
  // then stay in its cache; else its rows in blocks (CppKernelPlan::
  // row_blocks, block_rows). Sets the products' team strides.
  void PlanOrderedRows(const Kernel& kernel);
  // The block of a kernel of column reductions (CppKernelPlan::column_block),
  // or 0: every member runs exactly the outer loops (one value per outer
  // iteration), its reductions are sums, products, maxima or minima of
  // values loaded from buffers no member writes, every load runs along the
  // innermost outer loop at stride 0 or 1, and some reduction's load runs
  // along it at stride 1 and along its own innermost loop at another: a
  // pool over the rows of channels-last data, a mean over a sequence.
  // Such a reduction, one output per outer iteration, would read every
  // value at a stride in a loop no vector runs; with the innermost outer
  // loop innermost its lanes read rows of contiguous values.
  int64_t ColumnBlock(const Kernel& kernel);
  // Whether member m may run as a column reduction (see ColumnBlock); sets
  // `columnar` when one of its loads runs along the columns at stride 1
  // and along its own innermost loop at another.
  bool MayRunAsColumns(const Kernel& kernel, size_t m, bool& columnar);
  // nullopt when the matrix depends on an outer loop.
  std::optional<TeamStrides> TeamMatVecStrides(const ComputeNode& node, int member,
                                               const MatVec& matvec);
  // The coefficients of a param or local reference's index in the loop
  // variables, when it is affine.
  std::optional<std::vector<int64_t>> AffineRef(const ComputeNode& node, const Ref& ref);

  const LoopProgram& program_;
  ExprContext& ctx_;
  const proto::CppOptions& options_;
  LocalOffsets& local_offsets_;
  kplan::KernelKey& key_;
  CppKernelPlan plan_;
  // Values stored earlier in this kernel by members with no inner loops:
  // a later member reads them from these variables instead of memory.
  kplan::ForwardedStores<Ref> forwarded_;
  // Internal buffers written in inner loops: one outer iteration's slice
  // lives in a local array; by buffer, the writing member.
  absl::flat_hash_map<BufferId, int> local_of_;
};

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_PLAN_H_
