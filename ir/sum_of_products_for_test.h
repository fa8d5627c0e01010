#ifndef LOOM_IR_SUM_OF_PRODUCTS_FOR_TEST_H_
#define LOOM_IR_SUM_OF_PRODUCTS_FOR_TEST_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/loop_ir.h"

namespace loom {

// A node of the tests of the library-call matchers (gemm, conv): over
// pointwise loops `ranges`, the sum over loops `reduction_ranges` of f32
// buffer 0 at `a_index` times buffer 1 at `b_index`, stored into buffer 2
// at `store`.
inline ComputeNode SumOfProducts(std::vector<int64_t> ranges, std::vector<int64_t> reduction_ranges,
                                 Expr a_index, Expr b_index, Expr store) {
  ComputeNode node;
  node.name = "products";
  node.output = 2;
  node.ranges = std::move(ranges);
  node.reduction_ranges = std::move(reduction_ranges);
  node.reduce = ReduceKind::kSum;
  node.store_index = store;
  ScalarOp a{ScalarOp::Kind::kLoad, DType::kF32};
  a.buffer = 0;
  a.index = a_index;
  ScalarOp b{ScalarOp::Kind::kLoad, DType::kF32};
  b.buffer = 1;
  b.index = b_index;
  ScalarOp mul{ScalarOp::Kind::kCall, DType::kF32};
  mul.fn = ScalarFn::kMul;
  mul.args = {0, 1};
  node.body = {a, b, mul};
  node.root = 2;
  return node;
}

}  // namespace loom

#endif  // LOOM_IR_SUM_OF_PRODUCTS_FOR_TEST_H_
