// Sequences and optionals at import: loom's values are tensors, so a
// sequence or an optional is held as its structure (Composite: the loom
// values of its elements, or whether an optional holds a value), which
// must be known at import, as must every position that indexes one. The
// ops that build, take apart or query them move loom values around or
// compute constants (SequenceLength, OptionalHasElement); SplitToSequence
// and ConcatFromSequence emit slices and concatenations; SequenceMap
// imports its body once per element.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_subgraph.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// A sequence's elements must share one element type (ONNX types a
// sequence by it).
absl::Status CheckElementType(const NodeContext& ctx, const std::vector<ValueId>& elements,
                              ValueId added) {
  if (elements.empty() || ctx.TypeOf(elements[0]).dtype == ctx.TypeOf(added).dtype) {
    return absl::OkStatus();
  }
  return ctx.Refuse(absl::StrCat("a sequence of ", DTypeName(ctx.TypeOf(elements[0]).dtype),
                                 " cannot take a ", DTypeName(ctx.TypeOf(added).dtype), " tensor"));
}

// The position input `i` (known at import; `fallback` when absent) as an
// index into `size` elements: in [-size, size) or, with `at_end_too`,
// [-size, size].
absl::StatusOr<int64_t> Position(const NodeContext& ctx, int i, int64_t fallback, int64_t size,
                                 bool at_end_too) {
  int64_t position = fallback;
  if (ctx.HasInput(i)) {
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> values, ctx.ConstInts(i, "the position"));
    if (values.size() != 1) return ctx.Refuse("the position must be one integer");
    position = values[0];
  }
  const int64_t high = at_end_too ? size : size - 1;
  if (position < -size || position > high) {
    return ctx.Refuse(absl::StrCat("position ", position, " is out of range for a sequence of ",
                                   size, " (", -size, " to ", high, ")"));
  }
  return position < 0 ? position + size : position;
}

absl::Status ConvertSequenceConstruct(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  std::vector<ValueId> elements;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const ValueId element = ctx.In(i);
    LOOM_RETURN_IF_ERROR(ctx.status());
    LOOM_RETURN_IF_ERROR(CheckElementType(ctx, elements, element));
    elements.push_back(element);
  }
  ctx.BindComposite(0, Composite::Sequence(std::move(elements)));
  return ctx.status();
}

absl::Status ConvertSequenceEmpty(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"dtype", kInt}}));
  ctx.BindComposite(0, Composite::Sequence({}));
  return ctx.status();
}

absl::Status ConvertSequenceInsert(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> elements, ctx.SequenceInput(0));
  const ValueId tensor = ctx.In(1);
  LOOM_RETURN_IF_ERROR(ctx.status());
  LOOM_RETURN_IF_ERROR(CheckElementType(ctx, elements, tensor));
  const int64_t size = static_cast<int64_t>(elements.size());
  LOOM_ASSIGN_OR_RETURN(int64_t position, Position(ctx, 2, size, size, /*at_end_too=*/true));
  elements.insert(elements.begin() + position, tensor);
  ctx.BindComposite(0, Composite::Sequence(std::move(elements)));
  return ctx.status();
}

absl::Status ConvertSequenceErase(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> elements, ctx.SequenceInput(0));
  const int64_t size = static_cast<int64_t>(elements.size());
  LOOM_ASSIGN_OR_RETURN(int64_t position, Position(ctx, 1, -1, size, /*at_end_too=*/false));
  elements.erase(elements.begin() + position);
  ctx.BindComposite(0, Composite::Sequence(std::move(elements)));
  return ctx.status();
}

absl::Status ConvertSequenceAt(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> elements, ctx.SequenceInput(0));
  const int64_t size = static_cast<int64_t>(elements.size());
  LOOM_ASSIGN_OR_RETURN(int64_t position, Position(ctx, 1, 0, size, /*at_end_too=*/false));
  ctx.Bind(0, elements[position]);
  return ctx.status();
}

absl::Status ConvertSequenceLength(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> elements, ctx.SequenceInput(0));
  Tensor length(DType::kI64, {});
  length.SetInt(0, static_cast<int64_t>(elements.size()));
  ctx.ConstantOutput(0, std::move(length));
  return ctx.status();
}

// SplitToSequence's parts along `axis` of a dim of `dim`: the `split`
// input's sizes, chunks of its one size (the last smaller), or ones.
absl::StatusOr<std::vector<int64_t>> SplitSizes(const NodeContext& ctx, int64_t dim) {
  if (!ctx.HasInput(1)) return std::vector<int64_t>(dim, 1);
  LOOM_ASSIGN_OR_RETURN(Tensor split, ctx.ConstInput(1, "the split"));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ctx.ConstInts(1, "the split"));
  if (split.shape().empty()) {
    if (sizes[0] <= 0) {
      return ctx.Refuse(absl::StrCat("the split size ", sizes[0], " must be positive"));
    }
    std::vector<int64_t> chunks;
    for (int64_t start = 0; start < dim; start += sizes[0]) {
      chunks.push_back(std::min(sizes[0], dim - start));
    }
    return chunks;
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0) return ctx.Refuse(absl::StrCat("the split holds a negative size ", size));
    total += size;
  }
  if (total != dim) {
    return ctx.Refuse(absl::StrCat("the split's sizes add up to ", total, ", not the axis' ", dim));
  }
  return sizes;
}

