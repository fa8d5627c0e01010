// Control flow at import: If, Loop and Scan become straight-line loom
// nodes, their graphs imported into the enclosing graph through
// NodeContext::ImportSubgraph (outer-scope values visible). An If whose
// condition is known at import imports the branch it takes; with a
// condition known only at run time both branches are imported (loom's ops
// have no side effects) and each output is selected with `where`, which
// needs the two branches' outputs alike. Loop (a trip count known at
// import, a condition known at import in every iteration) and Scan (the
// scan axis' length is static) are unrolled, at most kMaxUnrolledIterations
// times a node.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_subgraph.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// Unrolling past this many iterations of one node is refused: the graph,
// and the compile time, grow with every iteration.
constexpr int64_t kMaxUnrolledIterations = 1024;

absl::StatusOr<const onnx::GraphProto*> RequiredGraph(const NodeContext& ctx,
                                                      absl::string_view name) {
  const onnx::GraphProto* graph = ctx.GraphAttr(name);
  if (graph == nullptr) return ctx.Refuse(absl::StrCat("attribute '", name, "' is required"));
  return graph;
}

// Which of `body`'s outputs loom wants known at import, from which of the
// node's outputs it wants (WantedBodyOutputs).
std::vector<bool> WantedOutputsOf(const NodeContext& ctx, const onnx::GraphProto& body) {
  std::vector<bool> node_outputs;
  for (int i = 0; i < ctx.num_outputs(); ++i) node_outputs.push_back(ctx.OutputWantedAtImport(i));
  return WantedBodyOutputs(ctx.proto(), body, node_outputs, /*if_conditions=*/true);
}

absl::Status CheckIterations(const NodeContext& ctx, int64_t iterations) {
  if (iterations <= kMaxUnrolledIterations) return absl::OkStatus();
  return ctx.Refuse(absl::StrCat("runs ", iterations, " iterations; loom unrolls loops at import, ",
                                 "at most ", kMaxUnrolledIterations, " iterations a node"));
}

// `values` (of one type) stacked along a new axis `axis`, in order.
ValueId Stack(NodeContext& ctx, const std::vector<ValueId>& values, int64_t axis) {
  std::vector<ValueId> parts;
  for (ValueId value : values) {
    parts.push_back(
        ctx.Emit("unsqueeze", {value}, MakeAttrs({{"axes", std::vector<int64_t>{axis}}})));
  }
  return ctx.Emit("concat", std::move(parts), MakeAttrs({{"axis", axis}}));
}

// Element `index` of `x` along `axis`, that axis removed.
ValueId Take(NodeContext& ctx, ValueId x, int64_t axis, int64_t index) {
  const ValueId slice = ctx.Emit("slice", {x},
                                 MakeAttrs({{"starts", std::vector<int64_t>{index}},
                                            {"ends", std::vector<int64_t>{index + 1}},
                                            {"axes", std::vector<int64_t>{axis}}}));
  return ctx.Emit("squeeze", {slice}, MakeAttrs({{"axes", std::vector<int64_t>{axis}}}));
}

// `values`, which must be tensors (Scan's, and what Loop scans).
absl::StatusOr<std::vector<ValueId>> Tensors(const NodeContext& ctx,
                                             const std::vector<ScopeValue>& values,
                                             absl::string_view what) {
  std::vector<ValueId> tensors;
  for (const ScopeValue& value : values) {
    if (!value.is_tensor()) {
      return ctx.Refuse(absl::StrCat(what, " must be tensors; one is a sequence or an optional"));
    }
    tensors.push_back(value.tensor);
  }
  return tensors;
}

ScopeValue TensorValue(ValueId id) { return {id, std::nullopt}; }

