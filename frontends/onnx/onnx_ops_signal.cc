// ONNX's signal, linear-algebra and selection ops (issue 45): DFT and STFT
// as products with a transform matrix computed at import, MelWeightMatrix
// computed at import, Det as an unrolled LU elimination with partial
// pivoting in loom ops, TfIdfVectorizer's integer n-gram counts as
// comparisons and sums, and Unique, NonZero and NonMaxSuppression, whose
// output shapes depend on their data, computed at import from data known
// then (StaticOperands lists it).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

constexpr double kTwoPi = 6.28318530717958647692;

// Attribute `name` (default `fallback`), refused unless 0 or 1.
absl::StatusOr<bool> BoolAttr(const NodeContext& ctx, absl::string_view name, int64_t fallback) {
  const int64_t value = ctx.Int(name, fallback);
  if (value != 0 && value != 1) {
    return ctx.Refuse(absl::StrCat("attribute '", name, "' must be 0 or 1, got ", value));
  }
  return value == 1;
}

// A one-element integer input known at import.
absl::StatusOr<int64_t> ConstInt(const NodeContext& ctx, int i, absl::string_view what) {
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> values, ctx.ConstInts(i, what));
  if (values.size() != 1) {
    return ctx.Refuse(absl::StrCat("input '", ctx.proto().input(i), "' (", what, ") has ",
                                   values.size(), " elements; expected a scalar"));
  }
  return values[0];
}

// --- DFT and STFT -------------------------------------------------------------

// One DFT along one axis of a signal whose last dim holds 1 (real) or 2
// (real, imaginary) channels.
struct DftPlan {
  int64_t in_size = 0;      // the signal's length along the axis
  int64_t in_channels = 1;  // 1 or 2
  int64_t length = 0;       // dft_length: the transform's size
  bool inverse = false;
  bool onesided = false;
  int64_t out_size = 0;      // length, length / 2 + 1 (RFFT) or length (IRFFT)
  int64_t out_channels = 2;  // 1 for IRFFT's real output
};

// cos and sin of 2 pi turns / length, exact at the quarter turns (where the
// libm values of cos(pi / 2) and sin(pi) are 1e-16 rather than 0).
std::pair<double, double> UnitCircle(int64_t turns, int64_t length) {
  const int64_t t = turns % length;
  if (t == 0) return {1, 0};
  if (2 * t == length) return {-1, 0};
  if (4 * t == length) return {0, 1};
  if (4 * t == 3 * length) return {0, -1};
  const double angle = kTwoPi * static_cast<double>(t) / static_cast<double>(length);
  return {std::cos(angle), std::sin(angle)};
}

// The largest transform matrix loom builds (64 MiB of f32): a complex DFT
// of length 2048, a real one of about 4096.
constexpr int64_t kMaxDftMatrixElements = int64_t{1} << 24;

// The real matrix [in_size * in_channels, out_size * out_channels] that maps
// a signal's interleaved (re, im) samples to its transform's: positions past
// `length` read nothing (the signal is truncated to dft_length) and a
// signal shorter than `length` is zero-padded. Computed in double, angles
// reduced exactly (k n mod length) before the cosine. A dense product costs
// O(n^2), fine for the frame and signal sizes of real models (a few
// thousand samples); a longer transform is refused (kMaxDftMatrixElements).
Tensor DftMatrix(const DftPlan& plan, DType dtype) {
  const int64_t rows = plan.in_size * plan.in_channels;
  const int64_t cols = plan.out_size * plan.out_channels;
  Tensor m(dtype, {rows, cols});
  auto set = [&](int64_t n, int64_t channel, int64_t k, int64_t out_channel, double value) {
    m.SetDouble((n * plan.in_channels + channel) * cols + k * plan.out_channels + out_channel,
                value);
  };
  const int64_t used = std::min(plan.in_size, plan.length);
  const double scale = plan.inverse ? 1.0 / static_cast<double>(plan.length) : 1.0;
  for (int64_t n = 0; n < used; ++n) {
    for (int64_t k = 0; k < plan.out_size; ++k) {
      const auto [cosine, sine] = UnitCircle(k * n, plan.length);
      const double c = cosine * scale, s = sine * scale;
      if (plan.inverse && plan.onesided) {
        // IRFFT: input bin n of a Hermitian spectrum; the bins past the
        // middle are the conjugates of those before it, so each bin but DC
        // and Nyquist counts twice, and their imaginary parts are dropped.
        if (2 * n > plan.length) continue;
        const bool self_conjugate = n == 0 || 2 * n == plan.length;
        set(n, 0, k, 0, self_conjugate ? c : 2 * c);
        set(n, 1, k, 0, self_conjugate ? 0.0 : -2 * s);
        continue;
      }
      // x e^{-i angle} forward, x e^{+i angle} / length inverse.
      const double sign = plan.inverse ? 1.0 : -1.0;
      set(n, 0, k, 0, c);
      set(n, 0, k, 1, sign * s);
      if (plan.in_channels == 2) {
        set(n, 1, k, 0, -sign * s);
        set(n, 1, k, 1, c);
      }
    }
  }
  return m;
}

