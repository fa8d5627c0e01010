// Activation functions, computed per element in double straight from their
// definitions (the compiler decomposes them into primitives; these loops are
// the oracle for that decomposition). All take f32 or f64, except clip, which
// takes any numeric dtype.
//
// Semantics worth stating:
// - gelu: `approximate` "none" (default) is 0.5 x (1 + erf(x / sqrt(2)));
//   "tanh" is 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
// - clip: `min` and `max` are each optional (unbounded); the result is
//   min(max(x, min), max), so min > max gives max everywhere (ONNX). NaN
//   stays NaN. On integers the bounds become the integers inside them
//   (ceil(min), floor(max)), saturated to the dtype's range.
// - softplus is max(x, 0) + log1p(exp(-|x|)), which equals log(1 + exp(x))
//   without overflow.
// - prelu broadcasts x and slope both ways (numpy).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

constexpr double kPi = 3.14159265358979323846;

using ScalarFn = std::function<double(double)>;
// Reads a node's attributes into the function it applies per element, or
// says which attribute is wrong.
using ScalarFnMaker = std::function<absl::StatusOr<ScalarFn>(const Node&)>;

// 0 below 0, 1 above 1; keeps NaN.
double ClampToUnit(double v) { return v < 0 ? 0.0 : (v > 1 ? 1.0 : v); }

absl::StatusOr<ScalarFn> MakeGelu(const Node& node) {
  const std::string approximate = node.attrs.GetString("approximate", "none");
  if (approximate == "none") {
    return ScalarFn([](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); });
  }
  if (approximate == "tanh") {
    return ScalarFn([](double x) {
      const double k = std::sqrt(2.0 / kPi);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    });
  }
  return absl::InvalidArgumentError(
      absl::StrCat("attribute 'approximate' must be \"none\" or \"tanh\", "
                   "got \"",
                   approximate, "\""));
}

absl::StatusOr<ScalarFn> MakeSilu(const Node&) {
  return ScalarFn([](double x) { return x / (1.0 + std::exp(-x)); });
}

absl::StatusOr<ScalarFn> MakeLeakyRelu(const Node& node) {
  const double alpha = node.attrs.GetFloat("alpha", 0.01);
  return ScalarFn([alpha](double x) { return x < 0 ? alpha * x : x; });
}

absl::StatusOr<ScalarFn> MakeElu(const Node& node) {
  const double alpha = node.attrs.GetFloat("alpha", 1.0);
  return ScalarFn([alpha](double x) { return x < 0 ? alpha * std::expm1(x) : x; });
}

absl::StatusOr<ScalarFn> MakeSelu(const Node& node) {
  const double alpha = node.attrs.GetFloat("alpha", 1.67326319217681884765625);
  const double gamma = node.attrs.GetFloat("gamma", 1.05070102214813232421875);
  return ScalarFn(
      [alpha, gamma](double x) { return x > 0 ? gamma * x : gamma * alpha * std::expm1(x); });
}

absl::StatusOr<ScalarFn> MakeSoftplus(const Node&) {
  return ScalarFn([](double x) { return std::fmax(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); });
}

absl::StatusOr<ScalarFn> MakeHardSigmoid(const Node& node) {
  const double alpha = node.attrs.GetFloat("alpha", 0.2);
  const double beta = node.attrs.GetFloat("beta", 0.5);
  return ScalarFn([alpha, beta](double x) { return ClampToUnit(alpha * x + beta); });
}

absl::StatusOr<ScalarFn> MakeHardSwish(const Node&) {
  return ScalarFn([](double x) { return x * ClampToUnit(x / 6.0 + 0.5); });
}

