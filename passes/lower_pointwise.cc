// Lowering rules of the pointwise ops: one scalar function applied elementwise
// (with numpy broadcasting), and cast.
#include <utility>

#include "passes/lower_internal.h"

namespace loom {
namespace lowering {

void Lowering::AddPointwiseRules(RuleTable& rules) {
  const std::pair<const char*, ScalarFn> calls[] = {
      {"add", ScalarFn::kAdd},
      {"sub", ScalarFn::kSub},
      {"mul", ScalarFn::kMul},
      {"div", ScalarFn::kDiv},
      {"pow", ScalarFn::kPow},
      {"maximum", ScalarFn::kMax},
      {"minimum", ScalarFn::kMin},
      {"neg", ScalarFn::kNeg},
      {"abs", ScalarFn::kAbs},
      {"exp", ScalarFn::kExp},
      {"log", ScalarFn::kLog},
      {"sqrt", ScalarFn::kSqrt},
      {"rsqrt", ScalarFn::kRsqrt},
      {"reciprocal", ScalarFn::kReciprocal},
      {"tanh", ScalarFn::kTanh},
      {"sigmoid", ScalarFn::kSigmoid},
      {"relu", ScalarFn::kRelu},
      {"erf", ScalarFn::kErf},
      {"sin", ScalarFn::kSin},
      {"cos", ScalarFn::kCos},
      {"floor", ScalarFn::kFloor},
      {"ceil", ScalarFn::kCeil},
      {"round", ScalarFn::kRound},
      {"sign", ScalarFn::kSign},
      {"where", ScalarFn::kSelect},
      {"equal", ScalarFn::kEq},
      {"not_equal", ScalarFn::kNe},
      {"less", ScalarFn::kLt},
      {"less_equal", ScalarFn::kLe},
      {"greater", ScalarFn::kGt},
      {"greater_equal", ScalarFn::kGe},
      {"logical_not", ScalarFn::kNot},
      {"logical_and", ScalarFn::kAnd},
      {"logical_or", ScalarFn::kOr},
      {"logical_xor", ScalarFn::kXor},
      {"bitwise_not", ScalarFn::kBitNot},
      {"bitwise_and", ScalarFn::kBitAnd},
      {"bitwise_or", ScalarFn::kBitOr},
      {"bitwise_xor", ScalarFn::kBitXor},
      {"bit_cast", ScalarFn::kBitCast},
  };
  for (const auto& [op, fn] : calls) {
    rules[op] = {&Lowering::LowerElementwise};
    rules[op].fn = fn;
  }
  // mod and bit_shift are one function too, chosen by an attribute.
  rules["mod"] = {&Lowering::LowerMod};
  rules["bit_shift"] = {&Lowering::LowerBitShift};
  rules["cast"] = {&Lowering::LowerCast};
}

absl::Status Lowering::LowerElementwise(const Node& node, const LoweringRule& rule) {
  return LowerCall(node, rule.fn);
}

absl::Status Lowering::LowerMod(const Node& node, const LoweringRule&) {
  // Its attribute picks the sign of the remainder.
  return LowerCall(node, node.attrs.GetInt("fmod", 0) != 0 ? ScalarFn::kFmod : ScalarFn::kMod);
}

absl::Status Lowering::LowerBitShift(const Node& node, const LoweringRule&) {
  const bool left = node.attrs.GetString("direction", "") == "left";
  return LowerCall(node, left ? ScalarFn::kShl : ScalarFn::kShr);
}

absl::Status Lowering::LowerCall(const Node& node, ScalarFn fn) {
  if (fn == ScalarFn::kPow && LiteralSquareOrCube(node) > 0) return LowerPowerAsProducts(node);
  const ValueId out = node.outputs[0];
  ComputeNode compute = PointwiseNode(node, out);
  const size_t rank = compute.ranges.size();
  absl::InlinedVector<int, 3> args;
  for (ValueId input : node.inputs) {
    args.push_back(Load(compute, input, BroadcastIndices(graph_.value(input).type.shape, rank)));
  }
  const int root = Call(compute, fn, graph_.value(out).type.dtype, args);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

// pow(x, 2) and pow(x, 3) of floats, the exponent a literal (a one-element
// constant): 2 or 3, else 0. As products they vectorise; glibc's vector
// powf calls its scalar powf for every lane of a negative base, which took
// 3% of GPT-2's time in the cube of its GELU. The products are as exact:
// an error of at most 2 roundings, as the op's error bound allows.
int Lowering::LiteralSquareOrCube(const Node& node) const {
  const LoweredValue& exponent = lowered_[node.inputs[1]];
  if (!IsFloat(graph_.value(node.outputs[0]).type.dtype) || !exponent.inline_constant) return 0;
  return exponent.constant == 2 || exponent.constant == 3 ? static_cast<int>(exponent.constant) : 0;
}

absl::Status Lowering::LowerPowerAsProducts(const Node& node) {
  const ValueId out = node.outputs[0];
  const DType dtype = graph_.value(out).type.dtype;
  ComputeNode compute = PointwiseNode(node, out);
  const ValueId base = node.inputs[0];
  const int x =
      Load(compute, base, BroadcastIndices(graph_.value(base).type.shape, compute.ranges.size()));
  int root = Call(compute, ScalarFn::kMul, dtype, {x, x});
  if (LiteralSquareOrCube(node) == 3) root = Call(compute, ScalarFn::kMul, dtype, {root, x});
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

absl::Status Lowering::LowerCast(const Node& node, const LoweringRule&) {
  const ValueId out = node.outputs[0];
  ComputeNode compute = PointwiseNode(node, out);
  const int arg = Load(compute, node.inputs[0], Vars(0, static_cast<int>(compute.ranges.size())));
  ScalarOp cast{ScalarOp::Kind::kCast, graph_.value(out).type.dtype};
  cast.args = {arg};
  const int root = Step(compute, std::move(cast));
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

}  // namespace lowering
}  // namespace loom
