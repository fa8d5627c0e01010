#include "ir/lazy_tensor.h"

#include <utility>

namespace loom {

LazyTensor::LazyTensor(Tensor data)
    : type_(data.type()), data_(std::make_shared<const Tensor>(std::move(data))) {
  absl::call_once(once_, [] {});  // made
}

LazyTensor::LazyTensor(TensorType type, std::function<Tensor()> make)
    : type_(std::move(type)), make_(std::move(make)) {}

const Tensor& LazyTensor::data() const {
  absl::call_once(once_, [this] {
    data_ = std::make_shared<const Tensor>(make_());
    make_ = nullptr;
  });
  return *data_;
}

std::shared_ptr<const LazyTensor> Derived(std::shared_ptr<const LazyTensor> source, TensorType type,
                                          std::function<Tensor(const Tensor&)> derive) {
  return std::make_shared<const LazyTensor>(
      std::move(type),
      [source = std::move(source), derive = std::move(derive)] { return derive(source->data()); });
}

}  // namespace loom