// The DFT of `x` along `axis` (not its last dim) by `plan`, bound to ONNX
// output 0: the axis moved next to the channels, flattened with them,
// multiplied by the transform matrix and moved back.
absl::Status EmitDft(NodeContext& ctx, ValueId x, int64_t axis, const DftPlan& plan) {
  const TensorType type = ctx.TypeOf(x);
  const int64_t rank = static_cast<int64_t>(type.shape.size());
  const Shape matrix_shape = {plan.in_size * plan.in_channels, plan.out_size * plan.out_channels};
  const std::optional<int64_t> elements = CheckedProduct(matrix_shape);
  if (!elements.has_value() || *elements > kMaxDftMatrixElements) {
    return ctx.Refuse(absl::StrCat("a DFT of length ", plan.length, " over ", plan.in_size,
                                   " samples: loom computes it as a product with a ",
                                   ShapeToString(matrix_shape), " matrix, larger than the ",
                                   kMaxDftMatrixElements, " elements it builds"));
  }
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.push_back(axis);
  perm.push_back(rank - 1);
  const bool moved = axis != rank - 2;
  const ValueId along_last = moved ? ctx.Emit("transpose", {x}, MakeAttrs({{"perm", perm}})) : x;
  Shape flat(perm.size() - 2);
  for (size_t d = 0; d + 2 < perm.size(); ++d) flat[d] = type.shape[perm[d]];
  Shape transformed = flat;
  flat.push_back(matrix_shape[0]);
  transformed.push_back(plan.out_size);
  transformed.push_back(plan.out_channels);
  const ValueId product = ctx.Emit(
      "matmul", {Reshape(ctx, along_last, flat), ctx.Constant(DftMatrix(plan, type.dtype))});
  if (!moved) {
    ctx.EmitOutput(0, "reshape", {product}, MakeAttrs({{"shape", transformed}}));
    return ctx.status();
  }
  std::vector<int64_t> inverse_perm(rank);
  for (int64_t d = 0; d < rank; ++d) inverse_perm[perm[d]] = d;
  ctx.EmitOutput(0, "transpose", {Reshape(ctx, product, transformed)},
                 MakeAttrs({{"perm", inverse_perm}}));
  return ctx.status();
}

// The signal's channel count (its last dim: 1 real, 2 complex) and a
// float dtype, or a refusal.
absl::StatusOr<int64_t> SignalChannels(const NodeContext& ctx, const TensorType& type,
                                       int64_t min_rank) {
  if (!IsFloat(type.dtype)) {
    return ctx.Refuse(absl::StrCat("the signal is ", DTypeName(type.dtype), "; expected a float"));
  }
  const int64_t rank = static_cast<int64_t>(type.shape.size());
  if (rank < min_rank) {
    return ctx.Refuse(absl::StrCat("the signal ", ShapeToString(type.shape), " has rank ", rank,
                                   "; expected at least ", min_rank));
  }
  const int64_t channels = type.shape.back();
  if (channels != 1 && channels != 2) {
    return ctx.Refuse(absl::StrCat("the signal's last dim is ", channels,
                                   "; expected 1 (real) or 2 (real and imaginary parts)"));
  }
  return channels;
}

// DFT: opset 17 takes the axis as an attribute (default 1), opset 20 as
// input 2 (default -2); dft_length (input 1) and the axis must be known at
// import.
absl::Status ConvertDft(NodeContext& ctx) {
  std::vector<AttrRule> accepted = {{"inverse", kInt}, {"onesided", kInt}};
  if (ctx.opset() < 20) accepted.push_back({"axis", kInt});
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  const ValueId x = ctx.In(0);
  const TensorType type = ctx.TypeOf(x);
  LOOM_ASSIGN_OR_RETURN(int64_t channels, SignalChannels(ctx, type, 2));
  const int64_t rank = static_cast<int64_t>(type.shape.size());
  int64_t axis = ctx.Int("axis", 1);
  if (ctx.opset() >= 20) {
    axis = -2;
    if (ctx.HasInput(2)) {
      LOOM_ASSIGN_OR_RETURN(axis, ConstInt(ctx, 2, "the axis"));
    }
  }
  const int64_t given_axis = axis;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank - 2) {
    return ctx.Refuse(absl::StrCat("the axis ", given_axis, " is out of range for the signal ",
                                   ShapeToString(type.shape),
                                   " (its last dim holds the real and imaginary parts)"));
  }
  DftPlan plan;
  LOOM_ASSIGN_OR_RETURN(plan.inverse, BoolAttr(ctx, "inverse", 0));
  LOOM_ASSIGN_OR_RETURN(plan.onesided, BoolAttr(ctx, "onesided", 0));
  plan.in_size = type.shape[axis];
  plan.in_channels = channels;
  if (plan.onesided && plan.inverse && channels != 2) {
    return ctx.Refuse("an inverse one-sided DFT (IRFFT) takes a complex signal (last dim 2)");
  }
  if (plan.onesided && !plan.inverse && channels != 1) {
    return ctx.Refuse("a one-sided DFT (RFFT) takes a real signal (last dim 1)");
  }
  plan.length = plan.onesided && plan.inverse ? 2 * (plan.in_size - 1) : plan.in_size;
  if (ctx.HasInput(1)) {
    LOOM_ASSIGN_OR_RETURN(plan.length, ConstInt(ctx, 1, "dft_length"));
  }
  if (plan.length < 1 || plan.length > kMaxDftMatrixElements) {
    return ctx.Refuse(
        absl::StrCat("the DFT length is ", plan.length, "; expected 1 to ", kMaxDftMatrixElements));
  }
  plan.out_size = plan.onesided && !plan.inverse ? plan.length / 2 + 1 : plan.length;
  plan.out_channels = plan.onesided && plan.inverse ? 1 : 2;
  return EmitDft(ctx, x, axis, plan);
}

