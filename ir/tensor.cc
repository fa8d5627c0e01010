#include "ir/tensor.h"

namespace loom {

Tensor::Tensor(TensorType type)
    : type_(std::move(type)), num_elements_(NumElements(type_.shape)) {
  const int64_t bytes = num_elements_ * DTypeSize(type_.dtype);
  storage_.resize((bytes + sizeof(Block) - 1) / sizeof(Block) + 1);
}

double Tensor::GetDouble(int64_t i) const {
  switch (dtype()) {
    case DType::kF32:
      return data_as<float>()[i];
    case DType::kF64:
      return data_as<double>()[i];
    case DType::kI32:
      return data_as<int32_t>()[i];
    case DType::kI64:
      return static_cast<double>(data_as<int64_t>()[i]);
    case DType::kBool:
      return data_as<bool>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::SetDouble(int64_t i, double v) {
  switch (dtype()) {
    case DType::kF32:
      data_as<float>()[i] = static_cast<float>(v);
      return;
    case DType::kF64:
      data_as<double>()[i] = v;
      return;
    case DType::kI32:
      data_as<int32_t>()[i] = static_cast<int32_t>(v);
      return;
    case DType::kI64:
      data_as<int64_t>()[i] = static_cast<int64_t>(v);
      return;
    case DType::kBool:
      data_as<bool>()[i] = v != 0;
      return;
  }
}

int64_t Tensor::GetInt(int64_t i) const {
  switch (dtype()) {
    case DType::kF32:
      return static_cast<int64_t>(data_as<float>()[i]);
    case DType::kF64:
      return static_cast<int64_t>(data_as<double>()[i]);
    case DType::kI32:
      return data_as<int32_t>()[i];
    case DType::kI64:
      return data_as<int64_t>()[i];
    case DType::kBool:
      return data_as<bool>()[i] ? 1 : 0;
  }
  return 0;
}

void Tensor::SetInt(int64_t i, int64_t v) {
  switch (dtype()) {
    case DType::kF32:
      data_as<float>()[i] = static_cast<float>(v);
      return;
    case DType::kF64:
      data_as<double>()[i] = static_cast<double>(v);
      return;
    case DType::kI32:
      data_as<int32_t>()[i] = static_cast<int32_t>(v);
      return;
    case DType::kI64:
      data_as<int64_t>()[i] = v;
      return;
    case DType::kBool:
      data_as<bool>()[i] = v != 0;
      return;
  }
}

}  // namespace loom
