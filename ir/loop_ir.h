#ifndef LOOM_IR_LOOP_IR_H_
#define LOOM_IR_LOOP_IR_H_

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "ir/dtype.h"
#include "ir/expr.h"
#include "ir/graph.h"

namespace loom {

// Loop IR: what lowering produces and the scheduler consumes. A Buffer is a
// dense array; a ComputeNode writes one buffer from loads of others through
// symbolic index expressions. Views are index remappings inside those
// expressions, never copies.

using BufferId = int32_t;

enum class BufferKind : uint8_t {
  kInput,   // a graph input
  kWeight,  // a graph weight or constant, bound from the graph's data
  kOutput,  // a graph output
  kTemp,    // an intermediate the runtime allocates
  // The run's index error slot (LoopProgram::index_errors): two i64, the
  // first failed index check's site + 1 (0: none failed) and its index.
  // Every execution context has its own, zeroed before each run.
  kIndexErrors,
};

// A dense row-major array.
struct Buffer {
  std::string name;
  DType dtype = DType::kF32;
  Shape sizes;
  BufferKind kind = BufferKind::kTemp;
  ValueId source = -1;  // the graph value it holds (inputs, weights, outputs)
  // Zeros around the edges: the elements whose position along some dim d
  // is below zero_border[d] or at or past sizes[d] - zero_border[rank + d]
  // are 0, written before any node reads the buffer (a constant pad's
  // fill). Empty where nothing is known.
  std::vector<int64_t> zero_border;
};

// Scalar functions of a compute node's body. Their semantics are those of
// the graph ops they come from (ir/ops), including NaN and integer edge
// cases; the notes below fix what the op names leave open.
enum class ScalarFn : uint8_t {
  // Unary. kRound rounds half to even; kSign gives -1, 0 or 1 (NaN stays
  // NaN).
  // clang-format off
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kReciprocal, kTanh, kSigmoid, kRelu,
  kErf, kSin, kCos, kFloor, kCeil, kRound, kSign,
  kNot,     // on bools
  kBitNot,  // on integers
  // The operand's bits as the step's type, of the same width (bit_cast);
  // to bool: whether they are nonzero.
  kBitCast,
  // Binary. kMod: the remainder takes the sign of the divisor (Python's %);
  // kFmod: the sign of the dividend (C's fmod). An integer remainder by zero
  // is 0 (the interpreter rejects it; generated code must not trap).
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kMod, kFmod,
  // On integers, as bit_shift: signed right shifts are arithmetic, left
  // shifts wrap; by the width or more, or by a negative amount, gives -1
  // for a right shift of a negative number and 0 otherwise.
  kShl, kShr,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kAnd, kOr, kXor,  // on bools
  kBitAnd, kBitOr, kBitXor,  // on integers
  // Ternary: select(cond, a, b).
  kSelect,
  // clang-format on
};

int ScalarFnArity(ScalarFn fn);
const char* ScalarFnName(ScalarFn fn);

// How a reduction folds its body's root over the reduction loops. Sum, max,
// min and prod store the folded value (max and min keep the first NaN they
// meet). The arg kinds store, as i64, the position of the chosen element
// among the reduction loops' iterations in row-major order (for one
// reduction loop: its variable's value): kArgMax / kArgMin choose the first
// maximum / minimum, kArgMaxLast / kArgMinLast the last; a NaN counts as
// larger (argmax) or smaller (argmin) than every number and ties with other
// NaNs (so the first NaN wins, or the last for the *Last kinds).
// kVar stores the population variance of the values (the mean of their
// squared deviations from their mean; NaN over none), which backends
// compute in one pass with Welford's update and combine partial results
// with Chan et al.'s formula.
enum class ReduceKind : uint8_t {
  // clang-format off
  kNone, kSum, kMax, kMin, kProd,
  kArgMax, kArgMin, kArgMaxLast, kArgMinLast,
  kVar,
  // clang-format on
};
const char* ReduceKindName(ReduceKind kind);
bool IsArgReduce(ReduceKind kind);

// The operands of a step: positions of earlier steps, at most three (a
// select), kept inline in 16 bytes, since a program has millions of steps.
class StepArgs {
 public:
  static constexpr size_t kMaxArgs = 3;
  using value_type = int;
  using iterator = int*;
  using const_iterator = const int*;

