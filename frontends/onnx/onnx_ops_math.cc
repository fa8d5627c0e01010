// ONNX ops added for issue 19's math and selection work: the inverse
// trigonometric and hyperbolic functions (1:1 onto loom composites) and the
// window functions (computed at import).
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_tensor.h"

namespace loom::onnx_import {
namespace {

// A float-only unary op with no attributes, onto loom `op` (which refuses
// other dtypes with a message naming the node).
Converter FloatUnary(std::string op) {
  return [op](NodeContext& ctx) -> absl::Status {
    if (absl::Status s = ctx.CheckAttrs({}); !s.ok()) return s;
    ctx.EmitOutput(0, op, {ctx.In(0)});
    return ctx.status();
  };
}

constexpr AttrKind kInt = onnx::AttributeProto::INT;

// HannWindow, HammingWindow, BlackmanWindow: the generalised cosine window
//   w[n] = a0 - a1 cos(2 pi n / N1) + a2 cos(4 pi n / N1),  n < size,
// with N1 = size when `periodic` (default 1), else size - 1 (as ONNX's
// reference computes it, a symmetric window of size 1 is 0/0: NaN). The
// size must be known at import; the window is computed then, in double, and
// stored as a constant of `output_datatype` (default FLOAT; integers
// truncate toward zero, as Cast does).
Converter Window(double a0, double a1, double a2) {
  return [a0, a1, a2](NodeContext& ctx) -> absl::Status {
    if (absl::Status s = ctx.CheckAttrs({{"output_datatype", kInt}, {"periodic", kInt}}); !s.ok()) {
      return s;
    }
    const int64_t periodic = ctx.Int("periodic", 1);
    if (periodic != 0 && periodic != 1) {
      return ctx.Refuse(absl::StrCat("attribute 'periodic' must be 0 or 1, got ", periodic));
    }
    absl::StatusOr<DType> dtype =
        DTypeFromOnnx(static_cast<int32_t>(ctx.Int("output_datatype", onnx::TensorProto::FLOAT)),
                      absl::StrCat(ctx.label(), ": attribute 'output_datatype'"));
    if (!dtype.ok()) return dtype.status();
    if (*dtype == DType::kBool) {
      return ctx.Refuse("attribute 'output_datatype' is BOOL; expected a numeric type");
    }
    absl::StatusOr<std::vector<int64_t>> size = ctx.ConstInts(0, "the window size");
    if (!size.ok()) return size.status();
    if (size->size() != 1) {
      return ctx.Refuse(
          absl::StrCat("the window size has ", size->size(), " elements; expected a scalar"));
    }
    const int64_t n = (*size)[0];
    if (n < 0) return ctx.Refuse(absl::StrCat("the window size is negative: ", n));
    if (absl::Status s = ctx.CheckBuildable({n}); !s.ok()) return s;
    constexpr double kTwoPi = 6.28318530717958647692;
    const double period = static_cast<double>(periodic == 1 ? n : n - 1);
    Tensor window(*dtype, {n});
    for (int64_t i = 0; i < n; ++i) {
      const double phase = kTwoPi * static_cast<double>(i) / period;
      const double w = a0 - a1 * std::cos(phase) + a2 * std::cos(2 * phase);
      if (IsFloat(*dtype)) {
        window.SetDouble(i, w);
      } else {
        window.SetInt(i, static_cast<int64_t>(std::trunc(w)));
      }
    }
    ctx.ConstantOutput(0, std::move(window));
    return ctx.status();
  };
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
}

}  // namespace loom::onnx_import
