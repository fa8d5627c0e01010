#include "frontends/onnx/onnx_context.h"

#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

std::string AttrKindName(AttrKind kind) { return onnx::AttributeProto::AttributeType_Name(kind); }

}  // namespace

AttrKind KindOf(const onnx::AttributeProto& attr) {
  if (attr.type() != onnx::AttributeProto::UNDEFINED) return attr.type();
  if (attr.has_f()) return onnx::AttributeProto::FLOAT;
  if (attr.has_i()) return onnx::AttributeProto::INT;
  if (attr.has_s()) return onnx::AttributeProto::STRING;
  if (attr.has_t()) return onnx::AttributeProto::TENSOR;
  if (attr.has_g()) return onnx::AttributeProto::GRAPH;
  if (attr.floats_size() > 0) return onnx::AttributeProto::FLOATS;
  if (attr.ints_size() > 0) return onnx::AttributeProto::INTS;
  if (attr.strings_size() > 0) return onnx::AttributeProto::STRINGS;
  return onnx::AttributeProto::UNDEFINED;
}

NodeContext::NodeContext(const onnx::NodeProto& node, int64_t opset, Graph& graph, ValueMap& values,
                         SubgraphImporter* subgraphs, CompositeMap* composites)
    : node_(node),
      opset_(opset),
      graph_(graph),
      values_(values),
      subgraphs_(subgraphs),
      composites_(composites) {
  if (!node.name().empty()) {
    base_ = node.name();
  } else if (node.output_size() > 0 && !node.output(0).empty()) {
    base_ = node.output(0);
  } else {
    base_ = node.op_type();
  }
  label_ = absl::StrCat("node '", base_, "' (", node.op_type(), ")");
}

absl::Status NodeContext::Refuse(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(label_, ": ", message));
}

bool NodeContext::HasInput(int i) const {
  return i >= 0 && i < node_.input_size() && !node_.input(i).empty();
}

absl::StatusOr<ValueId> NodeContext::Input(int i) const {
  if (!HasInput(i)) {
    return Refuse(absl::StrCat("input ", i, " is missing"));
  }
  auto it = values_.find(node_.input(i));
  if (it == values_.end() && composites_ != nullptr && composites_->contains(node_.input(i))) {
    return Refuse(absl::StrCat("input '", node_.input(i), "' is a sequence or an optional; ",
                               node_.op_type(), " takes a tensor there"));
  }
  if (it == values_.end()) {
    return Refuse(absl::StrCat("input '", node_.input(i),
                               "' is not defined by any graph input, "
                               "initializer or earlier node"));
  }
  return it->second;
}

ValueId NodeContext::In(int i) {
  absl::StatusOr<ValueId> id = Input(i);
  if (!id.ok()) {
    Fail(id.status());
    return kNoValue;
  }
  return *id;
}

const TensorType& NodeContext::TypeOf(ValueId id) const {
  static const TensorType* const kNone = new TensorType();
  return id == kNoValue ? *kNone : graph_.value(id).type;
}

absl::StatusOr<Tensor> NodeContext::ConstInput(int i, absl::string_view what) const {
  LOOM_ASSIGN_OR_RETURN(ValueId id, Input(i));
  if (!graph_.HasInitializer(id)) {
    return Refuse(absl::StrCat("input '", node_.input(i), "' (", what,
                               ") must be known at import (an initializer, a Constant node or "
                               "computed from them): loom needs it at compile time"));
  }
  return graph_.initializer(id);
}

const Tensor* NodeContext::KnownData(ValueId id) const {
  return id != kNoValue && graph_.HasInitializer(id) ? &graph_.initializer(id) : nullptr;
}

absl::StatusOr<std::vector<int64_t>> NodeContext::ConstInts(int i, absl::string_view what) const {
  LOOM_ASSIGN_OR_RETURN(Tensor data, ConstInput(i, what));
  if (!IsInteger(data.dtype())) {
    return Refuse(absl::StrCat("input '", node_.input(i), "' (", what,
                               ") must be int32 or int64, not ", DTypeName(data.dtype())));
  }
  std::vector<int64_t> ints;
  for (int64_t k = 0; k < data.num_elements(); ++k) {
    ints.push_back(data.GetInt(k));
  }
  return ints;
}

