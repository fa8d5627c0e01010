#ifndef LOOM_PASSES_WEIGHT_PRODUCT_TEST_UTIL_H_
#define LOOM_PASSES_WEIGHT_PRODUCT_TEST_UTIL_H_

// A product of a weight, for the tests of the passes that store a weight in
// another layout for its products (pad-gemm-weights, pack-panel-weights).

#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/module.h"
#include "ir/op_registry.h"
#include "ir/random.h"

namespace loom {

// y = x @ w [k, n], x of `x_shape` (k its last dim); with `also_added`,
// w + w is an output too.
struct WeightProduct {
  Module module;
  ValueId w = -1;
  Shape x_shape;
  DType dtype;

  WeightProduct(Shape x_shape, int64_t n, DType dtype = DType::kF32, bool also_added = false)
      : x_shape(std::move(x_shape)), dtype(dtype) {
    Graph& g = module.graph;
    const ValueId x = *g.AddInput("x", {dtype, this->x_shape});
    w = *g.AddInitializer("w", ValueKind::kWeight,
                          UniformTensor({dtype, {this->x_shape.back(), n}}, 1, -1, 1));
    g.AddOutput(g.node(*g.AddNode("mm", "matmul", {x, w}, {"y"})).outputs[0]);
    if (also_added) g.AddOutput(g.node(*g.AddNode("add", "add", {w, w}, {"z"})).outputs[0]);
    EXPECT_TRUE(InferShapes(g).ok());
  }

  // Runs a `PassType` on the module: whether it changed it.
  template <typename PassType>
  bool Apply() {
    absl::StatusOr<bool> changed = PassType().Run(module);
    EXPECT_TRUE(changed.ok()) << changed.status();
    return changed.ok() && *changed;
  }

  // The outputs by the reference interpreter.
  std::vector<Tensor> Run() const {
    absl::StatusOr<std::vector<Tensor>> out =
        Interpret(module.graph, {UniformTensor({dtype, x_shape}, 2, -1, 1)});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<Tensor>{};
  }
};

}  // namespace loom

#endif  // LOOM_PASSES_WEIGHT_PRODUCT_TEST_UTIL_H_
