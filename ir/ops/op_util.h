#ifndef LOOM_IR_OPS_OP_UTIL_H_
#define LOOM_IR_OPS_OP_UTIL_H_

// Helpers shared by the op families: dtype rules, broadcasting, axis
// normalisation and a strided walk over a shape. Error messages describe the
// cause only; callers add the node's name and op.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/dtype.h"
#include "ir/op_registry.h"
#include "ir/tensor.h"

namespace loom {

// A shape function's result for an op with one output. (A braced list
// would copy the type, shape included, out of its initializer_list.)
OutputTypes OneOutput(DType dtype, Shape shape);
OutputTypes OneOutput(const TensorType& type);

// An op with exactly `num_inputs` inputs and one output.
OpDef FixedArityOp(std::string name, int num_inputs, std::vector<AttrSpec> attrs, ShapeFn infer,
                   EvalFn eval);
// `def` with its pattern set.
OpDef WithPattern(OpDef def, OpPattern pattern);
// `def` as an op whose outputs are views of input 0 (OpDef::is_view).
OpDef View(OpDef def);
// `def` as data movement that reads `indexed_inputs` where index values
// say (OpDef::indexed_inputs), with `pattern`.
OpDef Indexed(OpDef def, OpPattern pattern, std::vector<int> indexed_inputs);
// Registers `defs` in order, stopping at the first error.
absl::Status RegisterAll(OpRegistry& registry, std::vector<OpDef> defs);

// Which dtypes an operand accepts.
enum class DTypeClass {
  kAny,
  kNumeric,  // floats and integers (not bool)
  kFloat,    // f32, f64
  kInteger,  // i8, i16, i32, i64, u8, u16, u32, u64
  kBool,
};

// Checks input `index`'s dtype against `accepted`.
absl::Status CheckDType(DType dtype, DTypeClass accepted, int index);
// Checks that inputs `first` and `second` have the same dtype (there is no
// implicit promotion).
absl::Status CheckSameDType(absl::Span<const TensorType> inputs, int first, int second);

// numpy broadcasting: dimensions aligned from the right, each pair equal or
// one of them 1.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// Element strides for reading a tensor of shape `in` as if broadcast to
// `out` (a zero stride where `in` is broadcast). `in` must broadcast to `out`.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Maps `axis` in [-rank, rank) to [0, rank).
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);
// NormalizeAxis for each entry; an axis listed twice is an error.
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(absl::Span<const int64_t> axes, int64_t rank);

// Visits the coordinates of `shape` in row-major order while keeping one
// flat offset per operand. An operand's strides may be zero (broadcast),
// negative (reversed slice) or permuted (transpose). Call Next() once per
// element; after the last element the walk starts over.
class StridedWalk {
 public:
  StridedWalk(Shape shape, std::vector<std::vector<int64_t>> strides,
              std::vector<int64_t> base_offsets = {});

  int64_t offset(int operand) const { return offsets_[operand]; }
  void Next();

 private:
  Shape shape_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
};

// Calls fn(i, walk) for every element i of `out`, where walk.offset(k) is
// the element of inputs[k] that broadcasts to it.
template <typename Fn>
void ForEachBroadcast(absl::Span<const Tensor* const> inputs, const Tensor& out, Fn fn) {
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor* input : inputs) {
    strides.push_back(BroadcastStrides(input->shape(), out.shape()));
  }
  StridedWalk walk(out.shape(), std::move(strides));
  for (int64_t i = 0; i < out.num_elements(); ++i, walk.Next()) fn(i, walk);
}

// Copies element `from` of `src` to element `to` of `dst` (same dtype), bit
// for bit: the data-movement ops work for every dtype alike.
inline void CopyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  const int64_t size = DTypeSize(src.dtype());
  std::memcpy(static_cast<char*>(dst.data()) + to * size,
              static_cast<const char*>(src.data()) + from * size, size);
}

}  // namespace loom

#endif  // LOOM_IR_OPS_OP_UTIL_H_
