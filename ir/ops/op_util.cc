#include "ir/ops/op_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "ir/status_macros.h"

namespace loom {

OutputTypes OneOutput(DType dtype, Shape shape) {
  OutputTypes types(1);
  types[0].dtype = dtype;
  types[0].shape = std::move(shape);
  return types;
}

OutputTypes OneOutput(const TensorType& type) { return OutputTypes(1, type); }

OpDef WithPattern(OpDef def, OpPattern pattern) {
  def.pattern = pattern;
  return def;
}

OpDef View(OpDef def) {
  def.pattern = OpPattern::kInjective;
  def.is_view = true;
  return def;
}

OpDef Indexed(OpDef def, OpPattern pattern, std::vector<int> indexed_inputs) {
  def.pattern = pattern;
  def.indexed_inputs = std::move(indexed_inputs);
  return def;
}

OpDef FixedArityOp(std::string name, int num_inputs, std::vector<AttrSpec> attrs, ShapeFn infer,
                   EvalFn eval) {
  OpDef def;
  def.name = std::move(name);
  def.min_inputs = num_inputs;
  def.max_inputs = num_inputs;
  def.num_outputs = 1;
  def.attrs = std::move(attrs);
  def.infer = std::move(infer);
  def.eval = std::move(eval);
  return def;
}

absl::Status RegisterAll(OpRegistry& registry, std::vector<OpDef> defs) {
  for (OpDef& def : defs) {
    LOOM_RETURN_IF_ERROR(registry.Register(std::move(def)));
  }
  return absl::OkStatus();
}

namespace {

bool Accepts(DTypeClass accepted, DType dtype) {
  switch (accepted) {
    case DTypeClass::kAny:
      return true;
    case DTypeClass::kNumeric:
      return dtype != DType::kBool;
    case DTypeClass::kFloat:
      return IsFloat(dtype);
    case DTypeClass::kInteger:
      return IsInteger(dtype);
    case DTypeClass::kBool:
      return dtype == DType::kBool;
  }
  return false;
}

absl::string_view Describe(DTypeClass accepted) {
  switch (accepted) {
    case DTypeClass::kAny:
      return "any dtype";
    case DTypeClass::kNumeric:
      return "a numeric dtype (float or integer, not bool)";
    case DTypeClass::kFloat:
      return "a float dtype (f32 or f64)";
    case DTypeClass::kInteger:
      return "an integer dtype (i8, i16, i32, i64, u8, u16, u32 or u64)";
    case DTypeClass::kBool:
      return "bool";
  }
  return "?";
}

}  // namespace

absl::Status CheckDType(DType dtype, DTypeClass accepted, int index) {
  if (Accepts(accepted, dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input ", index, " has dtype ", DTypeName(dtype),
                                                 ", expected ", Describe(accepted)));
}

absl::Status CheckSameDType(absl::Span<const TensorType> inputs, int first, int second) {
  if (inputs[first].dtype == inputs[second].dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "inputs ", first, " and ", second, " have different dtypes: ", TypeToString(inputs[first]),
      " and ", TypeToString(inputs[second]), " (no implicit promotion; insert a cast)"));
}

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Dimension i counted from the right; a missing one reads as 1.
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot broadcast shapes ", ShapeToString(a), " and ", ShapeToString(b)));
    }
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  const std::vector<int64_t> contiguous = ContiguousStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != 1) strides[lead + i] = contiguous[i];
  }
  return strides;
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(absl::Span<const int64_t> axes, int64_t rank) {
  std::vector<int64_t> normalized;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    LOOM_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, rank));
    if (seen[a]) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is listed more than once"));
    }
    seen[a] = true;
    normalized.push_back(a);
  }
  return normalized;
}

StridedWalk::StridedWalk(Shape shape, std::vector<std::vector<int64_t>> strides,
                         std::vector<int64_t> base_offsets)
    : shape_(std::move(shape)),
      strides_(std::move(strides)),
      index_(shape_.size(), 0),
      offsets_(std::move(base_offsets)) {
  offsets_.resize(strides_.size(), 0);
}

void StridedWalk::Next() {
  for (int d = static_cast<int>(shape_.size()) - 1; d >= 0; --d) {
    if (++index_[d] < shape_[d]) {
      for (size_t k = 0; k < offsets_.size(); ++k) {
        offsets_[k] += strides_[k][d];
      }
      return;
    }
    // Carry: rewind this dimension and step the next outer one.
    for (size_t k = 0; k < offsets_.size(); ++k) {
      offsets_[k] -= strides_[k][d] * (shape_[d] - 1);
    }
    index_[d] = 0;
  }
}

}  // namespace loom