// Refuses values of `what` that differ in type (scan outputs of Loop and
// Scan, If's branches under a run-time condition).
absl::Status CheckSameType(const NodeContext& ctx, ValueId a, ValueId b, absl::string_view what) {
  if (ctx.TypeOf(a) == ctx.TypeOf(b)) return absl::OkStatus();
  return ctx.Refuse(absl::StrCat(what, " are ", TypeToString(ctx.TypeOf(a)), " and ",
                                 TypeToString(ctx.TypeOf(b))));
}

// --- If ---------------------------------------------------------------------

// Output `i` of an If whose condition is known only at run time: each
// tensor of the two branches' values selected with `where`, which needs
// them alike (sequences and optionals of the same structure).
absl::StatusOr<ScopeValue> Select(NodeContext& ctx, int i, ValueId cond,
                                  const ScopeValue& then_value, const ScopeValue& else_value) {
  const std::string what = absl::StrCat(
      "with a condition known only at run time, loom selects between the two branches' outputs, "
      "which must be alike; output ",
      i, "'s");
  if (then_value.is_tensor() && else_value.is_tensor()) {
    LOOM_RETURN_IF_ERROR(CheckSameType(ctx, then_value.tensor, else_value.tensor, what));
    return TensorValue(ctx.Emit("where", {cond, then_value.tensor, else_value.tensor}));
  }
  if (then_value.is_tensor() || else_value.is_tensor()) {
    return ctx.Refuse(absl::StrCat(what, " are a tensor and a sequence or optional"));
  }
  const Composite& a = *then_value.composite;
  const Composite& b = *else_value.composite;
  if (a.kind != b.kind || a.present != b.present || a.has_sequence() != b.has_sequence() ||
      a.elements.size() != b.elements.size()) {
    return ctx.Refuse(absl::StrCat(what, " are sequences or optionals of different structure"));
  }
  Composite selected = a;
  for (size_t k = 0; k < a.elements.size(); ++k) {
    LOOM_RETURN_IF_ERROR(
        CheckSameType(ctx, a.elements[k], b.elements[k], absl::StrCat(what, " elements ", k)));
    selected.elements[k] = ctx.Emit("where", {cond, a.elements[k], b.elements[k]});
  }
  return ScopeValue{NodeContext::kNoValue, std::move(selected)};
}

absl::Status ConvertIf(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"then_branch", kGraph}, {"else_branch", kGraph}}));
  LOOM_ASSIGN_OR_RETURN(const onnx::GraphProto* then_branch, RequiredGraph(ctx, "then_branch"));
  LOOM_ASSIGN_OR_RETURN(const onnx::GraphProto* else_branch, RequiredGraph(ctx, "else_branch"));
  for (const onnx::GraphProto* branch : {then_branch, else_branch}) {
    if (branch->output_size() != ctx.num_outputs()) {
      return ctx.Refuse(absl::StrCat("a branch has ", branch->output_size(), " outputs, the node ",
                                     ctx.num_outputs()));
    }
  }
  const ValueId cond = ctx.In(0);
  LOOM_RETURN_IF_ERROR(ctx.status());
  const TensorType cond_type = ctx.TypeOf(cond);
  if (cond_type.dtype != DType::kBool || NumElements(cond_type.shape) != 1) {
    return ctx.Refuse(
        absl::StrCat("the condition must be one bool, not ", TypeToString(cond_type)));
  }
  if (const Tensor* known = ctx.KnownData(cond)) {
    const onnx::GraphProto& taken = known->GetInt(0) != 0 ? *then_branch : *else_branch;
    LOOM_ASSIGN_OR_RETURN(std::vector<ScopeValue> outputs,
                          ctx.ImportSubgraph(taken, {}, WantedOutputsOf(ctx, taken)));
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.BindValue(i, outputs[i]);
    return ctx.status();
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<ScopeValue> then_outputs,
                        ctx.ImportSubgraph(*then_branch, {}, WantedOutputsOf(ctx, *then_branch)));
  LOOM_ASSIGN_OR_RETURN(std::vector<ScopeValue> else_outputs,
                        ctx.ImportSubgraph(*else_branch, {}, WantedOutputsOf(ctx, *else_branch)));
  const ValueId scalar_cond =
      ctx.Emit("reshape", {cond}, MakeAttrs({{"shape", std::vector<int64_t>{}}}));
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    LOOM_ASSIGN_OR_RETURN(ScopeValue selected,
                          Select(ctx, i, scalar_cond, then_outputs[i], else_outputs[i]));
    ctx.BindValue(i, selected);
  }
  return ctx.status();
}

