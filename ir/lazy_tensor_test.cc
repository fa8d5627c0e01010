#include "ir/lazy_tensor.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace loom {
namespace {

Tensor Filled(float value) {
  Tensor tensor(DType::kF32, {4});
  for (int i = 0; i < 4; ++i) tensor.data_as<float>()[i] = value;
  return tensor;
}

TEST(LazyTensorTest, IsMadeOnceWhereFirstRead) {
  int made = 0;
  LazyTensor lazy({DType::kF32, {4}}, [&] {
    ++made;
    return Filled(2);
  });
  EXPECT_EQ(lazy.type(), (TensorType{DType::kF32, {4}}));
  EXPECT_EQ(made, 0);
  EXPECT_EQ(lazy.data(), Filled(2));
  EXPECT_EQ(&lazy.data(), &lazy.data());
  EXPECT_EQ(made, 1);
}

TEST(LazyTensorTest, ThreadsReadingAtOnceMakeItOnce) {
  int made = 0;
  LazyTensor lazy({DType::kF32, {4}}, [&] {
    ++made;
    return Filled(3);
  });
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) readers.emplace_back([&] { EXPECT_EQ(lazy.data(), Filled(3)); });
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(made, 1);
}

TEST(LazyTensorTest, ADerivedTensorReleasesItsSourceOnceMade) {
  auto source = std::make_shared<const LazyTensor>(Filled(1));
  std::weak_ptr<const LazyTensor> held = source;
  std::shared_ptr<const LazyTensor> doubled =
      Derived(std::move(source), {DType::kF32, {4}}, [](const Tensor& in) {
        Tensor out = in;
        for (int i = 0; i < 4; ++i) out.data_as<float>()[i] *= 2;
        return out;
      });
  EXPECT_FALSE(held.expired());
  EXPECT_EQ(doubled->data(), Filled(2));
  EXPECT_TRUE(held.expired());
}

}  // namespace
}  // namespace loom