// STFT: frames of frame_length samples every frame_step (both known at
// import) gathered into [batch, frames, frame_length, channels], weighted by
// the window (a run-time input may be), and transformed along the frame.
absl::Status ConvertStft(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"onesided", kInt}}));
  const ValueId signal = ctx.In(0);
  const TensorType type = ctx.TypeOf(signal);
  LOOM_ASSIGN_OR_RETURN(int64_t channels, SignalChannels(ctx, type, 3));
  if (type.shape.size() != 3) {
    return ctx.Refuse(absl::StrCat("the signal ", ShapeToString(type.shape),
                                   " must have rank 3: [batch, length, channels]"));
  }
  LOOM_ASSIGN_OR_RETURN(int64_t step, ConstInt(ctx, 1, "frame_step"));
  if (step < 1) return ctx.Refuse(absl::StrCat("frame_step is ", step, "; expected at least 1"));
  const bool has_window = ctx.HasInput(2);
  const ValueId window = has_window ? ctx.In(2) : NodeContext::kNoValue;
  const TensorType window_type = ctx.TypeOf(window);
  if (has_window && window_type.shape.size() != 1) {
    return ctx.Refuse(
        absl::StrCat("the window ", ShapeToString(window_type.shape), " must have rank 1"));
  }
  if (has_window && window_type.dtype != type.dtype) {
    return ctx.Refuse(absl::StrCat("the window is ", DTypeName(window_type.dtype), ", the signal ",
                                   DTypeName(type.dtype)));
  }
  const int64_t signal_length = type.shape[1];
  int64_t frame_length = has_window ? window_type.shape[0] : signal_length;
  if (ctx.HasInput(3)) {
    LOOM_ASSIGN_OR_RETURN(frame_length, ConstInt(ctx, 3, "frame_length"));
    if (has_window && frame_length != window_type.shape[0]) {
      return ctx.Refuse(absl::StrCat("frame_length ", frame_length, " differs from the window's ",
                                     window_type.shape[0]));
    }
  }
  if (frame_length < 1 || frame_length > signal_length) {
    return ctx.Refuse(absl::StrCat("frame_length ", frame_length,
                                   " must be in [1, the signal's length ", signal_length, "]"));
  }
  DftPlan plan;
  LOOM_ASSIGN_OR_RETURN(plan.onesided, BoolAttr(ctx, "onesided", 1));
  if (plan.onesided && channels != 1) {
    return ctx.Refuse("a one-sided STFT takes a real signal (last dim 1); set onesided=0");
  }
  const int64_t frames = (signal_length - frame_length) / step + 1;
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({frames, frame_length}));
  Tensor positions(DType::kI64, {frames, frame_length});
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t n = 0; n < frame_length; ++n) positions.SetInt(f * frame_length + n, f * step + n);
  }
  ValueId framed = ctx.Emit("gather", {signal, ctx.Constant(std::move(positions))},
                            MakeAttrs({{"axis", int64_t{1}}}));
  if (has_window) {
    framed = ctx.Emit("mul", {framed, Reshape(ctx, window, {frame_length, 1})});
  }
  plan.in_size = frame_length;
  plan.in_channels = channels;
  plan.length = frame_length;
  plan.out_size = plan.onesided ? frame_length / 2 + 1 : frame_length;
  return EmitDft(ctx, framed, 2, plan);
}

// MelWeightMatrix, computed at import in double as ONNX's reference does:
// num_mel_bins + 2 edges evenly spaced on the mel scale
// mel(f) = 2595 log10(1 + f / 700) from lower_edge_hertz to
// upper_edge_hertz (the step divides the range by num_mel_bins + 2), each
// mapped to the spectrogram bin floor((dft_length + 1) f / sample_rate);
// triangle i rises from edge i to 1 at edge i + 1 and falls to edge i + 2.
absl::Status ConvertMelWeightMatrix(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"output_datatype", kInt}}));
  LOOM_ASSIGN_OR_RETURN(
      DType dtype,
      DTypeFromOnnx(static_cast<int32_t>(ctx.Int("output_datatype", onnx::TensorProto::FLOAT)),
                    absl::StrCat(ctx.label(), ": attribute 'output_datatype'")));
  if (dtype == DType::kBool) {
    return ctx.Refuse("attribute 'output_datatype' is BOOL; expected a numeric type");
  }
  LOOM_ASSIGN_OR_RETURN(int64_t mel_bins, ConstInt(ctx, 0, "num_mel_bins"));
  LOOM_ASSIGN_OR_RETURN(int64_t dft_length, ConstInt(ctx, 1, "dft_length"));
  LOOM_ASSIGN_OR_RETURN(int64_t sample_rate, ConstInt(ctx, 2, "sample_rate"));
  LOOM_ASSIGN_OR_RETURN(double lower_hz, ctx.ConstScalar(3, "lower_edge_hertz"));
  LOOM_ASSIGN_OR_RETURN(double upper_hz, ctx.ConstScalar(4, "upper_edge_hertz"));
  if (mel_bins < 1 || dft_length < 1 || sample_rate < 1) {
    return ctx.Refuse(absl::StrCat("num_mel_bins (", mel_bins, "), dft_length (", dft_length,
                                   ") and sample_rate (", sample_rate, ") must be positive"));
  }
  if (!(lower_hz >= 0 && lower_hz < upper_hz)) {
    return ctx.Refuse(absl::StrCat("the edges must satisfy 0 <= lower_edge_hertz (", lower_hz,
                                   ") < upper_edge_hertz (", upper_hz, ")"));
  }
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({spectrogram_bins, mel_bins}));
  const double low_mel = 2595 * std::log1p(lower_hz / 700) / std::log(10.0);
  const double high_mel = 2595 * std::log1p(upper_hz / 700) / std::log(10.0);
  const double mel_step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edges(mel_bins + 2);
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz =
        700 * std::expm1((static_cast<double>(i) * mel_step + low_mel) / 2595 * std::log(10.0));
    const double bin =
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    if (!(bin < static_cast<double>(spectrogram_bins))) {
      return ctx.Refuse(absl::StrCat("upper_edge_hertz ", upper_hz, ": band edge ", i,
                                     " falls in spectrogram bin ", bin, ", past the last of ",
                                     spectrogram_bins, " (keep it at most sample_rate / 2)"));
    }
    edges[i] = static_cast<int64_t>(bin);
  }
  std::vector<double> weights(spectrogram_bins * mel_bins, 0.0);
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (center == left) weights[center * mel_bins + i] = 1;
    for (int64_t j = left; center > left && j <= center; ++j) {
      weights[j * mel_bins + i] =
          static_cast<double>(j - left) / static_cast<double>(center - left);
    }
    for (int64_t j = center; j < right; ++j) {
      weights[j * mel_bins + i] =
          static_cast<double>(right - j) / static_cast<double>(right - center);
    }
  }
  Tensor matrix(dtype, {spectrogram_bins, mel_bins});
  for (int64_t k = 0; k < matrix.num_elements(); ++k) matrix.SetDouble(k, weights[k]);
  ctx.ConstantOutput(0, std::move(matrix));
  return ctx.status();
}