// --- Loop -------------------------------------------------------------------

// Loop's condition, as it stands before the first iteration or after one:
// it must be known at import.
absl::StatusOr<bool> KnownCondition(const NodeContext& ctx, ValueId cond, absl::string_view what) {
  const Tensor* known = ctx.KnownData(cond);
  if (known == nullptr || known->num_elements() != 1) {
    return ctx.Refuse(absl::StrCat(what,
                                   " must be one value known at import: loom unrolls loops at "
                                   "import"));
  }
  return known->GetInt(0) != 0;
}

absl::Status ConvertLoop(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"body", kGraph}}));
  LOOM_ASSIGN_OR_RETURN(const onnx::GraphProto* body, RequiredGraph(ctx, "body"));
  const int carried = ctx.num_inputs() - 2;
  const int scanned = body->output_size() - 1 - carried;
  if (carried < 0 || body->input_size() != carried + 2 || scanned < 0 ||
      ctx.num_outputs() != carried + scanned) {
    return ctx.Refuse(absl::StrCat("its body has ", body->input_size(), " inputs and ",
                                   body->output_size(), " outputs for ", ctx.num_inputs(),
                                   " node inputs and ", ctx.num_outputs(),
                                   " outputs (body: iteration, condition, the carried values; "
                                   "condition, the carried values, the scanned values)"));
  }
  if (!ctx.HasInput(0) && !ctx.HasInput(1)) {
    return ctx.Refuse("has neither a trip count nor a condition: it would never end");
  }
  // A loop with a condition may stop before M (exporters write while loops
  // with M = INT64_MAX): the unroll limit is checked as it runs.
  int64_t trip_count = std::numeric_limits<int64_t>::max();
  if (ctx.HasInput(0)) {
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> m, ctx.ConstInts(0, "the trip count M"));
    if (m.size() != 1) return ctx.Refuse("the trip count M must be one integer");
    trip_count = m[0];
    if (!ctx.HasInput(1)) LOOM_RETURN_IF_ERROR(CheckIterations(ctx, trip_count));
  }
  bool cond = true;
  if (ctx.HasInput(1)) {
    LOOM_ASSIGN_OR_RETURN(cond, KnownCondition(ctx, ctx.In(1), "the condition"));
  }
  std::vector<ScopeValue> state;
  for (int k = 0; k < carried; ++k) state.push_back(ctx.ValueIn(2 + k));
  LOOM_RETURN_IF_ERROR(ctx.status());
  std::vector<std::vector<ValueId>> scans(scanned);
  const std::vector<bool> wanted = WantedOutputsOf(ctx, *body);
  int64_t iteration = 0;
  for (; iteration < trip_count && cond; ++iteration) {
    if (iteration == kMaxUnrolledIterations) {
      return ctx.Refuse(absl::StrCat("still runs after ", kMaxUnrolledIterations,
                                     " iterations, loom's limit for unrolling a loop at import"));
    }
    std::vector<ScopeValue> inputs = {
        TensorValue(ctx.Scalar(DType::kI64, static_cast<double>(iteration))),
        TensorValue(ctx.Scalar(DType::kBool, 1))};
    inputs.insert(inputs.end(), state.begin(), state.end());
    LOOM_RETURN_IF_ERROR(ctx.status());
    LOOM_ASSIGN_OR_RETURN(std::vector<ScopeValue> outputs,
                          ctx.ImportSubgraph(*body, inputs, wanted));
    LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> tensors,
                          Tensors(ctx, {outputs[0]}, "the body's condition"));
    // Without a condition input ONNX ignores the body's condition.
    if (ctx.HasInput(1)) {
      LOOM_ASSIGN_OR_RETURN(
          cond, KnownCondition(ctx, tensors[0],
                               absl::StrCat("the body's condition after iteration ", iteration)));
    }
    std::copy(outputs.begin() + 1, outputs.begin() + 1 + carried, state.begin());
    LOOM_ASSIGN_OR_RETURN(
        tensors, Tensors(ctx, std::vector<ScopeValue>(outputs.begin() + 1 + carried, outputs.end()),
                         "the body's scanned outputs"));
    for (int j = 0; j < scanned; ++j) scans[j].push_back(tensors[j]);
  }
  for (int k = 0; k < carried; ++k) ctx.BindValue(k, state[k]);
  for (int j = 0; j < scanned; ++j) {
    if (iteration == 0) {
      return ctx.Refuse(
          absl::StrCat("scan output ", j, " of a loop that runs no iteration has no known shape"));
    }
    for (ValueId value : scans[j]) {
      LOOM_RETURN_IF_ERROR(
          CheckSameType(ctx, scans[j][0], value, absl::StrCat("scan output ", j, "'s iterations")));
    }
    ctx.Bind(carried + j, Stack(ctx, scans[j], 0));
  }
  return ctx.status();
}