absl::StatusOr<double> NodeContext::ConstScalar(int i, absl::string_view what) const {
  LOOM_ASSIGN_OR_RETURN(Tensor data, ConstInput(i, what));
  if (data.num_elements() != 1) {
    return Refuse(absl::StrCat("input '", node_.input(i), "' (", what,
                               ") must hold one element, it has shape ",
                               ShapeToString(data.shape())));
  }
  return data.GetDouble(0);
}

const onnx::AttributeProto* NodeContext::FindAttr(absl::string_view name) const {
  for (const onnx::AttributeProto& attr : node_.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

absl::Status NodeContext::CheckAttrs(absl::Span<const AttrRule> accepted) const {
  for (const onnx::AttributeProto& attr : node_.attribute()) {
    const AttrRule* rule = nullptr;
    for (const AttrRule& r : accepted) {
      if (r.name == attr.name()) rule = &r;
    }
    if (rule == nullptr) {
      return Refuse(
          absl::StrCat("attribute '", attr.name(), "' is not supported by loom's importer"));
    }
    if (!attr.ref_attr_name().empty()) {
      return Refuse(absl::StrCat("attribute '", attr.name(), "' refers to a function attribute"));
    }
    const AttrKind kind = KindOf(attr);
    if (kind != rule->kind) {
      return Refuse(absl::StrCat("attribute '", attr.name(), "' is ", AttrKindName(kind),
                                 ", expected ", AttrKindName(rule->kind)));
    }
  }
  return absl::OkStatus();
}

int64_t NodeContext::Int(absl::string_view name, int64_t default_value) const {
  const onnx::AttributeProto* attr = FindAttr(name);
  return attr == nullptr ? default_value : attr->i();
}

double NodeContext::Float(absl::string_view name, double default_value) const {
  const onnx::AttributeProto* attr = FindAttr(name);
  return attr == nullptr ? default_value : attr->f();
}

std::string NodeContext::String(absl::string_view name, std::string default_value) const {
  const onnx::AttributeProto* attr = FindAttr(name);
  return attr == nullptr ? std::move(default_value) : attr->s();
}

std::vector<int64_t> NodeContext::Ints(absl::string_view name) const {
  const onnx::AttributeProto* attr = FindAttr(name);
  if (attr == nullptr) return {};
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::vector<double> NodeContext::Floats(absl::string_view name) const {
  const onnx::AttributeProto* attr = FindAttr(name);
  if (attr == nullptr) return {};
  return std::vector<double>(attr->floats().begin(), attr->floats().end());
}

std::vector<std::string> NodeContext::Strings(absl::string_view name) const {
  const onnx::AttributeProto* attr = FindAttr(name);
  if (attr == nullptr) return {};
  return std::vector<std::string>(attr->strings().begin(), attr->strings().end());
}

const onnx::TensorProto* NodeContext::TensorAttr(absl::string_view name) const {
  const onnx::AttributeProto* attr = FindAttr(name);
  return attr == nullptr ? nullptr : &attr->t();
}

const onnx::GraphProto* NodeContext::GraphAttr(absl::string_view name) const {
  const onnx::AttributeProto* attr = FindAttr(name);
  return attr == nullptr || !attr->has_g() ? nullptr : &attr->g();
}

absl::StatusOr<std::vector<ScopeValue>> NodeContext::ImportSubgraph(
    const onnx::GraphProto& body, absl::Span<const ScopeValue> inputs,
    const std::vector<bool>& wanted_outputs) {
  if (subgraphs_ == nullptr) return Refuse("its graph attributes cannot be imported here");
  static const CompositeMap* const kNone = new CompositeMap;
  return subgraphs_->ImportSubgraph(
      *this, body, values_, composites_ == nullptr ? *kNone : *composites_, inputs, wanted_outputs);
}

bool NodeContext::IsCompositeInput(int i) const {
  return HasInput(i) && composites_ != nullptr && composites_->contains(node_.input(i));
}

absl::StatusOr<Composite> NodeContext::CompositeInput(int i) const {
  if (IsCompositeInput(i)) return composites_->at(node_.input(i));
  LOOM_RETURN_IF_ERROR(Input(i).status());
  return Refuse(absl::StrCat("input '", node_.input(i), "' is a tensor; ", node_.op_type(),
                             " takes a sequence or an optional there"));
}

absl::StatusOr<std::vector<ValueId>> NodeContext::SequenceInput(int i) const {
  if (!IsCompositeInput(i)) {
    LOOM_RETURN_IF_ERROR(Input(i).status());
    return Refuse(absl::StrCat("input '", node_.input(i), "' is a tensor; ", node_.op_type(),
                               " takes a sequence there"));
  }
  LOOM_ASSIGN_OR_RETURN(Composite value, CompositeInput(i));
  if (!value.has_sequence()) {
    return Refuse(absl::StrCat("input '", node_.input(i), "' is ",
                               value.present ? "an optional holding a tensor" : "an empty optional",
                               "; ", node_.op_type(), " takes a sequence there"));
  }
  return value.elements;
}

ScopeValue NodeContext::ValueIn(int i) {
  if (IsCompositeInput(i)) return {kNoValue, composites_->at(node_.input(i))};
  return {In(i), std::nullopt};
}

void NodeContext::BindComposite(int i, Composite value) {
  if (!WantsOutput(i)) return;
  if (composites_ == nullptr) {
    Fail(Refuse("a sequence or optional cannot be built here"));
    return;
  }
  (*composites_)[node_.output(i)] = std::move(value);
}

void NodeContext::BindValue(int i, const ScopeValue& value) {
  if (value.is_tensor()) {
    Bind(i, value.tensor);
  } else {
    BindComposite(i, *value.composite);
  }
}

bool NodeContext::OutputWantedAtImport(int i) const {
  return subgraphs_ != nullptr && WantsOutput(i) && subgraphs_->WantedAtImport(node_.output(i));
}

bool NodeContext::WantsOutput(int i) const {
  return i >= 0 && i < node_.output_size() && !node_.output(i).empty();
}

void NodeContext::Bind(int i, ValueId value) {
  if (value == kNoValue || !WantsOutput(i)) return;
  values_[node_.output(i)] = value;
}

bool NodeContext::AllOutputsBound() const {
  for (int i = 0; i < node_.output_size(); ++i) {
    if (WantsOutput(i) && !values_.contains(node_.output(i)) &&
        (composites_ == nullptr || !composites_->contains(node_.output(i)))) {
      return false;
    }
  }
  return true;
}

std::string NodeContext::FreshName(absl::string_view what) {
  return graph_.UniqueValueName(absl::StrCat(base_, "/", what));
}

void NodeContext::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
}

std::vector<ValueId> NodeContext::EmitNode(const std::string& op, std::vector<ValueId> inputs,
                                           Attrs attrs, int num_outputs,
                                           const std::vector<int>& onnx_outputs) {
  std::vector<ValueId> failed(num_outputs, kNoValue);
  if (!status_.ok()) return failed;
  for (ValueId input : inputs) {
    if (input == kNoValue) {
      Fail(absl::InternalError(absl::StrCat(label_, ": a loom ", op, " node reads no value")));
      return failed;
    }
  }
  std::vector<std::string> names;
  for (int k = 0; k < num_outputs; ++k) {
    const int onnx_index = k < static_cast<int>(onnx_outputs.size()) ? onnx_outputs[k] : -1;
    if (WantsOutput(onnx_index) && graph_.FindValue(node_.output(onnx_index)) < 0) {
      names.push_back(node_.output(onnx_index));
    } else {
      names.push_back(FreshName(op));
    }
  }
  absl::StatusOr<NodeId> id = graph_.AddNode(base_, op, std::move(inputs), names, std::move(attrs));
  if (!id.ok()) {
    Fail(Refuse(id.status().message()));
    return failed;
  }
  const Node& node = graph_.node(*id);
  absl::StatusOr<const OpDef*> def = FindCheckedOpDef(node, OpRegistry::Global());
  std::vector<TensorType> types;
  for (ValueId input : node.inputs) types.push_back(graph_.value(input).type);
  absl::StatusOr<OutputTypes> inferred =
      def.ok() ? (*def)->infer(node, types) : absl::StatusOr<OutputTypes>(def.status());
  if (!inferred.ok()) {
    Fail(Refuse(absl::StrCat("loom ", op, ": ", inferred.status().message())));
    return failed;
  }
  if (static_cast<int>(inferred->size()) != num_outputs) {
    Fail(absl::InternalError(
        absl::StrCat(label_, ": loom ", op, " gave ", inferred->size(), " outputs")));
    return failed;
  }
  if (absl::Status s = CheckOutputLimits(graph_, node, *inferred); !s.ok()) {
    Fail(Refuse(absl::StrCat("loom ", op, ": ", s.message())));
    return failed;
  }
  std::vector<ValueId> outputs = node.outputs;
  for (int k = 0; k < num_outputs; ++k) {
    graph_.mutable_value(outputs[k]).type = std::move((*inferred)[k]);
    if (k < static_cast<int>(onnx_outputs.size())) {
      Bind(onnx_outputs[k], outputs[k]);
    }
  }
  return outputs;
}

ValueId NodeContext::Emit(const std::string& op, std::vector<ValueId> inputs, Attrs attrs) {
  return EmitNode(op, std::move(inputs), std::move(attrs), 1)[0];
}

ValueId NodeContext::EmitOutput(int i, const std::string& op, std::vector<ValueId> inputs,
                                Attrs attrs) {
  return EmitNode(op, std::move(inputs), std::move(attrs), 1, {i})[0];
}

ValueId NodeContext::CastTo(ValueId value, DType dtype) {
  if (value == kNoValue || TypeOf(value).dtype == dtype) return value;
  return Emit("cast", {value}, MakeAttrs({{"to", std::string(DTypeName(dtype))}}));
}

absl::Status NodeContext::CheckBuildable(const Shape& shape) const {
  // Constants built at import stay far below memory limits.
  constexpr int64_t kMaxElements = int64_t{1} << 28;
  const std::optional<int64_t> elements = CheckedProduct(shape);
  if (absl::c_any_of(shape, [](int64_t dim) { return dim < 0; }) || !elements.has_value() ||
      *elements > kMaxElements) {
    return Refuse(absl::StrCat("a constant of shape ", ShapeToString(shape),
                               " is invalid or too large to build at import"));
  }
  return absl::OkStatus();
}

ValueId NodeContext::Constant(Tensor data) {
  if (!status_.ok()) return kNoValue;
  absl::StatusOr<ValueId> id =
      graph_.AddInitializer(FreshName("const"), ValueKind::kConstant, std::move(data));
  if (!id.ok()) {
    Fail(id.status());
    return kNoValue;
  }
  return *id;
}

ValueId NodeContext::Scalar(DType dtype, double value) {
  Tensor data(dtype, {});
  data.SetDouble(0, value);
  return Constant(std::move(data));
}

ValueId NodeContext::ConstantOutput(int i, Tensor data) {
  if (!status_.ok() || !WantsOutput(i)) return kNoValue;
  const std::string& name = node_.output(i);
  absl::StatusOr<ValueId> id =
      graph_.AddInitializer(graph_.FindValue(name) < 0 ? name : graph_.UniqueValueName(name),
                            ValueKind::kConstant, std::move(data));
  if (!id.ok()) {
    Fail(id.status());
    return kNoValue;
  }
  Bind(i, *id);
  return *id;
}

}  // namespace loom::onnx_import
