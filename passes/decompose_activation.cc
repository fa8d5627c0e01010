// Activations as pointwise primitives. Each writes the composite's output
// with its last node; constants take the input's dtype.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

// The scalar `value` in the dtype of `like`, an input of the composite
// (values the builder makes have no type yet).
ValueId ScalarLike(DecompositionBuilder& b, absl::string_view suffix, double value, ValueId like) {
  return b.Scalar(suffix, value, b.type(like).dtype);
}

// gelu(x) = x/2 * (1 + erf(x / sqrt(2))); with approximate = "tanh":
// x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
absl::Status DecomposeGelu(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const std::string approximate = node.attrs.GetString("approximate", "none");
  ValueId inner;
  if (approximate == "none") {
    const ValueId scaled = b.Add("scale", "mul", {x, ScalarLike(b, "rsqrt2", M_SQRT1_2, x)});
    inner = b.Add("erf", "erf", {scaled});
  } else if (approximate == "tanh") {
    const ValueId cube = b.Add("cube", "mul", {b.Add("square", "mul", {x, x}), x});
    const ValueId cubic = b.Add("cubic", "mul", {cube, ScalarLike(b, "coefficient", 0.044715, x)});
    const ValueId sum = b.Add("sum", "add", {x, cubic});
    const ValueId scaled =
        b.Add("scale", "mul", {sum, ScalarLike(b, "sqrt2_pi", M_2_SQRTPI * M_SQRT1_2, x)});
    inner = b.Add("tanh", "tanh", {scaled});
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'approximate' must be \"none\" or \"tanh\", got \"", approximate, "\""));
  }
  const ValueId one_plus = b.Add("one_plus", "add", {inner, ScalarLike(b, "one", 1, x)});
  const ValueId half_x = b.Add("half", "mul", {x, ScalarLike(b, "half_c", 0.5, x)});
  b.AddWriting("mul", "mul", {half_x, one_plus}, node.outputs[0]);
  return absl::OkStatus();
}

// silu(x) = x * sigmoid(x).
absl::Status DecomposeSilu(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  b.AddWriting("mul", "mul", {x, b.Add("sigmoid", "sigmoid", {x})}, node.outputs[0]);
  return absl::OkStatus();
}

// A clip bound in x's dtype. On integers it becomes the integers inside the
// bounds (ceil(min), floor(max)), saturated to the dtype's range, as the
// interpreter does (a NaN bound saturates to the minimum).
ValueId ClipBound(DecompositionBuilder& b, absl::string_view suffix, double bound, bool is_min,
                  ValueId x) {
  const DType dtype = b.type(x).dtype;
  if (IsFloat(dtype)) return b.Scalar(suffix, bound, dtype);
  const int64_t value = IntegerClipBoundBits(bound, is_min, dtype);
  Tensor data(dtype, {});
  data.SetInt(0, value);
  return b.Constant(suffix, std::move(data));
}

// clip(x) = minimum(maximum(x, min), max), each bound optional; NaN stays
// NaN, and min > max gives max. With no bound it is the identity: a
// same-shape reshape (a view).
absl::Status DecomposeClip(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  // A float NaN bound never clamps (every comparison with it fails).
  auto has = [&](const char* name) {
    return node.attrs.Has(name) &&
           !(IsFloat(b.type(x).dtype) && std::isnan(node.attrs.GetFloat(name, 0)));
  };
  const bool has_min = has("min"), has_max = has("max");
  if (!has_min && !has_max) {
    Attrs shape;
    shape.Set("shape", b.type(x).shape);
    b.AddWriting("identity", "reshape", {x}, node.outputs[0], shape);
    return absl::OkStatus();
  }
  ValueId y = x;
  if (has_min) {
    const ValueId lo = ClipBound(b, "min_c", node.attrs.GetFloat("min", 0), true, x);
    if (!has_max) {
      b.AddWriting("min", "maximum", {y, lo}, node.outputs[0]);
      return absl::OkStatus();
    }
    y = b.Add("min", "maximum", {y, lo});
  }
  const ValueId hi = ClipBound(b, "max_c", node.attrs.GetFloat("max", 0), false, x);
  b.AddWriting("max", "minimum", {y, hi}, node.outputs[0]);
  return absl::OkStatus();
}

// leaky_relu(x) = x < 0 ? alpha * x : x.
absl::Status DecomposeLeakyRelu(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const ValueId negative = b.Add("negative", "less", {x, ScalarLike(b, "zero", 0, x)});
  const ValueId scaled =
      b.Add("scale", "mul", {x, ScalarLike(b, "alpha", node.attrs.GetFloat("alpha", 0.01), x)});
  b.AddWriting("where", "where", {negative, scaled, x}, node.outputs[0]);
  return absl::OkStatus();
}