// An op y = f(x) on floats whose f depends only on attributes.
OpDef FloatActivationOp(std::string name, std::vector<AttrSpec> attrs, ScalarFnMaker make) {
  ShapeFn infer = [make](const Node& node,
                         absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kFloat, 0));
    LOOM_RETURN_IF_ERROR(make(node).status());
    return OneOutput(in[0]);
  };
  EvalFn eval = [make](const Node& node, absl::Span<const Tensor* const> in,
                       absl::Span<Tensor> out) -> absl::Status {
    LOOM_ASSIGN_OR_RETURN(ScalarFn fn, make(node));
    for (int64_t i = 0; i < out[0].num_elements(); ++i) {
      out[0].SetDouble(i, fn(in[0]->GetDouble(i)));
    }
    return absl::OkStatus();
  };
  return WithPattern(
      FixedArityOp(std::move(name), 1, std::move(attrs), std::move(infer), std::move(eval)),
      OpPattern::kElementwise);
}

// --- clip --------------------------------------------------------------------

absl::StatusOr<OutputTypes> ClipShape(const Node&, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kNumeric, 0));
  return OneOutput(in[0]);
}

absl::Status ClipEval(const Node& node, absl::Span<const Tensor* const> in,
                      absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  Tensor& result = out[0];
  const double inf = std::numeric_limits<double>::infinity();
  const double min = node.attrs.GetFloat("min", -inf);
  const double max = node.attrs.GetFloat("max", inf);
  if (IsFloat(x.dtype())) {
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      double v = x.GetDouble(i);
      if (v < min) v = min;
      if (v > max) v = max;
      result.SetDouble(i, v);
    }
    return absl::OkStatus();
  }
  const DType dtype = x.dtype();
  const int64_t int_min = IntegerClipBoundBits(min, /*is_lower=*/true, dtype);
  const int64_t int_max = IntegerClipBoundBits(max, /*is_lower=*/false, dtype);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int64_t v = x.GetInt(i);
    if (IntegerLess(v, int_min, dtype)) v = int_min;
    if (IntegerLess(int_max, v, dtype)) v = int_max;
    result.SetInt(i, v);
  }
  return absl::OkStatus();
}

// --- prelu -------------------------------------------------------------------

absl::StatusOr<OutputTypes> PreluShape(const Node&, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kFloat, 0));
  LOOM_RETURN_IF_ERROR(CheckSameDType(in, 0, 1));
  LOOM_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(in[0].shape, in[1].shape));
  return OneOutput(in[0].dtype, std::move(shape));
}

absl::Status PreluEval(const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  ForEachBroadcast(in, out[0], [&](int64_t i, const StridedWalk& w) {
    const double x = in[0]->GetDouble(w.offset(0));
    out[0].SetDouble(i, x < 0 ? in[1]->GetDouble(w.offset(1)) * x : x);
  });
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterActivationOps(OpRegistry& registry) {
  const AttrSpec alpha{"alpha", AttrType::kFloat, false};
  std::vector<OpDef> defs = {
      Composite(FloatActivationOp("gelu", {{"approximate", AttrType::kString, false}}, MakeGelu)),
      Composite(FloatActivationOp("silu", {}, MakeSilu)),
      WithPattern(
          Exact(FixedArityOp("clip", 1,
                             {{"min", AttrType::kFloat, false}, {"max", AttrType::kFloat, false}},
                             ClipShape, ClipEval)),
          OpPattern::kElementwise),
      Composite(FloatActivationOp("leaky_relu", {alpha}, MakeLeakyRelu)),
      Composite(FloatActivationOp("elu", {alpha}, MakeElu)),
      Composite(FloatActivationOp("selu", {alpha, {"gamma", AttrType::kFloat, false}}, MakeSelu)),
      Composite(FloatActivationOp("softplus", {}, MakeSoftplus)),
      Composite(FloatActivationOp("hard_sigmoid", {alpha, {"beta", AttrType::kFloat, false}},
                                  MakeHardSigmoid)),
      Composite(FloatActivationOp("hard_swish", {}, MakeHardSwish)),
      WithPattern(Composite(FixedArityOp("prelu", 2, {}, PreluShape, PreluEval)),
                  OpPattern::kBroadcast),
  };
  return RegisterAll(registry, std::move(defs));
}

}  // namespace loom