// --- Det ----------------------------------------------------------------------

// Det's partial pivoting at one column of a: [..., M, M].
struct PivotStep {
  ValueId a;          // a with the pivot row swapped into row k
  ValueId pivot_row;  // [..., 1, M]: that row
  ValueId swapped;    // [..., 1, 1]: whether it came from another row
};

// Partial pivoting at column k: the row at or below k with the largest
// |a[r, k]| (the first of ties) swapped with row k; `rows` holds the row
// numbers [M, 1].
PivotStep SwapInPivotRow(NodeContext& ctx, ValueId a, ValueId rows, int64_t k) {
  const TensorType type = ctx.TypeOf(a);
  const int64_t rank = static_cast<int64_t>(type.shape.size());
  const ValueId index_k = ctx.Scalar(DType::kI64, static_cast<double>(k));
  const ValueId candidates = ctx.Emit(
      "where", {ctx.Emit("greater_equal", {rows, index_k}),
                ctx.Emit("abs", {Slice(ctx, a, rank - 1, k, k + 1)}), ctx.Scalar(type.dtype, -1)});
  const ValueId pivot_index =
      ctx.Emit("argmax", {candidates}, MakeAttrs({{"axis", rank - 2}, {"keepdims", int64_t{1}}}));
  const ValueId is_pivot_row = ctx.Emit("equal", {rows, pivot_index});
  const ValueId pivot_row =
      ctx.Emit("reduce_sum", {ctx.Emit("where", {is_pivot_row, a, ctx.Scalar(type.dtype, 0)})},
               MakeAttrs({{"axes", Shape{rank - 2}}, {"keepdims", int64_t{1}}}));
  const ValueId row_k = Slice(ctx, a, rank - 2, k, k + 1);
  const ValueId swapped_a = ctx.Emit("where", {ctx.Emit("equal", {rows, index_k}), pivot_row,
                                               ctx.Emit("where", {is_pivot_row, row_k, a})});
  return {swapped_a, pivot_row, ctx.Emit("not_equal", {pivot_index, index_k})};
}

// Det of [..., M, M]: Gaussian elimination with partial pivoting, unrolled
// over the M columns (O(M) loom ops, each over the whole batch). At column
// k the pivot row is swapped into row k (flipping the sign), the pivot
// multiplies the determinant, and the rows below are eliminated. A zero
// pivot (a singular matrix: the column below is zero too) leaves the rows
// alone and makes the determinant 0.
absl::Status ConvertDet(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  ValueId a = ctx.In(0);
  const TensorType type = ctx.TypeOf(a);
  const int64_t rank = static_cast<int64_t>(type.shape.size());
  if (!IsFloat(type.dtype)) {
    return ctx.Refuse(absl::StrCat("the input is ", DTypeName(type.dtype), "; expected a float"));
  }
  if (rank < 2 || type.shape[rank - 1] != type.shape[rank - 2]) {
    return ctx.Refuse(absl::StrCat("the input ", ShapeToString(type.shape),
                                   " is not a batch of square matrices [..., M, M]"));
  }
  const int64_t m = type.shape[rank - 1];
  const Shape batch(type.shape.begin(), type.shape.end() - 2);
  const DType dtype = type.dtype;
  if (m == 0) {  // the determinant of an empty matrix is 1
    LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(batch));
    Tensor ones(dtype, batch);
    for (int64_t i = 0; i < ones.num_elements(); ++i) ones.SetDouble(i, 1);
    ctx.ConstantOutput(0, std::move(ones));
    return ctx.status();
  }
  Tensor row_numbers(DType::kI64, {m, 1});
  for (int64_t r = 0; r < m; ++r) row_numbers.SetInt(r, r);
  const ValueId rows = ctx.Constant(std::move(row_numbers));
  const ValueId zero = ctx.Scalar(dtype, 0);
  ValueId det = ctx.Scalar(dtype, 1);
  for (int64_t k = 0; k < m; ++k) {
    const PivotStep step = SwapInPivotRow(ctx, a, rows, k);
    a = step.a;
    const ValueId pivot = Slice(ctx, step.pivot_row, rank - 1, k, k + 1);
    det = ctx.Emit("mul", {ctx.Emit("where", {step.swapped, ctx.Emit("neg", {det}), det}), pivot});
    if (k + 1 == m) break;
    const ValueId divisor =
        ctx.Emit("where", {ctx.Emit("equal", {pivot, zero}), ctx.Scalar(dtype, 1), pivot});
    const ValueId below_k =
        ctx.Emit("greater", {rows, ctx.Scalar(DType::kI64, static_cast<double>(k))});
    const ValueId factors = ctx.Emit(
        "where", {below_k, ctx.Emit("div", {Slice(ctx, a, rank - 1, k, k + 1), divisor}), zero});
    a = ctx.Emit("sub", {a, ctx.Emit("mul", {factors, step.pivot_row})});
  }
  ctx.EmitOutput(0, "reshape", {det}, MakeAttrs({{"shape", batch}}));
  return ctx.status();
}