// --- Scan -------------------------------------------------------------------

// One attribute list of Scan (axes or directions), one entry per scan input
// or output, defaulting to zeros.
absl::StatusOr<std::vector<int64_t>> PerScanValue(const NodeContext& ctx, absl::string_view name,
                                                  int count) {
  if (!ctx.HasAttr(name)) return std::vector<int64_t>(count, 0);
  std::vector<int64_t> values = ctx.Ints(name);
  if (static_cast<int>(values.size()) != count) {
    return ctx.Refuse(
        absl::StrCat("attribute '", name, "' has ", values.size(), " entries for ", count));
  }
  return values;
}

absl::Status CheckDirections(const NodeContext& ctx, absl::string_view name,
                             const std::vector<int64_t>& directions) {
  for (int64_t direction : directions) {
    if (direction != 0 && direction != 1) {
      return ctx.Refuse(absl::StrCat("attribute '", name, "' holds ", direction,
                                     "; a direction is 0 (forward) or 1 (reverse)"));
    }
  }
  return absl::OkStatus();
}

// How a Scan walks its scan inputs and stacks its scan outputs.
struct ScanPlan {
  const onnx::GraphProto* body = nullptr;
  std::vector<int64_t> input_axes, input_reverse;    // per scan input
  std::vector<int64_t> output_axes, output_reverse;  // per scan output
  std::vector<bool> wanted;                          // body outputs
};

