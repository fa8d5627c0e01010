#ifndef LOOM_FRONTENDS_ONNX_ONNX_CONTEXT_H_
#define LOOM_FRONTENDS_ONNX_ONNX_CONTEXT_H_

// What an op converter of the ONNX importer sees: one ONNX node, its
// operands resolved to loom values, its attributes, and a builder that adds
// loom nodes (with their types inferred at once) to the graph being built.
// Internal to frontends/onnx.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/support/attrs.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace loom::onnx_import {

using AttrKind = onnx::AttributeProto::AttributeType;

// ONNX value name -> loom value.
using ValueMap = absl::flat_hash_map<std::string, ValueId>;

// An ONNX value that is not a tensor, held at import as its structure
// (loom's values are tensors): a sequence of tensors, or an optional that
// is empty or holds a tensor or a sequence. What loom runs are its
// elements, loom values.
struct Composite {
  enum class Kind { kSequence, kOptional };
  Kind kind = Kind::kSequence;
  // An optional: whether it holds a value, and whether that is a sequence.
  bool present = true;
  bool holds_sequence = false;
  // The sequence's elements (of a sequence, or an optional's sequence), or
  // the optional's one tensor.
  std::vector<ValueId> elements;

  static Composite Sequence(std::vector<ValueId> elements) {
    return {Kind::kSequence, true, false, std::move(elements)};
  }
  static Composite EmptyOptional(bool of_sequence) {
    return {Kind::kOptional, false, of_sequence, {}};
  }
  bool is_sequence() const { return kind == Kind::kSequence; }
  // The sequence an optional holds (or the sequence itself).
  bool has_sequence() const { return is_sequence() || (present && holds_sequence); }
};

// ONNX value name -> sequence or optional.
using CompositeMap = absl::flat_hash_map<std::string, Composite>;

// An ONNX value at import: a tensor (a loom value) or a composite.
struct ScopeValue {
  ValueId tensor = -1;
  std::optional<Composite> composite;

  bool is_tensor() const { return !composite.has_value(); }
};

// An attribute a converter accepts, with its ONNX type.
struct AttrRule {
  absl::string_view name;
  AttrKind kind;
};

class NodeContext;

// Imports the graphs that nodes hold as attributes (If's branches, Loop's
// and Scan's bodies) into the graph being built: implemented by the
// importer, used by the control-flow converters through NodeContext.
class SubgraphImporter {
 public:
  // Imports `body` once, in a scope where the values of `outer` and
  // `outer_composites` (the enclosing scope's, as ONNX's scoping rules make
  // them visible) are visible and body input k is `inputs[k]`; returns the
  // values of its outputs. `wanted_outputs[k]`: body output k is wanted at
  // import (a constant where its inputs allow it). Errors name `node`.
  virtual absl::StatusOr<std::vector<ScopeValue>> ImportSubgraph(
      const NodeContext& node, const onnx::GraphProto& body, const ValueMap& outer,
      const CompositeMap& outer_composites, absl::Span<const ScopeValue> inputs,
      const std::vector<bool>& wanted_outputs) = 0;
  // Whether loom wants value `name` of the scope being imported known at
  // import (a constant where its inputs allow it).
  virtual bool WantedAtImport(const std::string& name) const = 0;

 protected:
  ~SubgraphImporter() = default;
};

// Emitting nodes uses a sticky error, like a stream: once an Emit fails,
// later ones do nothing and return kNoValue, and status() holds the first
// error. Converters build their subgraph straight-line and return status().
class NodeContext {
 public:
  static constexpr ValueId kNoValue = -1;

  NodeContext(const onnx::NodeProto& node, int64_t opset, Graph& graph, ValueMap& values,
              SubgraphImporter* subgraphs = nullptr, CompositeMap* composites = nullptr);

  const onnx::NodeProto& proto() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  int64_t opset() const { return opset_; }
  // "node 'NAME' (OpType)": how every message names the node.
  const std::string& label() const { return label_; }
  // InvalidArgument "node 'NAME' (OpType): <message>".
  absl::Status Refuse(absl::string_view message) const;

  // --- inputs -------------------------------------------------------------
  int num_inputs() const { return node_.input_size(); }
  // Present: listed and not the empty name that marks an absent optional.
  bool HasInput(int i) const;
  // The loom value of input `i`; kNoValue and the sticky error when it is
  // absent or undefined.
  ValueId In(int i);
  // A value's type (an empty f32 scalar for kNoValue, so that a converter
  // may read types before it checks status()). The reference lasts until
  // the next value is added: keep a copy across Emit and Constant calls.
  const TensorType& TypeOf(ValueId id) const;
  int64_t RankOf(ValueId id) const { return static_cast<int64_t>(TypeOf(id).shape.size()); }
  // A copy of the data of input `i`, which must be known at import: an
  // initializer, a Constant node or computed from them. `what` says what
  // loom needs it for ("the target shape").
  absl::StatusOr<Tensor> ConstInput(int i, absl::string_view what) const;
  // The data of `id` when it is known at import (a constant), else null.
  const Tensor* KnownData(ValueId id) const;
  // ConstInput for integer tensors, as a flat list.
  absl::StatusOr<std::vector<int64_t>> ConstInts(int i, absl::string_view what) const;
  // ConstInput for a one-element tensor, as a double.
  absl::StatusOr<double> ConstScalar(int i, absl::string_view what) const;