// --- Ops whose output shape depends on their data, computed at import -----

// What Unique, NonZero and NonMaxSuppression need their data for.
constexpr absl::string_view kDataDependent =
    "the data: the output's shape depends on its values, and loom's shapes are static";

// -1, 0 or 1 as element i of `a` is before, equal to or after element j of
// `b` (of one dtype): numbers by value, integers in their type's order,
// NaN after every number and equal to NaN (as numpy.unique orders them).
int CompareElements(const Tensor& a, int64_t i, const Tensor& b, int64_t j) {
  if (IsFloat(a.dtype())) {
    const double x = a.GetDouble(i), y = b.GetDouble(j);
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) - std::isnan(y);
    return x < y ? -1 : (y < x ? 1 : 0);
  }
  const int64_t x = a.GetInt(i), y = b.GetInt(j);
  if (x == y) return 0;
  if (a.dtype() == DType::kBool) return x < y ? -1 : 1;
  return IntegerLess(x, y, a.dtype()) ? -1 : 1;
}

// x viewed as [outer, count, inner] around the axis Unique works along.
struct SliceLayout {
  int64_t outer = 1, count = 1, inner = 1;
  int64_t Offset(int64_t o, int64_t j, int64_t i) const { return (o * count + j) * inner + i; }
};

// Unique: the distinct elements (or slices along `axis`), sorted or in the
// order of their first occurrence, with their first indices, the index of
// each element's (slice's) value among them, and their counts.
absl::Status ConvertUnique(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}, {"sorted", kInt}}));
  LOOM_ASSIGN_OR_RETURN(bool sorted, BoolAttr(ctx, "sorted", 1));
  LOOM_ASSIGN_OR_RETURN(Tensor x, ctx.ConstInput(0, kDataDependent));
  SliceLayout layout;
  int64_t axis = -1;
  if (ctx.HasAttr("axis")) {
    LOOM_ASSIGN_OR_RETURN(axis, NormalizedAxis(ctx, ctx.Int("axis", 0), x.rank()));
    for (int64_t d = 0; d < x.rank(); ++d) {
      int64_t& part = d < axis ? layout.outer : (d == axis ? layout.count : layout.inner);
      part *= x.shape()[d];
    }
  } else {
    layout.count = x.num_elements();
  }
  auto compare = [&](int64_t j, int64_t k) {
    for (int64_t o = 0; o < layout.outer; ++o) {
      for (int64_t i = 0; i < layout.inner; ++i) {
        const int c = CompareElements(x, layout.Offset(o, j, i), x, layout.Offset(o, k, i));
        if (c != 0) return c;
      }
    }
    return 0;
  };
  std::vector<int64_t> order(layout.count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t j, int64_t k) { return compare(j, k) < 0; });
  // Groups of equal slices: each one's first index (the first in the stable
  // order) and count, sorted by value.
  std::vector<int64_t> first, counts, group_of(layout.count);
  for (size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || compare(order[r - 1], order[r]) != 0) {
      first.push_back(order[r]);
      counts.push_back(0);
    }
    group_of[order[r]] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  const int64_t found = static_cast<int64_t>(first.size());
  std::vector<int64_t> rank_of_group(found);  // the group's output position
  std::iota(rank_of_group.begin(), rank_of_group.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_occurrence = rank_of_group;
    std::sort(by_occurrence.begin(), by_occurrence.end(),
              [&](int64_t g, int64_t h) { return first[g] < first[h]; });
    for (int64_t r = 0; r < found; ++r) rank_of_group[by_occurrence[r]] = r;
  }
  Shape y_shape = axis < 0 ? Shape{found} : x.shape();
  if (axis >= 0) y_shape[axis] = found;
  Tensor y(x.dtype(), y_shape), indices(DType::kI64, {found}), counted(DType::kI64, {found});
  Tensor inverse(DType::kI64, {layout.count});
  const int64_t element_size = DTypeSize(x.dtype());
  const auto* from = static_cast<const char*>(x.data());
  auto* to = static_cast<char*>(y.data());
  const SliceLayout y_layout = {layout.outer, found, layout.inner};
  for (int64_t g = 0; g < found; ++g) {
    const int64_t r = rank_of_group[g];
    indices.SetInt(r, first[g]);
    counted.SetInt(r, counts[g]);
    for (int64_t o = 0; o < layout.outer; ++o) {
      std::copy_n(from + layout.Offset(o, first[g], 0) * element_size, layout.inner * element_size,
                  to + y_layout.Offset(o, r, 0) * element_size);
    }
  }
  for (int64_t j = 0; j < layout.count; ++j) inverse.SetInt(j, rank_of_group[group_of[j]]);
  Tensor* outputs[] = {&y, &indices, &inverse, &counted};
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (ctx.WantsOutput(i)) ctx.ConstantOutput(i, std::move(*outputs[i]));
  }
  return ctx.status();
}

