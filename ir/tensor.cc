#include "ir/tensor.h"

#include <atomic>
#include <cstring>

namespace loom {
namespace {

// Tensors from this size on start 1 to 31 cache lines into their storage.
constexpr int64_t kStaggerFromBytes = 64 * 1024;
constexpr int32_t kStaggerLines = 31;

int32_t NextStagger() {
  static std::atomic<uint32_t> count{0};
  return 1 + static_cast<int32_t>(count.fetch_add(1, std::memory_order_relaxed) % kStaggerLines);
}

}  // namespace

uint16_t Tensor::NarrowFloatBitsAt(int64_t i) const {
  return DTypeSize(dtype()) == 2 ? data_as<uint16_t>()[i] : data_as<uint8_t>()[i];
}

void Tensor::SetNarrowFloatBitsAt(int64_t i, uint16_t bits) {
  if (DTypeSize(dtype()) == 2) {
    data_as<uint16_t>()[i] = bits;
  } else {
    data_as<uint8_t>()[i] = static_cast<uint8_t>(bits);
  }
}

Tensor::Tensor(TensorType type, NoZeroing)
    : type_(std::move(type)), num_elements_(NumElements(type_.shape)) {
  const int64_t bytes = num_bytes();
  if (bytes >= kStaggerFromBytes) offset_ = NextStagger();
  storage_.resize((bytes + sizeof(Block) - 1) / sizeof(Block) + 1 + offset_);
}

Tensor::Tensor(TensorType type) : Tensor(std::move(type), NoZeroing{}) {
  std::memset(static_cast<void*>(storage_.data()), 0, storage_.size() * sizeof(Block));
}

Tensor Tensor::Uninitialized(TensorType type) { return Tensor(std::move(type), NoZeroing{}); }

double Tensor::GetDouble(int64_t i) const {
  switch (dtype()) {
    case DType::kF32:
      return data_as<float>()[i];
    case DType::kF64:
      return data_as<double>()[i];
    case DType::kBool:
      return data_as<bool>()[i] ? 1.0 : 0.0;
    default:
      if (IsNarrowFloat(dtype())) return NarrowFloatValue(NarrowFloatBitsAt(i), dtype());
      return IntegerBitsToDouble(GetInt(i), dtype());
  }
}

void Tensor::SetDouble(int64_t i, double v) {
  switch (dtype()) {
    case DType::kF32:
      data_as<float>()[i] = static_cast<float>(v);
      return;
    case DType::kF64:
      data_as<double>()[i] = v;
      return;
    case DType::kBool:
      data_as<bool>()[i] = v != 0;
      return;
    default:  // as cast converts (an integer's bits are in range)
      if (IsNarrowFloat(dtype())) {
        SetNarrowFloatBitsAt(i, NarrowFloatBits(v, dtype()));
      } else {
        SetInt(i, FloatToIntegerBits(v, dtype()));
      }
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
    case DType::kI8:
      return data_as<int8_t>()[i];
    case DType::kI16:
      return data_as<int16_t>()[i];
    case DType::kU8:
      return data_as<uint8_t>()[i];
    case DType::kU16:
      return data_as<uint16_t>()[i];
    case DType::kU32:
      return data_as<uint32_t>()[i];
    case DType::kU64:
      return static_cast<int64_t>(data_as<uint64_t>()[i]);
    case DType::kI4:
    case DType::kI2:
      return data_as<int8_t>()[i];
    case DType::kU4:
    case DType::kU2:
      return data_as<uint8_t>()[i];
    default:  // the narrow floats
      return static_cast<int64_t>(GetDouble(i));
  }
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
    case DType::kI8:
      data_as<int8_t>()[i] = static_cast<int8_t>(v);
      return;
    case DType::kI16:
      data_as<int16_t>()[i] = static_cast<int16_t>(v);
      return;
    case DType::kU8:
      data_as<uint8_t>()[i] = static_cast<uint8_t>(v);
      return;
    case DType::kU16:
      data_as<uint16_t>()[i] = static_cast<uint16_t>(v);
      return;
    case DType::kU32:
      data_as<uint32_t>()[i] = static_cast<uint32_t>(v);
      return;
    case DType::kU64:
      data_as<uint64_t>()[i] = static_cast<uint64_t>(v);
      return;
    case DType::kI4:
    case DType::kI2: {
      // Wraps: the low bits, sign-extended.
      const int unused = 64 - IntegerWidth(dtype());
      data_as<int8_t>()[i] =
          static_cast<int8_t>(static_cast<int64_t>(static_cast<uint64_t>(v) << unused) >> unused);
      return;
    }
    case DType::kU4:
    case DType::kU2:
      data_as<uint8_t>()[i] = static_cast<uint8_t>(v & IntegerMaxBits(dtype()));
      return;
    default:  // the narrow floats
      SetDouble(i, static_cast<double>(v));
      return;
  }
}

Tensor ConvertedFloats(const Tensor& tensor, DType dtype) {
  Tensor converted(dtype, tensor.shape());
  for (int64_t i = 0; i < tensor.num_elements(); ++i) converted.SetDouble(i, tensor.GetDouble(i));
  return converted;
}

}  // namespace loom