absl::Status ConvertSplitToSequence(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}, {"keepdims", kInt}}));
  const ValueId input = ctx.In(0);
  LOOM_RETURN_IF_ERROR(ctx.status());
  const Shape shape = ctx.TypeOf(input).shape;
  LOOM_ASSIGN_OR_RETURN(
      int64_t axis, NormalizedAxis(ctx, ctx.Int("axis", 0), static_cast<int64_t>(shape.size())));
  const int64_t keepdims = ctx.Int("keepdims", 1);
  if (keepdims != 0 && keepdims != 1) {
    return ctx.Refuse(absl::StrCat("attribute 'keepdims' is ", keepdims, "; it is 0 or 1"));
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, SplitSizes(ctx, shape[axis]));
  // keepdims applies only without a split input.
  const bool squeeze = keepdims == 0 && !ctx.HasInput(1);
  std::vector<ValueId> elements;
  int64_t start = 0;
  for (int64_t size : sizes) {
    ValueId part = ctx.Emit("slice", {input},
                            MakeAttrs({{"starts", std::vector<int64_t>{start}},
                                       {"ends", std::vector<int64_t>{start + size}},
                                       {"axes", std::vector<int64_t>{axis}}}));
    if (squeeze) {
      part = ctx.Emit("squeeze", {part}, MakeAttrs({{"axes", std::vector<int64_t>{axis}}}));
    }
    elements.push_back(part);
    start += size;
  }
  LOOM_RETURN_IF_ERROR(ctx.status());
  ctx.BindComposite(0, Composite::Sequence(std::move(elements)));
  return ctx.status();
}

absl::Status ConvertConcatFromSequence(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}, {"new_axis", kInt}}));
  if (!ctx.HasAttr("axis")) return ctx.Refuse("attribute 'axis' is required");
  LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> elements, ctx.SequenceInput(0));
  if (elements.empty()) return ctx.Refuse("the sequence is empty: there is nothing to concatenate");
  const int64_t new_axis = ctx.Int("new_axis", 0);
  if (new_axis != 0 && new_axis != 1) {
    return ctx.Refuse(absl::StrCat("attribute 'new_axis' is ", new_axis, "; it is 0 or 1"));
  }
  const int64_t rank = ctx.RankOf(elements[0]) + new_axis;
  LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(ctx, ctx.Int("axis", 0), rank));
  if (new_axis == 1) {
    for (ValueId& element : elements) {
      element = ctx.Emit("unsqueeze", {element}, MakeAttrs({{"axes", std::vector<int64_t>{axis}}}));
    }
  }
  ctx.EmitOutput(0, "concat", std::move(elements), MakeAttrs({{"axis", axis}}));
  return ctx.status();
}

// SequenceMap: its body imported once per element of the first input;
// further sequence inputs (of the same length) give their element too,
// tensor inputs themselves. Each body output makes one output sequence.
absl::Status ConvertSequenceMap(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"body", kGraph}}));
  const onnx::GraphProto* body = ctx.GraphAttr("body");
  if (body == nullptr) return ctx.Refuse("attribute 'body' is required");
  if (body->input_size() != ctx.num_inputs() || body->output_size() != ctx.num_outputs()) {
    return ctx.Refuse(absl::StrCat("its body has ", body->input_size(), " inputs and ",
                                   body->output_size(), " outputs for ", ctx.num_inputs(),
                                   " node inputs and ", ctx.num_outputs(), " outputs"));
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> first, ctx.SequenceInput(0));
  const size_t length = first.size();
  std::vector<ScopeValue> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    inputs.push_back(ctx.ValueIn(i));
    LOOM_RETURN_IF_ERROR(ctx.status());
    if (!inputs.back().is_tensor() && !inputs.back().composite->has_sequence()) {
      return ctx.Refuse(absl::StrCat("input ", i,
                                     " is an optional; SequenceMap takes sequences "
                                     "and tensors"));
    }
    if (!inputs.back().is_tensor() && inputs.back().composite->elements.size() != length) {
      return ctx.Refuse(absl::StrCat("input ", i, " is a sequence of ",
                                     inputs.back().composite->elements.size(), ", input 0 of ",
                                     length));
    }
  }
  std::vector<bool> outputs_wanted;
  for (int i = 0; i < ctx.num_outputs(); ++i) outputs_wanted.push_back(ctx.OutputWantedAtImport(i));
  const std::vector<bool> wanted =
      WantedBodyOutputs(ctx.proto(), *body, outputs_wanted, /*if_conditions=*/true);
  std::vector<std::vector<ValueId>> results(ctx.num_outputs());
  for (size_t k = 0; k < length; ++k) {
    std::vector<ScopeValue> element_inputs;
    for (const ScopeValue& input : inputs) {
      element_inputs.push_back(
          input.is_tensor() ? input : ScopeValue{input.composite->elements[k], std::nullopt});
    }
    LOOM_ASSIGN_OR_RETURN(std::vector<ScopeValue> outputs,
                          ctx.ImportSubgraph(*body, element_inputs, wanted));
    for (int o = 0; o < ctx.num_outputs(); ++o) {
      if (!outputs[o].is_tensor()) return ctx.Refuse("its body must output tensors");
      results[o].push_back(outputs[o].tensor);
    }
  }
  for (int o = 0; o < ctx.num_outputs(); ++o) {
    ctx.BindComposite(o, Composite::Sequence(std::move(results[o])));
  }
  return ctx.status();
}