// NonZero: the coordinates [rank, count] of the non-zero elements (NaN is
// non-zero) in row-major order; a scalar gives [0, count].
absl::Status ConvertNonZero(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  LOOM_ASSIGN_OR_RETURN(Tensor x, ctx.ConstInput(0, kDataDependent));
  std::vector<int64_t> nonzero;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const bool is_zero = IsFloat(x.dtype()) ? x.GetDouble(i) == 0 : x.GetInt(i) == 0;
    if (!is_zero) nonzero.push_back(i);
  }
  const int64_t count = static_cast<int64_t>(nonzero.size());
  Tensor coordinates(DType::kI64, {x.rank(), count});
  for (int64_t c = 0; c < count; ++c) {
    int64_t rest = nonzero[c];
    for (int64_t d = x.rank() - 1; d >= 0; --d) {
      coordinates.SetInt(d * count + c, rest % x.shape()[d]);
      rest /= x.shape()[d];
    }
  }
  ctx.ConstantOutput(0, std::move(coordinates));
  return ctx.status();
}

// A box's extent along both axes, from [y1, x1, y2, x2] (any two opposite
// corners) or [x_center, y_center, width, height].
template <typename T>
struct Box {
  T x_min, x_max, y_min, y_max;
};

template <typename T>
Box<T> ReadBox(const Tensor& boxes, int64_t offset, bool center_point) {
  T v[4];
  for (int c = 0; c < 4; ++c) v[c] = static_cast<T>(boxes.GetDouble(offset + c));
  if (center_point) {
    return {v[0] - v[2] / 2, v[0] + v[2] / 2, v[1] - v[3] / 2, v[1] + v[3] / 2};
  }
  return {std::min(v[1], v[3]), std::max(v[1], v[3]), std::min(v[0], v[2]), std::max(v[0], v[2])};
}

// Whether the boxes' intersection over union is above the threshold; in
// the boxes' precision T, as ONNX Runtime and ONNX's reference compute it.
template <typename T>
bool Suppresses(const Box<T>& a, const Box<T>& b, T iou_threshold) {
  const T width = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  const T height = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (!(width > 0) || !(height > 0)) return false;
  const T intersection = width * height;
  const T area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const T area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const T union_area = area_a + area_b - intersection;
  if (!(intersection > 0) || !(area_a > 0) || !(area_b > 0) || !(union_area > 0)) return false;
  return intersection / union_area > iou_threshold;
}

struct NmsParams {
  int64_t max_per_class = 0;
  double iou_threshold = 0;
  std::optional<double> score_threshold;
  bool center_point = false;
};

// Greedy NMS per batch and class: boxes by descending score (the lower
// index first among ties), each kept unless it overlaps a kept one too
// much, up to max_per_class. Rows of [batch, class, box].
template <typename T>
std::vector<std::array<int64_t, 3>> SelectBoxes(const Tensor& boxes, const Tensor& scores,
                                                const NmsParams& params) {
  const int64_t batches = boxes.shape()[0], count = boxes.shape()[1];
  const int64_t classes = scores.shape()[1];
  std::vector<std::array<int64_t, 3>> selected;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t score_base = (b * classes + c) * count;
      std::vector<int64_t> candidates;
      for (int64_t n = 0; n < count; ++n) {
        const T score = static_cast<T>(scores.GetDouble(score_base + n));
        if (!params.score_threshold || score > static_cast<T>(*params.score_threshold)) {
          candidates.push_back(n);
        }
      }
      std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t m, int64_t n) {
        return static_cast<T>(scores.GetDouble(score_base + m)) >
               static_cast<T>(scores.GetDouble(score_base + n));
      });
      std::vector<Box<T>> kept;
      for (int64_t n : candidates) {
        if (static_cast<int64_t>(kept.size()) >= params.max_per_class) break;
        const Box<T> box = ReadBox<T>(boxes, (b * count + n) * 4, params.center_point);
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Box<T>& other) {
          return Suppresses(box, other, static_cast<T>(params.iou_threshold));
        });
        if (suppressed) continue;
        kept.push_back(box);
        selected.push_back({b, c, n});
      }
    }
  }
  return selected;
}

// An optional one-element input of NonMaxSuppression (absent or empty:
// none).
absl::StatusOr<std::optional<Tensor>> OptionalScalar(const NodeContext& ctx, int i,
                                                     absl::string_view what) {
  if (!ctx.HasInput(i)) return std::nullopt;
  LOOM_ASSIGN_OR_RETURN(Tensor t, ctx.ConstInput(i, what));
  if (t.num_elements() == 0) return std::nullopt;
  if (t.num_elements() != 1) {
    return ctx.Refuse(absl::StrCat("input '", ctx.proto().input(i), "' (", what,
                                   ") must hold one element, it has shape ",
                                   ShapeToString(t.shape())));
  }
  return t;
}

