#ifndef LOOM_IR_LOOP_IR_H_
#define LOOM_IR_LOOP_IR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  kInput,     // a graph input
  kWeight,    // a graph weight or constant, bound from the graph's data
  kOutput,    // a graph output
  kTemp,      // an intermediate the runtime allocates
};

struct Buffer {
  std::string name;
  DType dtype = DType::kF32;
  Shape sizes;
  std::vector<int64_t> strides;  // in elements
  BufferKind kind = BufferKind::kTemp;
  ValueId source = -1;  // the graph value it holds (inputs, weights, outputs)
};

// Scalar functions of a compute node's body.
enum class ScalarFn : uint8_t {
  // Unary.
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kReciprocal, kTanh, kSigmoid, kRelu,
  kNot,
  // Binary.
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin,
  kEq, kNe, kLt, kLe, kGt, kGe,
  // Ternary: select(cond, a, b).
  kSelect,
};

int ScalarFnArity(ScalarFn fn);
const char* ScalarFnName(ScalarFn fn);

enum class ReduceKind : uint8_t { kNone, kSum, kMax, kMin, kProd };
const char* ReduceKindName(ReduceKind kind);

// One step of a body: a small DAG stored in order, operands by position.
struct ScalarOp {
  enum class Kind : uint8_t { kLoad, kConst, kCall, kCast };
  Kind kind;
  DType dtype;               // the type of this step's result
  BufferId buffer = -1;      // kLoad
  Expr index = nullptr;      // kLoad: flat element offset into the buffer
  double constant = 0;       // kConst
  ScalarFn fn = ScalarFn::kAdd;  // kCall
  std::vector<int> args;     // kCall, kCast: positions of earlier steps
};

// Writes `output` over a pointwise iteration space `ranges` (loop variables
// x0..x{n-1}), optionally reducing over `reduction_ranges` (variables
// xn..x{n+r-1}): out[store_index] = reduce(body[root]) or body[root].
struct ComputeNode {
  std::string name;
  BufferId output = -1;
  std::vector<int64_t> ranges;
  std::vector<int64_t> reduction_ranges;
  ReduceKind reduce = ReduceKind::kNone;
  std::vector<ScalarOp> body;
  int root = -1;
  Expr store_index = nullptr;  // over the pointwise variables only

  // Extents of all loop variables: ranges then reduction_ranges.
  std::vector<int64_t> AllRanges() const;
};

struct LoopProgram {
  // Shared so that copies of a program (dumps, tests) keep expressions alive.
  std::shared_ptr<ExprContext> exprs = std::make_shared<ExprContext>();
  std::vector<Buffer> buffers;
  std::vector<ComputeNode> nodes;   // in a valid execution order
  std::vector<BufferId> inputs;     // in the order of Graph::inputs()
  std::vector<BufferId> outputs;    // in the order of Graph::outputs()
  std::vector<BufferId> weights;    // weights and constants the runtime binds
};

// Structural checks: buffer ids and argument positions in range, loads
// only from defined buffers, index variables within each node's loops,
// dtypes consistent. Errors name the compute node.
absl::Status VerifyLoopProgram(const LoopProgram& program);

// A readable listing of buffers and compute nodes, for dumps and tests.
std::string PrintLoopProgram(const LoopProgram& program);
std::string PrintComputeNode(const LoopProgram& program, const ComputeNode& node);

}  // namespace loom

#endif  // LOOM_IR_LOOP_IR_H_
