// ONNX ops added for issue 19's math and selection work: the inverse
// trigonometric and hyperbolic functions, TopK, ReverseSequence, LRN and
// Einsum (onto loom composites) and the window functions (computed at import).
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// A float-only unary op with no attributes, onto loom `op` (which refuses
// other dtypes with a message naming the node).
Converter FloatUnary(std::string op) {
  return [op](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
    ctx.EmitOutput(0, op, {ctx.In(0)});
    return ctx.status();
  };
}

// HannWindow, HammingWindow, BlackmanWindow: the generalised cosine window
//   w[n] = a0 - a1 cos(2 pi n / N1) + a2 cos(4 pi n / N1),  n < size,
// with N1 = size when `periodic` (default 1), else size - 1 (as ONNX's
// reference computes it, a symmetric window of size 1 is 0/0: NaN). The
// size must be known at import; the window is computed then, in double, and
// stored as a constant of `output_datatype` (default FLOAT; integers
// truncate toward zero, as Cast does).
Converter Window(double a0, double a1, double a2) {
  return [a0, a1, a2](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"output_datatype", kInt}, {"periodic", kInt}}));
    const int64_t periodic = ctx.Int("periodic", 1);
    if (periodic != 0 && periodic != 1) {
      return ctx.Refuse(absl::StrCat("attribute 'periodic' must be 0 or 1, got ", periodic));
    }
    LOOM_ASSIGN_OR_RETURN(
        DType dtype,
        DTypeFromOnnx(static_cast<int32_t>(ctx.Int("output_datatype", onnx::TensorProto::FLOAT)),
                      absl::StrCat(ctx.label(), ": attribute 'output_datatype'")));
    if (dtype == DType::kBool) {
      return ctx.Refuse("attribute 'output_datatype' is BOOL; expected a numeric type");
    }
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> size, ctx.ConstInts(0, "the window size"));
    if (size.size() != 1) {
      return ctx.Refuse(
          absl::StrCat("the window size has ", size.size(), " elements; expected a scalar"));
    }
    const int64_t n = size[0];
    if (n < 0) return ctx.Refuse(absl::StrCat("the window size is negative: ", n));
    LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({n}));
    constexpr double kTwoPi = 6.28318530717958647692;
    const double period = static_cast<double>(periodic == 1 ? n : n - 1);
    Tensor window(dtype, {n});
    for (int64_t i = 0; i < n; ++i) {
      const double phase = kTwoPi * static_cast<double>(i) / period;
      const double w = a0 - a1 * std::cos(phase) + a2 * std::cos(2 * phase);
      if (IsFloat(dtype)) {
        window.SetDouble(i, w);
      } else {
        window.SetInt(i, static_cast<int64_t>(std::trunc(w)));
      }
    }
    ctx.ConstantOutput(0, std::move(window));
    return ctx.status();
  };
}

// TopK: k from the attribute (opset 1) or the input K, which must be known at
// import (opset 10 on); `largest` and `sorted` from opset 11.
absl::Status ConvertTopK(NodeContext& ctx) {
  std::vector<AttrRule> accepted = {{"axis", kInt}};
  if (ctx.opset() < 10) accepted.push_back({"k", kInt});
  if (ctx.opset() >= 11) {
    accepted.push_back({"largest", kInt});
    accepted.push_back({"sorted", kInt});
  }
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  int64_t k = ctx.Int("k", -1);
  if (ctx.opset() >= 10) {
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> ks, ctx.ConstInts(1, "k, the number of elements"));
    if (ks.size() != 1) {
      return ctx.Refuse(absl::StrCat("input K has ", ks.size(), " elements; expected 1"));
    }
    k = ks[0];
  } else if (!ctx.HasAttr("k")) {
    return ctx.Refuse("attribute 'k' is required");
  }
  Attrs attrs = MakeAttrs({{"k", k},
                           {"axis", ctx.Int("axis", -1)},
                           {"largest", ctx.Int("largest", 1)},
                           {"sorted", ctx.Int("sorted", 1)}});
  ctx.EmitNode("top_k", {ctx.In(0)}, std::move(attrs), 2, {0, 1});
  return ctx.status();
}

absl::Status ConvertReverseSequence(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"batch_axis", kInt}, {"time_axis", kInt}}));
  ctx.EmitOutput(0, "reverse_sequence", {ctx.In(0), ctx.In(1)},
                 MakeAttrs({{"batch_axis", ctx.Int("batch_axis", 1)},
                            {"time_axis", ctx.Int("time_axis", 0)}}));
  return ctx.status();
}

absl::Status ConvertLrn(NodeContext& ctx) {
  if (absl::Status s =
          ctx.CheckAttrs({{"size", kInt}, {"alpha", kFloat}, {"beta", kFloat}, {"bias", kFloat}});
      !s.ok()) {
    return s;
  }
  if (!ctx.HasAttr("size")) return ctx.Refuse("attribute 'size' is required");
  ctx.EmitOutput(0, "lrn", {ctx.In(0)},
                 MakeAttrs({{"size", ctx.Int("size", 0)},
                            {"alpha", ctx.Float("alpha", 1e-4f)},
                            {"beta", ctx.Float("beta", 0.75f)},
                            {"bias", ctx.Float("bias", 1.0f)}}));
  return ctx.status();
}

// Einsum: the equation as it is (loom parses and checks it, naming the
// node); any number of inputs.
absl::Status ConvertEinsum(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"equation", onnx::AttributeProto::STRING}}));
  if (!ctx.HasAttr("equation")) return ctx.Refuse("attribute 'equation' is required");
  std::vector<ValueId> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.In(i));
  ctx.EmitOutput(0, "einsum", std::move(inputs),
                 MakeAttrs({{"equation", ctx.String("equation", "")}}));
  return ctx.status();
}

}  // namespace

void AddMathConverters(ConverterMap& map) {
  const std::pair<const char*, const char*> unary[] = {
      {"Atan", "atan"},   {"Asin", "asin"},   {"Acos", "acos"},
      {"Asinh", "asinh"}, {"Acosh", "acosh"}, {"Atanh", "atanh"},
  };
  for (const auto& [onnx_op, loom_op] : unary) map[onnx_op] = FloatUnary(loom_op);
  map["HannWindow"] = Window(0.5, 0.5, 0);
  map["HammingWindow"] = Window(25.0 / 46, 21.0 / 46, 0);
  map["BlackmanWindow"] = Window(0.42, 0.5, 0.08);
  map["TopK"] = ConvertTopK;
  map["ReverseSequence"] = ConvertReverseSequence;
  map["LRN"] = ConvertLrn;
  map["Einsum"] = ConvertEinsum;
}

}  // namespace loom::onnx_import