absl::Status ConvertNonMaxSuppression(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"center_point_box", kInt}}));
  NmsParams params;
  LOOM_ASSIGN_OR_RETURN(params.center_point, BoolAttr(ctx, "center_point_box", 0));
  LOOM_ASSIGN_OR_RETURN(Tensor boxes, ctx.ConstInput(0, kDataDependent));
  LOOM_ASSIGN_OR_RETURN(Tensor scores, ctx.ConstInput(1, kDataDependent));
  const Shape& b = boxes.shape();
  const Shape& s = scores.shape();
  if (b.size() != 3 || b[2] != 4 || s.size() != 3 || s[0] != b[0] || s[2] != b[1]) {
    return ctx.Refuse(absl::StrCat("boxes ", ShapeToString(b), " and scores ", ShapeToString(s),
                                   " must be [batches, boxes, 4] and [batches, classes, boxes]"));
  }
  if (!IsFloat(boxes.dtype()) || !IsFloat(scores.dtype())) {
    return ctx.Refuse("boxes and scores must be floats");
  }
  LOOM_ASSIGN_OR_RETURN(std::optional<Tensor> max_per_class,
                        OptionalScalar(ctx, 2, "max_output_boxes_per_class"));
  LOOM_ASSIGN_OR_RETURN(std::optional<Tensor> iou, OptionalScalar(ctx, 3, "iou_threshold"));
  LOOM_ASSIGN_OR_RETURN(std::optional<Tensor> score, OptionalScalar(ctx, 4, "score_threshold"));
  if (max_per_class.has_value()) {
    if (!IsInteger(max_per_class->dtype())) {
      return ctx.Refuse("max_output_boxes_per_class must be an integer");
    }
    params.max_per_class = std::max<int64_t>(0, max_per_class->GetInt(0));
  }
  if (iou.has_value()) params.iou_threshold = iou->GetDouble(0);
  if (score.has_value()) params.score_threshold = score->GetDouble(0);
  const std::vector<std::array<int64_t, 3>> selected =
      boxes.dtype() == DType::kF64 ? SelectBoxes<double>(boxes, scores, params)
                                   : SelectBoxes<float>(boxes, scores, params);
  Tensor indices(DType::kI64, {static_cast<int64_t>(selected.size()), 3});
  for (size_t r = 0; r < selected.size(); ++r) {
    for (int c = 0; c < 3; ++c) indices.SetInt(3 * r + c, selected[r][c]);
  }
  ctx.ConstantOutput(0, std::move(indices));
  return ctx.status();
}

// --- TfIdfVectorizer ----------------------------------------------------------

// The n-grams of one length n in the pool: their tokens [grams, n] and the
// output coordinate of each.
struct GramSet {
  int64_t n = 0;
  std::vector<std::vector<int64_t>> grams;
  std::vector<int64_t> coordinates;
};

