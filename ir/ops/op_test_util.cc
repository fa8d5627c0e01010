#include "ir/ops/op_test_util.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/status_macros.h"
#include "ir/verifier.h"

namespace loom {

Tensor MakeTensor(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor tensor(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    tensor.SetDouble(i, values.at(i));
  }
  return tensor;
}

Tensor MakeIntTensor(DType dtype, Shape shape, const std::vector<int64_t>& values) {
  Tensor tensor(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    tensor.SetInt(i, values.at(i));
  }
  return tensor;
}

Tensor Iota(DType dtype, Shape shape, double start, double step) {
  Tensor tensor(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    tensor.SetDouble(i, start + step * i);
  }
  return tensor;
}

std::vector<double> ToDoubles(const Tensor& tensor) {
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    values.push_back(tensor.GetDouble(i));
  }
  return values;
}

std::vector<int64_t> ToInts(const Tensor& tensor) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    values.push_back(tensor.GetInt(i));
  }
  return values;
}

absl::StatusOr<std::vector<Tensor>> RunOpOutputs(const std::string& op,
                                                 const std::vector<Tensor>& inputs,
                                                 const Attrs& attrs, int num_outputs) {
  Graph graph;
  graph.name = op;
  std::vector<ValueId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(ValueId id, graph.AddInput(absl::StrCat("x", i), inputs[i].type()));
    ids.push_back(id);
  }
  std::vector<std::string> names;
  for (int k = 0; k < num_outputs; ++k) names.push_back(k == 0 ? "y" : absl::StrCat("y", k));
  LOOM_ASSIGN_OR_RETURN(NodeId node, graph.AddNode(kTestNode, op, ids, names, attrs));
  const ValueIds outputs = graph.node(node).outputs;
  for (ValueId output : outputs) graph.AddOutput(output);

  absl::Status status = InferShapes(graph);
  if (status.ok()) status = VerifyGraph(graph);
  if (!status.ok()) return status;
  absl::StatusOr<std::vector<Tensor>> results = Interpret(graph, inputs);
  if (!results.ok()) return results.status();
  bool typed = results->size() == outputs.size();
  for (size_t k = 0; typed && k < outputs.size(); ++k) {
    typed = (*results)[k].type() == graph.value(outputs[k]).type;
  }
  if (!typed) return absl::InternalError("the interpreter's result has the wrong type");
  return results;
}

absl::StatusOr<Tensor> RunOp(const std::string& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) {
  LOOM_ASSIGN_OR_RETURN(std::vector<Tensor> results, RunOpOutputs(op, inputs, attrs, 1));
  return std::move(results[0]);
}

std::string RunOpError(const std::string& op, const std::vector<Tensor>& inputs,
                       const Attrs& attrs) {
  return RunOp(op, inputs, attrs).status().ToString();
}

}  // namespace loom
