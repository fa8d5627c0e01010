#ifndef LOOM_IR_LAZY_TENSOR_H_
#define LOOM_IR_LAZY_TENSOR_H_

// The data of a weight or constant, made where it is first read. A weight
// that a pass derives (a transposed or padded GEMM weight) or that a graph
// draws (random weights) costs its front end nothing: its type is known at
// once, and its bytes are made by the first reader (the native backend as
// it builds an executable, the interpreter, an artifact's writer), once,
// whichever thread asks. A compile whose kernels are cached never makes
// the weights it does not run.

#include <functional>
#include <memory>

#include "absl/base/call_once.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace loom {

class LazyTensor {
 public:
  // Data already made.
  explicit LazyTensor(Tensor data);
  // Data that `make` returns when first read: a tensor of `type`, made
  // without failing (whatever can fail is checked before).
  LazyTensor(TensorType type, std::function<Tensor()> make);

  LazyTensor(const LazyTensor&) = delete;
  LazyTensor& operator=(const LazyTensor&) = delete;

  const TensorType& type() const { return type_; }
  // The data, made by the first caller; `make` and what it holds (the
  // tensors it derives from) are released once it has run.
  const Tensor& data() const;

 private:
  TensorType type_;
  mutable absl::once_flag once_;
  mutable std::function<Tensor()> make_;
  mutable std::shared_ptr<const Tensor> data_;
};

// A tensor of `type` made from `source`'s data by `derive` when first
// read; `source` is held until then.
std::shared_ptr<const LazyTensor> Derived(std::shared_ptr<const LazyTensor> source, TensorType type,
                                          std::function<Tensor(const Tensor&)> derive);

}  // namespace loom

#endif  // LOOM_IR_LAZY_TENSOR_H_