// The pool's n-grams of the lengths counted (min_gram_length to
// max_gram_length), from pool_int64s split by ngram_counts (the start of
// each length's run) and mapped by ngram_indexes. A repeated n-gram counts
// at its last coordinate, as ONNX Runtime's and ONNX's reference do.
absl::StatusOr<std::vector<GramSet>> PoolGrams(const NodeContext& ctx, int64_t min_n,
                                               int64_t max_n) {
  const std::vector<int64_t> pool = ctx.Ints("pool_int64s");
  const std::vector<int64_t> starts = ctx.Ints("ngram_counts");
  const std::vector<int64_t> coordinates = ctx.Ints("ngram_indexes");
  const int64_t pool_size = static_cast<int64_t>(pool.size());
  std::vector<GramSet> sets;
  int64_t gram_id = 0;
  for (size_t level = 0; level < starts.size(); ++level) {
    const int64_t n = static_cast<int64_t>(level) + 1;
    const int64_t start = starts[level];
    const int64_t end = level + 1 < starts.size() ? starts[level + 1] : pool_size;
    if (start < 0 || end < start || end > pool_size || (end - start) % n != 0) {
      return ctx.Refuse(absl::StrCat("ngram_counts: the ", n, "-grams span [", start, ", ", end,
                                     ") of pool_int64s (", pool_size,
                                     " items), not a whole number of ", n, "-grams"));
    }
    std::map<std::vector<int64_t>, int64_t> coordinate_of;
    for (int64_t at = start; at < end; at += n, ++gram_id) {
      if (gram_id >= static_cast<int64_t>(coordinates.size())) {
        return ctx.Refuse(absl::StrCat("ngram_indexes has ", coordinates.size(),
                                       " entries, fewer than the pool's n-grams"));
      }
      coordinate_of[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + n)] =
          coordinates[gram_id];
    }
    if (n < min_n || n > max_n || coordinate_of.empty()) continue;
    GramSet set{n, {}, {}};
    for (auto& [gram, coordinate] : coordinate_of) {
      set.grams.push_back(gram);
      set.coordinates.push_back(coordinate);
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

// The counts [rows, coordinates] of one length's n-grams in x [rows, C]:
// every window x[s], x[s + d], ..., x[s + (n-1) d] for the skip distances
// d = 1 .. max_skip + 1 (unigrams once) gathered at once, compared with
// every n-gram, matched where all n tokens are equal, summed over the
// windows and mapped to the output coordinates by a 0/1 matrix.
ValueId CountGrams(NodeContext& ctx, ValueId x, const GramSet& set, int64_t max_skip,
                   int64_t output_size) {
  const Shape shape = ctx.TypeOf(x).shape;
  const int64_t length = shape[1], n = set.n;
  std::vector<int64_t> positions;
  for (int64_t d = 1; d <= (n == 1 ? 1 : max_skip + 1); ++d) {
    for (int64_t s = 0; s + (n - 1) * d < length; ++s) {
      for (int64_t k = 0; k < n; ++k) positions.push_back(s + k * d);
    }
  }
  const int64_t windows = static_cast<int64_t>(positions.size()) / n;
  if (windows == 0) return NodeContext::kNoValue;
  const int64_t grams = static_cast<int64_t>(set.grams.size());
  Tensor at(DType::kI64, {windows, n}), tokens(DType::kI64, {grams, n});
  for (int64_t i = 0; i < windows * n; ++i) at.SetInt(i, positions[i]);
  Tensor assign(DType::kF32, {grams, output_size});
  for (int64_t g = 0; g < grams; ++g) {
    for (int64_t k = 0; k < n; ++k) tokens.SetInt(g * n + k, set.grams[g][k]);
    assign.SetDouble(g * output_size + set.coordinates[g], 1);
  }
  const ValueId gathered =
      ctx.Emit("gather", {x, ctx.Constant(std::move(at))}, MakeAttrs({{"axis", int64_t{1}}}));
  const ValueId equal = ctx.Emit("equal", {Reshape(ctx, gathered, {shape[0], windows, 1, n}),
                                           ctx.Constant(std::move(tokens))});
  const ValueId matched =
      ctx.Emit("reduce_prod", {ctx.CastTo(equal, DType::kF32)}, MakeAttrs({{"axes", Shape{3}}}));
  const ValueId counts = ctx.Emit("reduce_sum", {matched}, MakeAttrs({{"axes", Shape{1}}}));
  return ctx.Emit("matmul", {counts, ctx.Constant(std::move(assign))});
}

// TfIdfVectorizer over integer tokens ([C] or [rows, C]): n-gram counts
// (TF), 1 where counted times the coordinate's weight (IDF), or counts
// times weights (TFIDF), as f32 [rows, max(ngram_indexes) + 1]. The
// weights are indexed by output coordinate, as ONNX Runtime does.
absl::Status ConvertTfIdfVectorizer(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"max_gram_length", kInt},
                                       {"min_gram_length", kInt},
                                       {"max_skip_count", kInt},
                                       {"mode", kString},
                                       {"ngram_counts", kInts},
                                       {"ngram_indexes", kInts},
                                       {"pool_int64s", kInts},
                                       {"pool_strings", kStrings},
                                       {"weights", kFloats}}));
  if (ctx.HasAttr("pool_strings")) {
    return ctx.Refuse("string n-grams (pool_strings) take string tokens, which loom does not have");
  }
  for (absl::string_view required : {"pool_int64s", "ngram_counts", "ngram_indexes", "mode",
                                     "min_gram_length", "max_gram_length", "max_skip_count"}) {
    if (!ctx.HasAttr(required))
      return ctx.Refuse(absl::StrCat("attribute '", required, "' is required"));
  }
  const std::string mode = ctx.String("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") {
    return ctx.Refuse(absl::StrCat("attribute 'mode' is '", mode, "'; expected TF, IDF or TFIDF"));
  }
  const int64_t min_n = ctx.Int("min_gram_length", 0), max_n = ctx.Int("max_gram_length", 0);
  const int64_t max_skip = ctx.Int("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n || max_skip < 0) {
    return ctx.Refuse(absl::StrCat("min_gram_length (", min_n, ") must be at least 1, ",
                                   "max_gram_length (", max_n, ") at least min_gram_length and ",
                                   "max_skip_count (", max_skip, ") at least 0"));
  }
  const std::vector<int64_t> coordinates = ctx.Ints("ngram_indexes");
  if (coordinates.empty() || *std::min_element(coordinates.begin(), coordinates.end()) < 0) {
    return ctx.Refuse("ngram_indexes must be non-empty and non-negative");
  }
  const int64_t output_size = *std::max_element(coordinates.begin(), coordinates.end()) + 1;
  const std::vector<double> weights = ctx.Floats("weights");
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < output_size) {
    return ctx.Refuse(absl::StrCat("weights has ", weights.size(), " entries; the output has ",
                                   output_size, " coordinates"));
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<GramSet> sets, PoolGrams(ctx, min_n, max_n));
  ValueId x = ctx.In(0);
  const TensorType type = ctx.TypeOf(x);
  if (type.dtype != DType::kI32 && type.dtype != DType::kI64) {
    return ctx.Refuse(
        absl::StrCat("the input is ", DTypeName(type.dtype), "; expected int32 or int64 tokens"));
  }
  const int64_t rank = static_cast<int64_t>(type.shape.size());
  if (rank != 1 && rank != 2) {
    return ctx.Refuse(
        absl::StrCat("the input ", ShapeToString(type.shape), " must be [C] or [rows, C]"));
  }
  const int64_t rows = rank == 2 ? type.shape[0] : 1;
  x = Reshape(ctx, ctx.CastTo(x, DType::kI64), {rows, type.shape.back()});
  ValueId counts = ctx.Constant(Tensor(DType::kF32, {rows, output_size}));
  for (const GramSet& set : sets) {
    const ValueId part = CountGrams(ctx, x, set, max_skip, output_size);
    if (part != NodeContext::kNoValue) counts = ctx.Emit("add", {counts, part});
  }
  if (mode != "TF" && !weights.empty()) {
    Tensor w(DType::kF32, {output_size});
    for (int64_t i = 0; i < output_size; ++i) w.SetDouble(i, weights[i]);
    const ValueId weight = ctx.Constant(std::move(w));
    counts = mode == "IDF"
                 ? ctx.Emit("where", {ctx.Emit("greater", {counts, ctx.Scalar(DType::kF32, 0)}),
                                      weight, ctx.Scalar(DType::kF32, 0)})
                 : ctx.Emit("mul", {counts, weight});
  } else if (mode == "IDF") {
    counts = ctx.Emit("minimum", {counts, ctx.Scalar(DType::kF32, 1)});
  }
  Shape out_shape = {rows, output_size};
  if (rank == 1) out_shape = {output_size};
  ctx.EmitOutput(0, "reshape", {counts}, MakeAttrs({{"shape", out_shape}}));
  return ctx.status();
}

}  // namespace

void AddSignalConverters(ConverterMap& map) {
  map["DFT"] = ConvertDft;
  map["STFT"] = ConvertStft;
  map["MelWeightMatrix"] = ConvertMelWeightMatrix;
  map["Det"] = ConvertDet;
  map["Unique"] = ConvertUnique;
  map["NonZero"] = ConvertNonZero;
  map["NonMaxSuppression"] = ConvertNonMaxSuppression;
  map["TfIdfVectorizer"] = ConvertTfIdfVectorizer;
}

}  // namespace loom::onnx_import
