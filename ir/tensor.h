#ifndef LOOM_IR_TENSOR_H_
#define LOOM_IR_TENSOR_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "ir/dtype.h"

namespace loom {

// A dense, row-major host tensor that owns its bytes (zero-initialised,
// 64-byte aligned). The interpreter, the runtimes and the tests exchange
// data as Tensors.
class Tensor {
 public:
  Tensor() : Tensor(TensorType{DType::kF32, {}}) {}
  explicit Tensor(TensorType type);
  Tensor(DType dtype, Shape shape) : Tensor(TensorType{dtype, std::move(shape)}) {}
  // A tensor whose bytes are not zeroed, for a caller that writes every
  // element: zeroing a large model's weights first cost its import a pass
  // over memory (and the page faults, on the one thread).
  static Tensor Uninitialized(TensorType type);

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t rank() const { return static_cast<int64_t>(type_.shape.size()); }
  int64_t num_elements() const { return num_elements_; }
  int64_t num_bytes() const { return SaturatingMul(num_elements_, DTypeSize(type_.dtype)); }

  void* data() { return storage_.data() + offset_; }
  const void* data() const { return storage_.data() + offset_; }
  template <typename T>
  T* data_as() {
    return reinterpret_cast<T*>(data());
  }
  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(data());
  }

  // Element access by flat index through a common type, for code that
  // handles every dtype alike (the interpreter, comparisons, printing).
  // Bools read as 0/1 and store any non-zero value as true. Integers read
  // through GetInt as int64 bits (ir/dtype.h: a u64 is its bit pattern) and
  // SetInt wraps to the width; SetDouble on an integer converts as cast does
  // (truncating, saturating, NaN as 0). Narrow floats read and round
  // through NarrowFloatValue and NarrowFloatBits (ir/dtype.h).
  double GetDouble(int64_t i) const;
  void SetDouble(int64_t i, double v);
  int64_t GetInt(int64_t i) const;
  void SetInt(int64_t i, int64_t v);

  friend bool operator==(const Tensor& a, const Tensor& b) {
    return a.type_ == b.type_ && std::memcmp(a.data(), b.data(), a.num_bytes()) == 0;
  }

 private:
  // The bits of element i of a narrow float tensor (two bytes or one).
  uint16_t NarrowFloatBitsAt(int64_t i) const;
  void SetNarrowFloatBitsAt(int64_t i, uint16_t bits);

  struct alignas(64) Block {
    Block() {}  // no zeroing where storage_ grows (the constructors zero)
    unsigned char bytes[64];
  };
  struct NoZeroing {};
  Tensor(TensorType type, NoZeroing);

  TensorType type_;
  int64_t num_elements_;
  // The data starts this many blocks into storage_. Allocators place large
  // blocks at page boundaries (TCMalloc exactly), so two large tensors'
  // elements i would share their address modulo 4 KiB with each other and
  // with a kernel's page-aligned local arrays; a load then waits on a store
  // it only seems to depend on (4K aliasing: softmax_large ran 1.5 -> 2.0 ms).
  // Large tensors start a varying number of cache lines in instead.
  int32_t offset_ = 0;
  std::vector<Block> storage_;
};

// A float tensor converted element by element to the float type `dtype`
// (exactly when it widens; rounding to nearest, ties to even, when it
// narrows).
Tensor ConvertedFloats(const Tensor& tensor, DType dtype);

}  // namespace loom

#endif  // LOOM_IR_TENSOR_H_