  StepArgs() = default;
  StepArgs(std::initializer_list<int> args) { assign(args.begin(), args.end()); }

  // No step has more than kMaxArgs operands (no function takes more);
  // debug builds check it, and others drop any further operand.
  void push_back(int arg) {
    assert(size_ < kMaxArgs);
    if (size_ < kMaxArgs) args_[size_++] = arg;
  }
  template <typename It>
  void assign(It first, It last) {
    size_ = 0;
    for (; first != last; ++first) push_back(*first);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int& operator[](size_t i) { return args_[i]; }
  int operator[](size_t i) const { return args_[i]; }
  int back() const { return args_[size_ - 1]; }
  int* begin() { return args_; }
  int* end() { return args_ + size_; }
  const int* begin() const { return args_; }
  const int* end() const { return args_ + size_; }

  friend bool operator==(const StepArgs& a, const StepArgs& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator!=(const StepArgs& a, const StepArgs& b) { return !(a == b); }

 private:
  int32_t args_[kMaxArgs] = {};
  uint8_t size_ = 0;
};

// One step of a body: a small DAG stored in order, operands by position.
//
// kLoad reads buffer[index]. With one argument it is an indirect load (a
// gather): it reads buffer[index + stride * t], where t is the value of the
// earlier integer step args[0]; `index` is then the affine part over the
// loop variables. kIndex yields the value of the index expression `index`
// (over the node's loop variables) as an i64, so a body can compare loop
// positions (e.g. a cumulative sum masks j <= i).
//
// kCheckIndex makes an index known only at run time safe to load at: for
// the integer step t = args[0] it yields (as an i64) t + extent when t < 0
// (ONNX's negative indices) and t otherwise, when that lies in [0, extent);
// any other t is a failed check: it yields 0, a safe index, and records
// (site, t) in the program's index error slot (BufferKind::kIndexErrors)
// unless an earlier failure of the run is there (the first wins, whichever
// thread it was); the runtime then fails the run with a message naming
// LoopProgram::index_checks[site]'s node (ir/index_error.h).
struct ScalarOp {
  enum class Kind : uint8_t { kLoad, kConst, kCall, kCast, kIndex, kCheckIndex };
  // The one-byte fields come first so that they pack together: a program
  // holds millions of steps, and every pass walks them.
  Kind kind;
  DType dtype;                   // the type of this step's result
  ScalarFn fn = ScalarFn::kAdd;  // kCall
  // One or the other, by kind, as in the union below.
  union {
    BufferId buffer = -1;  // kLoad
    int32_t site;          // kCheckIndex: its entry of LoopProgram::index_checks
  };
  Expr index = nullptr;  // kLoad: flat element offset; kIndex: the value
  // One or the other, by kind (read the one the kind has): a million-buffer
  // program holds ten million steps.
  union {
    int64_t stride = 0;  // kLoad with an argument: elements per unit of it
    double constant;     // kConst
    int64_t extent;      // kCheckIndex: the size of the dim it indexes
  };
  StepArgs args;  // kCall, kCast, kLoad: positions of earlier steps
};
static_assert(sizeof(ScalarOp) <= 40, "a program holds millions of steps");

// A node that a backend may run as a call into a library instead of its
// loops. The body still defines the result (an interpreter or a backend
// without the library runs the loops), so every pass reads it as usual.
//  - kGemm: a matrix product, out[..., m, n] = sum over k of
//    a[..., m, k] * b[..., k, n]: the body is exactly two affine loads and
//    their product, summed over k and any accumulation loops before it
//    (ir/gemm.h, MatchGemm, describes the calls). The library may sum in
//    another order.
//  - kConv: a 2-D convolution of an f32 image that is already padded
//    (ir/conv_call.h, MatchConv, describes the call), on backends that have
//    a convolution library; the others run its loops.
enum class ExternOp : uint8_t { kNone, kGemm, kConv };

// Writes `output` over a pointwise iteration space `ranges` (loop variables
// x0..x{n-1}), optionally reducing over `reduction_ranges` (variables
// xn..x{n+r-1}): out[store_index] = reduce(body[root]) or body[root].
// Several nodes may write parts of one buffer (concat, pad); program order
// is the order of those writes.
struct ComputeNode {
  std::string name;
  BufferId output = -1;
  std::vector<int64_t> ranges;
  std::vector<int64_t> reduction_ranges;
  ReduceKind reduce = ReduceKind::kNone;
  std::vector<ScalarOp> body;
  int root = -1;
  Expr store_index = nullptr;  // over the pointwise variables only
  ExternOp extern_op = ExternOp::kNone;

  // Extents of all loop variables: ranges then reduction_ranges.
  std::vector<int64_t> AllRanges() const;
};

// Where a kCheckIndex step checks, for the run's error message
// (ir/index_error.h): the graph node whose index operand it checks, and the
// dim it indexes.
struct IndexCheck {
  std::string node;
  std::string op;
  int64_t axis = 0;
  int64_t extent = 0;
};

// Lowering's decision for a pointwise value: copy its body into each
// reader's (inline it, so that it has no buffer and no compute node of its
// own), or store it for the readers to load. The first fusion decision a
// value meets, shown by `loom compile --explain_fusion` beside the fuser's.
enum class InlineReason : uint8_t {
  kInlined,         // small, and read at most once per element
  kTooManySteps,    // stored: its body has more steps than a copy may
  kTooManyReaders,  // stored: more readers than a body is copied into
  kReadRepeatedly,  // stored: its readers read more elements than it has
};

struct InlineDecision {
  std::string node;  // the graph node whose value it is
  InlineReason reason = InlineReason::kInlined;
  // What the reason measures (the body's steps, the readers, the elements
  // read) and its limit (for kReadRepeatedly, the value's elements).
  int64_t amount = 0;
  int64_t limit = 0;
  // kInlined: who copied the body, each a compute node (its index) or
  // another inlined value (-1 - its index in inline_decisions).
  absl::InlinedVector<int32_t, 2> readers;
};

// Compute nodes that run as one loop over iterations, each reading what
// the one before wrote (a recurrence kept as a loop: passes/lower_scan.cc):
// nodes [first, end), in order, all beginning with the same two loops, the
// rows of the loop's states and then the iterations, which the scheduler
// makes one kernel whose second outer loop runs in order (Kernel::
// ordered_loop). The states live in buffers of a slot per iteration.
struct LoopRegion {
  int first = 0;
  int end = 0;
};

struct LoopProgram {
  // Shared so that copies of a program (dumps, tests) keep expressions alive.
  std::shared_ptr<ExprContext> exprs = std::make_shared<ExprContext>();
  std::vector<Buffer> buffers;
  std::vector<ComputeNode> nodes;  // in a valid execution order
  std::vector<BufferId> inputs;    // in the order of Graph::inputs()
  std::vector<BufferId> outputs;   // in the order of Graph::outputs()
  std::vector<BufferId> weights;   // weights and constants the runtime binds
  // The kCheckIndex steps' sites, by ScalarOp::site, and the buffer they
  // record a failure in (-1 when there are none).
  std::vector<IndexCheck> index_checks;
  BufferId index_errors = -1;
  // Pointwise values that lowering inlined into their readers.
  int64_t inlined_values = 0;
  // Lowering's inlining decisions, one per pointwise value it inlined or
  // had to store (reductions, views and library calls are stored anyway);
  // only where asked for (LowerOptions::record_inline_decisions).
  std::vector<InlineDecision> inline_decisions;
  std::vector<LoopRegion> loop_regions;  // in node order
};

// The name of an InlineDecision's reader: a compute node's or another
// inlined value's.
const std::string& InlineReaderName(const LoopProgram& program, int32_t reader);

// Structural checks: buffer ids and argument positions in range, loads
// only from defined buffers, index variables within each node's loops,
// dtypes consistent. Errors name the compute node.
absl::Status VerifyLoopProgram(const LoopProgram& program);

// A readable listing of buffers and compute nodes, for dumps and tests.
std::string PrintLoopProgram(const LoopProgram& program);
std::string PrintComputeNode(const LoopProgram& program, const ComputeNode& node);

}  // namespace loom

#endif  // LOOM_IR_LOOP_IR_H_