absl::Status ConvertOptional(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"type", kTypeProto}}));
  if (!ctx.HasInput(0)) {
    const onnx::TypeProto* type = nullptr;
    for (const onnx::AttributeProto& attr : ctx.proto().attribute()) {
      if (attr.name() == "type") type = &attr.tp();
    }
    if (type == nullptr) return ctx.Refuse("without an input, attribute 'type' is required");
    if (!type->has_tensor_type() && !type->has_sequence_type()) {
      return ctx.Refuse("attribute 'type' is neither a tensor nor a sequence type");
    }
    ctx.BindComposite(0, Composite::EmptyOptional(type->has_sequence_type()));
    return ctx.status();
  }
  const ScopeValue value = ctx.ValueIn(0);
  LOOM_RETURN_IF_ERROR(ctx.status());
  if (!value.is_tensor() && !value.composite->is_sequence()) {
    return ctx.Refuse("an optional of an optional is not supported");
  }
  Composite optional{
      Composite::Kind::kOptional, /*present=*/true, !value.is_tensor(),
      value.is_tensor() ? std::vector<ValueId>{value.tensor} : value.composite->elements};
  ctx.BindComposite(0, std::move(optional));
  return ctx.status();
}

absl::Status ConvertOptionalHasElement(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  bool has_element = false;
  if (ctx.HasInput(0)) {
    const ScopeValue value = ctx.ValueIn(0);
    LOOM_RETURN_IF_ERROR(ctx.status());
    has_element = value.is_tensor() || value.composite->present;
  }
  Tensor result(DType::kBool, {});
  result.SetInt(0, has_element ? 1 : 0);
  ctx.ConstantOutput(0, std::move(result));
  return ctx.status();
}

absl::Status ConvertOptionalGetElement(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  const ScopeValue value = ctx.ValueIn(0);
  LOOM_RETURN_IF_ERROR(ctx.status());
  if (value.is_tensor() || value.composite->is_sequence()) {
    ctx.BindValue(0, value);
    return ctx.status();
  }
  const Composite& optional = *value.composite;
  if (!optional.present) return ctx.Refuse("the optional is empty (as known at import)");
  if (optional.holds_sequence) {
    ctx.BindComposite(0, Composite::Sequence(optional.elements));
  } else {
    ctx.Bind(0, optional.elements[0]);
  }
  return ctx.status();
}

}  // namespace

bool IsCompositeOp(absl::string_view op_type) {
  static const auto* const ops = new absl::flat_hash_set<std::string>{
      "SequenceConstruct", "SequenceEmpty",  "SequenceInsert",     "SequenceErase",
      "SequenceAt",        "SequenceLength", "SplitToSequence",    "ConcatFromSequence",
      "SequenceMap",       "Optional",       "OptionalHasElement", "OptionalGetElement",
  };
  return ops->contains(op_type);
}

void AddSequenceConverters(ConverterMap& map) {
  map["SequenceConstruct"] = ConvertSequenceConstruct;
  map["SequenceEmpty"] = ConvertSequenceEmpty;
  map["SequenceInsert"] = ConvertSequenceInsert;
  map["SequenceErase"] = ConvertSequenceErase;
  map["SequenceAt"] = ConvertSequenceAt;
  map["SequenceLength"] = ConvertSequenceLength;
  map["SplitToSequence"] = ConvertSplitToSequence;
  map["ConcatFromSequence"] = ConvertConcatFromSequence;
  map["SequenceMap"] = ConvertSequenceMap;
  map["Optional"] = ConvertOptional;
  map["OptionalHasElement"] = ConvertOptionalHasElement;
  map["OptionalGetElement"] = ConvertOptionalGetElement;
}

}  // namespace loom::onnx_import
