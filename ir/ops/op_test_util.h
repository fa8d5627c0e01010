#ifndef LOOM_IR_OPS_OP_TEST_UTIL_H_
#define LOOM_IR_OPS_OP_TEST_UTIL_H_

// Test helpers: build tensors and run one op through shape inference, the
// verifier and the interpreter.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace loom {

using Ints = std::vector<int64_t>;

// The node every RunOp() graph holds; its errors start with
// "node 'test_node' (OP): ".
inline constexpr char kTestNode[] = "test_node";

// Tensors from row-major values (converted as Tensor::SetDouble/SetInt do).
Tensor MakeTensor(DType dtype, Shape shape, const std::vector<double>& values);
Tensor MakeIntTensor(DType dtype, Shape shape, const std::vector<int64_t>& values);
// start, start + step, ... in row-major order.
Tensor Iota(DType dtype, Shape shape, double start = 0, double step = 1);
std::vector<double> ToDoubles(const Tensor& tensor);
std::vector<int64_t> ToInts(const Tensor& tensor);

// Runs `op` on graph inputs holding `inputs`: builds a one-node graph, runs
// InferShapes and VerifyGraph, interprets it, and checks the result has the
// inferred type. Returns the op's (single) output or the first error.
absl::StatusOr<Tensor> RunOp(const std::string& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs = {});
// RunOp for an op with `num_outputs` outputs: all of them.
absl::StatusOr<std::vector<Tensor>> RunOpOutputs(const std::string& op,
                                                 const std::vector<Tensor>& inputs,
                                                 const Attrs& attrs, int num_outputs);
// RunOp's status as text, e.g. "INVALID_ARGUMENT: node 'test_node' (add):
// ..." ("OK" when the op succeeds).
std::string RunOpError(const std::string& op, const std::vector<Tensor>& inputs,
                       const Attrs& attrs = {});

}  // namespace loom

#endif  // LOOM_IR_OPS_OP_TEST_UTIL_H_