// x > 0 ? x : alpha * (exp(x) - 1), then times `gamma` if it has a value:
// elu, and selu's inner part.
absl::Status ExponentialLinear(const Node& node, DecompositionBuilder& b, double alpha,
                               std::optional<double> gamma) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const ValueId positive = b.Add("positive", "greater", {x, ScalarLike(b, "zero", 0, x)});
  const ValueId expm1 =
      b.Add("expm1", "sub", {b.Add("exp", "exp", {x}), ScalarLike(b, "one", 1, x)});
  const ValueId negative_part = b.Add("scale", "mul", {expm1, ScalarLike(b, "alpha", alpha, x)});
  if (!gamma.has_value()) {
    b.AddWriting("where", "where", {positive, x, negative_part}, node.outputs[0]);
    return absl::OkStatus();
  }
  const ValueId elu = b.Add("where", "where", {positive, x, negative_part});
  b.AddWriting("gamma", "mul", {elu, ScalarLike(b, "gamma_c", *gamma, x)}, node.outputs[0]);
  return absl::OkStatus();
}

absl::Status DecomposeElu(const Node& node, DecompositionBuilder& b) {
  return ExponentialLinear(node, b, node.attrs.GetFloat("alpha", 1.0), std::nullopt);
}

absl::Status DecomposeSelu(const Node& node, DecompositionBuilder& b) {
  return ExponentialLinear(node, b, node.attrs.GetFloat("alpha", 1.67326319217681884765625),
                           node.attrs.GetFloat("gamma", 1.05070102214813232421875));
}

// softplus(x) = log(1 + exp(x)) = relu(x) + log(1 + exp(-|x|)): exp never
// overflows.
absl::Status DecomposeSoftplus(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const ValueId minus_abs = b.Add("neg", "neg", {b.Add("abs", "abs", {x})});
  const ValueId one_plus =
      b.Add("one_plus", "add", {b.Add("exp", "exp", {minus_abs}), ScalarLike(b, "one", 1, x)});
  b.AddWriting("add", "add", {b.Add("relu", "relu", {x}), b.Add("log", "log", {one_plus})},
               node.outputs[0]);
  return absl::OkStatus();
}

// max(0, min(1, y)) for y computed from the composite's input x, writing
// `output` when it is set.
ValueId ClampToUnit(DecompositionBuilder& b, ValueId y, ValueId x,
                    std::optional<ValueId> output = std::nullopt) {
  const ValueId upper = b.Add("min", "minimum", {y, ScalarLike(b, "one", 1, x)});
  const ValueId zero = ScalarLike(b, "zero", 0, x);
  if (output.has_value()) {
    b.AddWriting("max", "maximum", {upper, zero}, *output);
    return *output;
  }
  return b.Add("max", "maximum", {upper, zero});
}

// hard_sigmoid(x) = max(0, min(1, alpha * x + beta)).
absl::Status DecomposeHardSigmoid(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const ValueId scaled =
      b.Add("scale", "mul", {x, ScalarLike(b, "alpha", node.attrs.GetFloat("alpha", 0.2), x)});
  const ValueId shifted =
      b.Add("shift", "add", {scaled, ScalarLike(b, "beta", node.attrs.GetFloat("beta", 0.5), x)});
  ClampToUnit(b, shifted, x, node.outputs[0]);
  return absl::OkStatus();
}

// hard_swish(x) = x * max(0, min(1, x / 6 + 0.5)).
absl::Status DecomposeHardSwish(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const ValueId sixth = b.Add("div", "div", {x, ScalarLike(b, "six", 6, x)});
  const ValueId shifted = b.Add("shift", "add", {sixth, ScalarLike(b, "half", 0.5, x)});
  b.AddWriting("mul", "mul", {x, ClampToUnit(b, shifted, x)}, node.outputs[0]);
  return absl::OkStatus();
}

// prelu(x, slope) = x < 0 ? slope * x : x, broadcasting.
absl::Status DecomposePrelu(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 2, 1));
  const ValueId x = node.inputs[0], slope = node.inputs[1];
  const ValueId negative = b.Add("negative", "less", {x, ScalarLike(b, "zero", 0, x)});
  const ValueId scaled = b.Add("scale", "mul", {slope, x});
  b.AddWriting("where", "where", {negative, scaled, x}, node.outputs[0]);
  return absl::OkStatus();
}

constexpr Decomposition kActivationDecompositions[] = {
    {"gelu", DecomposeGelu},
    {"silu", DecomposeSilu},
    {"clip", DecomposeClip},
    {"leaky_relu", DecomposeLeakyRelu},
    {"elu", DecomposeElu},
    {"selu", DecomposeSelu},
    {"softplus", DecomposeSoftplus},
    {"hard_sigmoid", DecomposeHardSigmoid},
    {"hard_swish", DecomposeHardSwish},
    {"prelu", DecomposePrelu},
};

}  // namespace

absl::Span<const Decomposition> ActivationDecompositions() { return kActivationDecompositions; }

}  // namespace loom