  // --- attributes ---------------------------------------------------------
  // Refuses any attribute not in `accepted`, or of another type: an
  // attribute loom does not understand must not be silently ignored.
  absl::Status CheckAttrs(absl::Span<const AttrRule> accepted) const;
  bool HasAttr(absl::string_view name) const { return FindAttr(name); }
  int64_t Int(absl::string_view name, int64_t default_value) const;
  double Float(absl::string_view name, double default_value) const;
  std::string String(absl::string_view name, std::string default_value) const;
  std::vector<int64_t> Ints(absl::string_view name) const;
  std::vector<double> Floats(absl::string_view name) const;
  std::vector<std::string> Strings(absl::string_view name) const;
  const onnx::TensorProto* TensorAttr(absl::string_view name) const;
  // A GRAPH attribute, or null.
  const onnx::GraphProto* GraphAttr(absl::string_view name) const;

  // --- graph attributes ---------------------------------------------------
  // SubgraphImporter::ImportSubgraph in this node's scope (a refusal where
  // the importer does not import graphs, as when it folds a node alone).
  absl::StatusOr<std::vector<ScopeValue>> ImportSubgraph(const onnx::GraphProto& body,
                                                         absl::Span<const ScopeValue> inputs,
                                                         const std::vector<bool>& wanted_outputs);
  // Whether ONNX output `i` is wanted known at import (see
  // SubgraphImporter::WantedAtImport).
  bool OutputWantedAtImport(int i) const;

  // --- sequences and optionals -------------------------------------------
  // Whether input `i` is a sequence or an optional.
  bool IsCompositeInput(int i) const;
  // Input `i` as a sequence or optional; a refusal for a tensor.
  absl::StatusOr<Composite> CompositeInput(int i) const;
  // The elements of input `i`, a sequence (or an optional holding one).
  absl::StatusOr<std::vector<ValueId>> SequenceInput(int i) const;
  // Input `i`, a tensor or a composite (the sticky error when undefined).
  ScopeValue ValueIn(int i);
  // Makes ONNX output `i` stand for `value`.
  void BindComposite(int i, Composite value);
  void BindValue(int i, const ScopeValue& value);

  // --- outputs ------------------------------------------------------------
  int num_outputs() const { return node_.output_size(); }
  // Listed and not the empty name of an unused optional output.
  bool WantsOutput(int i) const;
  // Makes ONNX output `i` stand for `value` (an alias: Identity, or a node
  // whose result some earlier value already holds).
  void Bind(int i, ValueId value);
  // Whether every wanted output has been bound.
  bool AllOutputsBound() const;

  // --- building -----------------------------------------------------------
  // Adds loom node `op` with `num_outputs` outputs; output k is named after
  // and bound to ONNX output onnx_outputs[k] when that is given and >= 0,
  // else it gets a fresh name. Infers the output types.
  std::vector<ValueId> EmitNode(const std::string& op, std::vector<ValueId> inputs, Attrs attrs,
                                int num_outputs, const std::vector<int>& onnx_outputs = {});
  // One output with a fresh name.
  ValueId Emit(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {});
  // One output, bound to ONNX output `i`.
  ValueId EmitOutput(int i, const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {});
  // `value` cast to `dtype` (itself when it has that dtype already).
  ValueId CastTo(ValueId value, DType dtype);
  // Refuses to build a constant of `shape` at import when it has a negative
  // dim or is too large (call before allocating its data).
  absl::Status CheckBuildable(const Shape& shape) const;
  // A constant holding `data`.
  ValueId Constant(Tensor data);
  // A rank-0 constant.
  ValueId Scalar(DType dtype, double value);
  // A constant of ONNX output `i`'s name (for outputs known at import).
  ValueId ConstantOutput(int i, Tensor data);
  // The first error of any In, Emit or Constant call.
  const absl::Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

 private:
  // Records `status` as the sticky error (if it is the first).
  void Fail(absl::Status status);
  absl::StatusOr<ValueId> Input(int i) const;
  const onnx::AttributeProto* FindAttr(absl::string_view name) const;
  std::string FreshName(absl::string_view what);

  const onnx::NodeProto& node_;
  const int64_t opset_;
  Graph& graph_;
  ValueMap& values_;
  SubgraphImporter* const subgraphs_;
  CompositeMap* const composites_;  // null where none can be (folding)
  std::string base_;                // prefix of the names of values this node creates
  std::string label_;
  absl::Status status_;
};

// The ONNX type of an attribute: its `type` field, or for old models that
// leave it unset, the kind of value it holds.
AttrKind KindOf(const onnx::AttributeProto& attr);

}  // namespace loom::onnx_import

#endif  // LOOM_FRONTENDS_ONNX_ONNX_CONTEXT_H_
