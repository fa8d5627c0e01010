#ifndef LOOM_IR_OP_REGISTRY_H_
#define LOOM_IR_OP_REGISTRY_H_

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace loom {

enum class AttrType { kInt, kFloat, kString, kInts, kFloats, kStrings };

struct AttrSpec {
  std::string name;
  AttrType type;
  bool required = false;
};

// A node's output types. Nearly every op has one output, which is kept in
// place: inferring the types of a graph of millions of nodes then takes no
// heap block per node beyond each output's shape.
using OutputTypes = absl::InlinedVector<TensorType, 1>;

// Computes a node's output types from its input types and attributes, and
// checks the op's dtype and shape rules. Errors describe the cause only;
// callers prefix the node's name and op.
using ShapeFn = std::function<absl::StatusOr<OutputTypes>(const Node& node,
                                                          absl::Span<const TensorType> inputs)>;

// The reference implementation: computes a node's outputs straight from the
// op's definition with plain loops. `outputs` arrive allocated with the
// inferred types. Errors (e.g. integer division by zero) describe the cause
// only; the interpreter prefixes the node's name and op.
using EvalFn = std::function<absl::Status(const Node& node, absl::Span<const Tensor* const> inputs,
                                          absl::Span<Tensor> outputs)>;

// What an error bound (InterpretWithErrorBounds, ir/interpreter.h) is
// computed from: a node's inputs (float values in float64) with bounds on
// their errors, and the outputs the reference implementation computed.
struct BoundContext {
  const Node& node;
  const EvalFn& eval;  // the op's reference implementation
  absl::Span<const Tensor* const> inputs;
  // Float64, shaped as the inputs; null for an input known exactly.
  absl::Span<const Tensor* const> input_bounds;
  absl::Span<const Tensor> outputs;
  // Per output: the rounding unit of its dtype in the graph as written
  // (2^-24 for f32, 2^-53 for f64), 0 for integers and bools.
  absl::Span<const double> units;
};

// Sets `bounds` (float64, shaped as the outputs, zero on entry): per
// element, how far a float32 implementation's result may be from the exact
// result on exact inputs, given the input bounds.
using BoundFn = std::function<absl::Status(const BoundContext& context, absl::Span<Tensor> bounds)>;

// How an op's output elements depend on its inputs' (TVM's OpPatternKind):
// what passes ask of an op instead of testing its name. Each op sets one.
enum class OpPattern {
  kUnset,        // no op is registered so (op_registry_test checks)
  kElementwise,  // element i of the output from element i of each input
  kBroadcast,    // from the elements that broadcast to i (numpy rules)
  kInjective,    // a copy of one input element (or a constant): data movement
  kReduction,    // combines the elements along some axes of an input
  kContraction,  // sums products of two operands' elements (matmul, conv)
  kOpaque,       // none of these: sorting, recurrences, whole composites
};

struct OpDef {
  std::string name;
  int min_inputs = 1;
  int max_inputs = 1;   // -1: variadic
  int num_outputs = 1;  // -1: variadic, one or more (e.g. split)
  std::vector<AttrSpec> attrs;
  ShapeFn infer;
  EvalFn eval;
  // String attributes that name a dtype (cast's "to"): the interpreter's
  // float64 mode widens "f32" there as it widens the values.
  std::vector<std::string> dtype_attrs;
  // The op's error model. Unset: each output element depends on at most
  // one element of each input (elementwise ops, data movement), and the
  // bound is PointwiseBound (ir/ops/error_bound.h) with `rounding_ulps`:
  // units in the last place an implementation's own rounding may add (0
  // for ops whose results are exact: data movement, comparisons, max).
  double rounding_ulps = 4;
  BoundFn bound;
  OpPattern pattern = OpPattern::kUnset;
  // The outputs are views of input 0: each output element is an element of
  // it, at a place that the shapes and attributes alone decide (reshape,
  // transpose, slice, ...). Implies kInjective.
  bool is_view = false;
  // The inputs that output elements read at places the values of index
  // inputs decide (a gather's data; a scatter's indices and updates, which
  // every output element searches): any of their elements may be read for
  // any output element.
  std::vector<int> indexed_inputs;

  bool ReadsByIndex(int input) const {
    return std::find(indexed_inputs.begin(), indexed_inputs.end(), input) != indexed_inputs.end();
  }
};

absl::string_view OpPatternName(OpPattern pattern);

// Every op loom knows: arity, attribute schema, shape function and
// reference implementation.
class OpRegistry {
 public:
  // The registry with all of loom's ops, built on first use.
  static const OpRegistry& Global();

  absl::Status Register(OpDef def);
  const OpDef* Find(absl::string_view op) const;
  // Op names in registration order.
  std::vector<std::string> Names() const;

 private:
  std::vector<OpDef> defs_;
  absl::flat_hash_map<std::string, int> index_;
};

// "node 'fc1' (matmul)": how every error names a node.
std::string DescribeNode(const Node& node);
// `status` with its message prefixed by "node 'NAME' (OP): ".
absl::Status AddNodeContext(const Node& node, const absl::Status& status);

// Checks a node against its op's definition: the op exists, arity, output
// count, and attribute names and types. Errors name the node and op.
absl::Status CheckNodeSignature(const Node& node, const OpRegistry& registry);
// CheckNodeSignature that also returns the op's definition when the node
// passes, for callers that go on to use it (one registry lookup, not two).
absl::StatusOr<const OpDef*> FindCheckedOpDef(const Node& node, const OpRegistry& registry);
// FindCheckedOpDef with the op's definition already looked up (null: the op
// is unknown).
absl::StatusOr<const OpDef*> CheckedOpDef(const Node& node, const OpDef* def);

// Checks the output types a shape function inferred for `node` against the
// tensor limits (CheckShapeLimits): shape functions add and multiply
// dimensions freely, and every size computed later relies on the limits.
// Errors name the output value; callers add the node.
absl::Status CheckOutputLimits(const Graph& graph, const Node& node,
                               absl::Span<const TensorType> types);

// Runs shape inference over the whole graph in node order, setting every
// intermediate value's type. Each node first passes CheckNodeSignature, so
// shape functions may rely on arity and attribute types. Errors name the
// node and op.
absl::Status InferShapes(Graph& graph, const OpRegistry& registry = OpRegistry::Global());

// InferShapes that runs the shape functions of the nodes i with which[i]
// only, and takes the stored output types of the others as they are (they
// must be up to date): for a pass that rewrote a few nodes of a typed graph.
absl::Status InferShapesOfNodes(Graph& graph, const std::vector<bool>& which,
                                const OpRegistry& registry = OpRegistry::Global());

}  // namespace loom

#endif  // LOOM_IR_OP_REGISTRY_H_
