// top_k and reverse_sequence, computed straight from their definitions.
//
// top_k(x) -> (values, indices): along `axis` (default -1), the `k`
// (required, 0 <= k <= that dim) largest elements (`largest` 1, default)
// or smallest (0), in order (largest first, or smallest first), with their
// int64 indices; equal elements keep their order (the lower index first,
// as ONNX requires). NaN counts as larger than every number (as in
// torch.topk): first among the largest, last among the smallest. `sorted`
// (default 1) 0 lets ONNX return any order; loom returns the sorted one.
// Any numeric dtype.
//
// reverse_sequence(x, sequence_lens) -> y: x has a batch axis and a time
// axis (`batch_axis` 1 and `time_axis` 0 by default, or the other way
// round: ONNX allows only these); sequence_lens [batch] int64 holds each
// batch entry's length L in [0, T], T the time axis' size. Then y[b, t] =
// x[b, L - 1 - t] for t < L and x[b, t] past it. A length outside [0, T] is
// an error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

// The axis, k and direction of a top_k node on input type `x`.
struct TopK {
  int64_t axis, k;
  bool largest;
};

absl::StatusOr<TopK> ReadTopK(const Node& node, const TensorType& x) {
  LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node.attrs.GetInt("axis", -1),
                                                    static_cast<int64_t>(x.shape.size())));
  const int64_t k = node.attrs.GetInt("k", -1);
  const int64_t dim = x.shape[axis];
  if (k < 0 || k > dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "k = ", k, " is outside [0, ", dim, "], the size of axis ", axis, " of ", TypeToString(x)));
  }
  for (const char* flag : {"largest", "sorted"}) {
    const int64_t value = node.attrs.GetInt(flag, 1);
    if (value != 0 && value != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", flag, "' must be 0 or 1, got ", value));
    }
  }
  return TopK{axis, k, node.attrs.GetInt("largest", 1) == 1};
}

absl::StatusOr<OutputTypes> TopKShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kNumeric, 0));
  if (in[0].shape.empty()) {
    return absl::InvalidArgumentError("input is a scalar; top_k needs an axis");
  }
  LOOM_ASSIGN_OR_RETURN(TopK top, ReadTopK(node, in[0]));
  Shape shape = in[0].shape;
  shape[top.axis] = top.k;
  OutputTypes types;
  types.push_back({in[0].dtype, shape});
  types.push_back({DType::kI64, std::move(shape)});
  return types;
}

// Whether a comes before b among the largest: a > b, NaN above all numbers.
bool Greater(double a, double b) { return a > b || (std::isnan(a) && !std::isnan(b)); }

absl::Status TopKEval(const Node& node, absl::Span<const Tensor* const> in,
                      absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  LOOM_ASSIGN_OR_RETURN(TopK top, ReadTopK(node, x.type()));
  const Shape& shape = x.shape();
  const int64_t n = shape[top.axis];
  int64_t inner = 1;
  for (size_t d = top.axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t outer = n == 0 ? 0 : x.num_elements() / (n * inner);
  const bool is_float = IsFloat(x.dtype());
  std::vector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      auto before = [&](int64_t a, int64_t b) {
        const int64_t ea = base + a * inner, eb = base + b * inner;
        if (!is_float) {
          return top.largest ? x.GetInt(ea) > x.GetInt(eb) : x.GetInt(ea) < x.GetInt(eb);
        }
        const double va = x.GetDouble(ea), vb = x.GetDouble(eb);
        return top.largest ? Greater(va, vb) : Greater(vb, va);
      };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), before);
      for (int64_t r = 0; r < top.k; ++r) {
        const int64_t at = o * top.k * inner + r * inner + i;
        CopyElement(x, base + order[r] * inner, out[0], at);
        out[1].SetInt(at, order[r]);
      }
    }
  }
  return absl::OkStatus();
}

// The batch and time axes of a reverse_sequence node.
absl::StatusOr<std::pair<int64_t, int64_t>> ReadSequenceAxes(const Node& node) {
  const int64_t batch = node.attrs.GetInt("batch_axis", 1);
  const int64_t time = node.attrs.GetInt("time_axis", 0);
  if (!((batch == 0 && time == 1) || (batch == 1 && time == 0))) {
    return absl::InvalidArgumentError(absl::StrCat("attributes 'batch_axis' = ", batch,
                                                   " and 'time_axis' = ", time,
                                                   ": expected 0 and 1, or 1 and 0"));
  }
  return std::make_pair(batch, time);
}

absl::StatusOr<OutputTypes> ReverseSequenceShape(const Node& node,
                                                 absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(auto axes, ReadSequenceAxes(node));
  if (in[0].shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("input ", TypeToString(in[0]), " has rank ",
                                                   in[0].shape.size(), "; expected at least 2"));
  }
  const Shape want = {in[0].shape[axes.first]};
  if (in[1].dtype != DType::kI64 || in[1].shape != want) {
    return absl::InvalidArgumentError(absl::StrCat("sequence_lens is ", TypeToString(in[1]),
                                                   "; expected ", TypeToString({DType::kI64, want}),
                                                   " (one length per batch entry)"));
  }
  return OneOutput(in[0]);
}

absl::Status ReverseSequenceEval(const Node& node, absl::Span<const Tensor* const> in,
                                 absl::Span<Tensor> out) {
  LOOM_ASSIGN_OR_RETURN(auto axes, ReadSequenceAxes(node));
  const auto [batch_axis, time_axis] = axes;
  const Tensor& x = *in[0];
  const Shape& shape = x.shape();
  const int64_t steps = shape[time_axis];
  for (int64_t b = 0; b < shape[batch_axis]; ++b) {
    const int64_t length = in[1]->GetInt(b);
    if (length < 0 || length > steps) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence_lens[", b, "] = ", length, " is outside [0, ", steps, "]"));
    }
  }
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  // Element i at (a0, a1, rest): batch and time from a0, a1.
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t a0 = i / (shape[1] * inner), a1 = i / inner % shape[1];
    const int64_t b = batch_axis == 0 ? a0 : a1, t = batch_axis == 0 ? a1 : a0;
    const int64_t length = in[1]->GetInt(b);
    const int64_t from_t = t < length ? length - 1 - t : t;
    const int64_t from = i + (from_t - t) * (time_axis == 0 ? shape[1] * inner : inner);
    CopyElement(x, from, out[0], i);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterSequenceOps(OpRegistry& registry) {
  OpDef top_k;
  top_k.name = "top_k";
  top_k.num_outputs = 2;
  top_k.attrs = {{"k", AttrType::kInt, true},
                 {"axis", AttrType::kInt, false},
                 {"largest", AttrType::kInt, false},
                 {"sorted", AttrType::kInt, false}};
  top_k.infer = TopKShape;
  top_k.eval = TopKEval;
  return RegisterAll(
      registry, {WithPattern(Composite(std::move(top_k)), OpPattern::kOpaque),  // sorts
                 WithPattern(Composite(FixedArityOp("reverse_sequence", 2,
                                                    {{"batch_axis", AttrType::kInt, false},
                                                     {"time_axis", AttrType::kInt, false}},
                                                    ReverseSequenceShape, ReverseSequenceEval)),
                             OpPattern::kInjective)});
}

}  // namespace loom
