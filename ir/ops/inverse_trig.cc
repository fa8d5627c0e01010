// The inverse trigonometric and hyperbolic functions atan, asin, acos,
// asinh, acosh and atanh, for f32 and f64, computed per element in double
// by the C library (the compiler decomposes them into primitives,
// passes/decompose_inverse_trig.cc; these loops are the oracle for that
// decomposition). Outside their domains (|x| > 1 for asin, acos and atanh,
// x < 1 for acosh) they are NaN; atanh(+-1) is +-inf.
#include <cmath>
#include <string>
#include <utility>

#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

using Fn = double (*)(double);

double Atan(double x) { return std::atan(x); }
double Asin(double x) { return std::asin(x); }
double Acos(double x) { return std::acos(x); }
double Asinh(double x) { return std::asinh(x); }
double Acosh(double x) { return std::acosh(x); }
double Atanh(double x) { return std::atanh(x); }

OpDef FloatUnaryOp(std::string name, Fn fn) {
  ShapeFn infer = [](const Node&, absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kFloat, 0));
    return OneOutput(in[0]);
  };
  EvalFn eval = [fn](const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    for (int64_t i = 0; i < out[0].num_elements(); ++i) {
      out[0].SetDouble(i, fn(in[0]->GetDouble(i)));
    }
    return absl::OkStatus();
  };
  return WithPattern(
      Composite(FixedArityOp(std::move(name), 1, {}, std::move(infer), std::move(eval))),
      OpPattern::kElementwise);
}

}  // namespace

absl::Status RegisterInverseTrigOps(OpRegistry& registry) {
  return RegisterAll(registry, {
                                   FloatUnaryOp("atan", Atan),
                                   FloatUnaryOp("asin", Asin),
                                   FloatUnaryOp("acos", Acos),
                                   FloatUnaryOp("asinh", Asinh),
                                   FloatUnaryOp("acosh", Acosh),
                                   FloatUnaryOp("atanh", Atanh),
                               });
}

}  // namespace loom
