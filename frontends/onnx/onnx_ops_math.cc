// ONNX ops added for issue 19's math and selection work: the inverse
// trigonometric and hyperbolic functions (1:1 onto loom composites).
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

}  // namespace

void AddMathConverters(ConverterMap& map) {
  const std::pair<const char*, const char*> unary[] = {
      {"Atan", "atan"},   {"Asin", "asin"},   {"Acos", "acos"},
      {"Asinh", "asinh"}, {"Acosh", "acosh"}, {"Atanh", "atanh"},
  };
  for (const auto& [onnx_op, loom_op] : unary) map[onnx_op] = FloatUnary(loom_op);
}

}  // namespace loom::onnx_import