// Runs the scan on `state` (the initial values) and `inputs` (the scan
// inputs): returns the final states, then the scan outputs.
absl::StatusOr<std::vector<ValueId>> UnrollScan(NodeContext& ctx, const ScanPlan& plan,
                                                std::vector<ValueId> state,
                                                const std::vector<ValueId>& inputs) {
  int64_t length = -1;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Shape& shape = ctx.TypeOf(inputs[j]).shape;
    LOOM_ASSIGN_OR_RETURN(int64_t axis,
                          NormalizedAxis(ctx, plan.input_axes[j], shape.size(), "scan input axis"));
    if (length >= 0 && shape[axis] != length) {
      return ctx.Refuse(absl::StrCat("scan input ", j, " has ", shape[axis],
                                     " elements along its scan axis, scan input 0 has ", length));
    }
    length = shape[axis];
  }
  if (length == 0) return ctx.Refuse("its scan inputs are empty along the scan axis");
  LOOM_RETURN_IF_ERROR(CheckIterations(ctx, length));
  const int outputs_scanned = plan.body->output_size() - static_cast<int>(state.size());
  std::vector<std::vector<ValueId>> scans(outputs_scanned);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<ScopeValue> body_inputs;
    for (ValueId value : state) body_inputs.push_back(TensorValue(value));
    for (size_t j = 0; j < inputs.size(); ++j) {
      const int64_t rank = ctx.RankOf(inputs[j]);
      const int64_t axis = plan.input_axes[j] < 0 ? plan.input_axes[j] + rank : plan.input_axes[j];
      body_inputs.push_back(
          TensorValue(Take(ctx, inputs[j], axis, plan.input_reverse[j] ? length - 1 - t : t)));
    }
    LOOM_RETURN_IF_ERROR(ctx.status());
    LOOM_ASSIGN_OR_RETURN(std::vector<ScopeValue> body_outputs,
                          ctx.ImportSubgraph(*plan.body, body_inputs, plan.wanted));
    LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> outputs,
                          Tensors(ctx, body_outputs, "Scan's states and scanned outputs"));
    std::copy(outputs.begin(), outputs.begin() + state.size(), state.begin());
    for (int k = 0; k < outputs_scanned; ++k) scans[k].push_back(outputs[state.size() + k]);
  }
  std::vector<ValueId> results = state;
  for (int k = 0; k < outputs_scanned; ++k) {
    for (ValueId value : scans[k]) {
      LOOM_RETURN_IF_ERROR(
          CheckSameType(ctx, scans[k][0], value, absl::StrCat("scan output ", k, "'s iterations")));
    }
    if (plan.output_reverse[k]) std::reverse(scans[k].begin(), scans[k].end());
    const int64_t rank = ctx.RankOf(scans[k][0]) + 1;
    LOOM_ASSIGN_OR_RETURN(int64_t axis,
                          NormalizedAxis(ctx, plan.output_axes[k], rank, "scan output axis"));
    results.push_back(Stack(ctx, scans[k], axis));
  }
  LOOM_RETURN_IF_ERROR(ctx.status());
  return results;
}

// Opset 8's Scan: every input has a batch axis first (the scan axis of a
// scan input is its second), and each batch entry is scanned on its own.
absl::StatusOr<std::vector<ValueId>> UnrollBatchedScan(NodeContext& ctx, const ScanPlan& plan,
                                                       const std::vector<ValueId>& state,
                                                       const std::vector<ValueId>& inputs) {
  int64_t batch = -1;
  for (const std::vector<ValueId>* values : {&state, &inputs}) {
    for (ValueId value : *values) {
      const Shape& shape = ctx.TypeOf(value).shape;
      if (shape.empty() || shape[0] < 1 || (batch >= 0 && shape[0] != batch)) {
        return ctx.Refuse(
            absl::StrCat("its inputs need one batch axis first (Scan 8), of at least ",
                         "1; one is ", TypeToString(ctx.TypeOf(value))));
      }
      batch = shape[0];
    }
  }
  LOOM_RETURN_IF_ERROR(CheckIterations(ctx, batch));
  std::vector<std::vector<ValueId>> per_output;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<ValueId> entry_state, entry_inputs;
    for (ValueId value : state) entry_state.push_back(Take(ctx, value, 0, b));
    for (ValueId value : inputs) entry_inputs.push_back(Take(ctx, value, 0, b));
    LOOM_RETURN_IF_ERROR(ctx.status());
    LOOM_ASSIGN_OR_RETURN(std::vector<ValueId> results,
                          UnrollScan(ctx, plan, entry_state, entry_inputs));
    per_output.resize(results.size());
    for (size_t k = 0; k < results.size(); ++k) per_output[k].push_back(results[k]);
  }
  std::vector<ValueId> stacked;
  for (const std::vector<ValueId>& entries : per_output) stacked.push_back(Stack(ctx, entries, 0));
  LOOM_RETURN_IF_ERROR(ctx.status());
  return stacked;
}

absl::Status ConvertScan(NodeContext& ctx) {
  const bool batched = ctx.opset() < 9;
  if (batched) {
    LOOM_RETURN_IF_ERROR(
        ctx.CheckAttrs({{"body", kGraph}, {"num_scan_inputs", kInt}, {"directions", kInts}}));
    if (ctx.HasInput(0)) return ctx.Refuse("input 'sequence_lens' is not supported");
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"body", kGraph},
                                         {"num_scan_inputs", kInt},
                                         {"scan_input_axes", kInts},
                                         {"scan_input_directions", kInts},
                                         {"scan_output_axes", kInts},
                                         {"scan_output_directions", kInts}}));
  }
  ScanPlan plan;
  LOOM_ASSIGN_OR_RETURN(plan.body, RequiredGraph(ctx, "body"));
  const int first = batched ? 1 : 0;
  const int num_scanned = static_cast<int>(ctx.Int("num_scan_inputs", 0));
  const int num_states = ctx.num_inputs() - first - num_scanned;
  const int outputs_scanned = plan.body->output_size() - num_states;
  if (num_scanned < 1 || num_states < 0 || plan.body->input_size() != num_states + num_scanned ||
      outputs_scanned < 0 || ctx.num_outputs() != plan.body->output_size()) {
    return ctx.Refuse(absl::StrCat(
        "attribute 'num_scan_inputs' is ", num_scanned, " and its body has ",
        plan.body->input_size(), " inputs and ", plan.body->output_size(), " outputs for ",
        ctx.num_inputs() - first, " node inputs and ", ctx.num_outputs(), " outputs"));
  }
  if (batched) {
    LOOM_ASSIGN_OR_RETURN(plan.input_reverse, PerScanValue(ctx, "directions", num_scanned));
    LOOM_RETURN_IF_ERROR(CheckDirections(ctx, "directions", plan.input_reverse));
    plan.input_axes.assign(num_scanned, 0);
    plan.output_axes.assign(outputs_scanned, 0);
    plan.output_reverse.assign(outputs_scanned, 0);
  } else {
    LOOM_ASSIGN_OR_RETURN(plan.input_axes, PerScanValue(ctx, "scan_input_axes", num_scanned));
    LOOM_ASSIGN_OR_RETURN(plan.input_reverse,
                          PerScanValue(ctx, "scan_input_directions", num_scanned));
    LOOM_ASSIGN_OR_RETURN(plan.output_axes, PerScanValue(ctx, "scan_output_axes", outputs_scanned));
    LOOM_ASSIGN_OR_RETURN(plan.output_reverse,
                          PerScanValue(ctx, "scan_output_directions", outputs_scanned));
    LOOM_RETURN_IF_ERROR(CheckDirections(ctx, "scan_input_directions", plan.input_reverse));
    LOOM_RETURN_IF_ERROR(CheckDirections(ctx, "scan_output_directions", plan.output_reverse));
  }
  plan.wanted = WantedOutputsOf(ctx, *plan.body);
  std::vector<ValueId> state, inputs;
  for (int k = 0; k < num_states; ++k) state.push_back(ctx.In(first + k));
  for (int j = 0; j < num_scanned; ++j) inputs.push_back(ctx.In(first + num_states + j));
  LOOM_RETURN_IF_ERROR(ctx.status());
  absl::StatusOr<std::vector<ValueId>> results =
      batched ? UnrollBatchedScan(ctx, plan, state, inputs) : UnrollScan(ctx, plan, state, inputs);
  if (!results.ok()) return results.status();
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.Bind(i, (*results)[i]);
  return ctx.status();
}

}  // namespace

void AddControlFlowConverters(ConverterMap& map) {
  map["If"] = ConvertIf;
  map["Loop"] = ConvertLoop;
  map["Scan"] = ConvertScan;
}

}  // namespace loom::onnx_import
