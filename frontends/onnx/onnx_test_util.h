#ifndef LOOM_FRONTENDS_ONNX_ONNX_TEST_UTIL_H_
#define LOOM_FRONTENDS_ONNX_ONNX_TEST_UTIL_H_

// What the ONNX importer's tests share: small ONNX models built in memory,
// attribute setters, and input tensors.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace loom {

// Builds small ONNX models in memory.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  ModelBuilder& Input(const std::string& name, int32_t elem_type,
                      const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_input(), name, elem_type, dims);
    return *this;
  }
  // A dim given as a name (symbolic) instead of a value.
  ModelBuilder& SymbolicInput(const std::string& name, const std::string& dim) {
    onnx::ValueInfoProto* info = model_.mutable_graph()->add_input();
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_param(dim);
    return *this;
  }
  // A float input whose dims are each a name (symbolic) or, written in
  // digits, a size: {"batch", "seq", "8"}.
  ModelBuilder& NamedDimsInput(const std::string& name, const std::vector<std::string>& dims) {
    onnx::ValueInfoProto* info = model_.mutable_graph()->add_input();
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    for (const std::string& dim : dims) {
      onnx::TensorShapeProto::Dimension* d = tensor->mutable_shape()->add_dim();
      if (!dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos) {
        d->set_dim_value(std::stoll(dim));
      } else {
        d->set_dim_param(dim);
      }
    }
    return *this;
  }
  ModelBuilder& Output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  ModelBuilder& TypedOutput(const std::string& name, int32_t elem_type,
                            const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_output(), name, elem_type, dims);
    return *this;
  }
  ModelBuilder& Initializer(const std::string& name, std::vector<int64_t> dims,
                            const std::vector<float>& values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    *t = FloatTensor(dims, values);
    t->set_name(name);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const std::string& input : inputs) node->add_input(input);
    for (const std::string& output : outputs) node->add_output(output);
    return *node;
  }

  const onnx::ModelProto& model() const { return model_; }
  onnx::ModelProto& model_for_test() { return model_; }

  static onnx::TensorProto FloatTensor(const std::vector<int64_t>& dims,
                                       const std::vector<float>& values) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t.add_dims(d);
    for (float v : values) t.add_float_data(v);
    return t;
  }
  static onnx::TensorProto IntTensor(const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& values) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t.add_dims(d);
    for (int64_t v : values) t.add_int64_data(v);
    return t;
  }

 private:
  static void SetType(onnx::ValueInfoProto* info, const std::string& name, int32_t elem_type,
                      const std::vector<int64_t>& dims) {
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }

  onnx::ModelProto model_;
};

inline void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

inline void SetAttr(onnx::NodeProto& node, const std::string& name,
                    const onnx::TensorProto& value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::TENSOR);
  *attr->mutable_t() = value;
}

inline void SetInts(onnx::NodeProto& node, const std::string& name,
                    const std::vector<int64_t>& values) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

inline void SetString(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(value);
}

inline Tensor Iota(Shape shape, double scale = 0.1) {
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.SetDouble(i, scale * static_cast<double>((i * 7) % 11) - 0.4);
  }
  return t;
}

inline std::vector<std::string> Ops(const Graph& graph) {
  std::vector<std::string> ops;
  for (const Node& node : graph.nodes()) ops.emplace_back(node.op);
  return ops;
}

inline Tensor I64(Shape shape, const std::vector<int64_t>& values) {
  Tensor t(DType::kI64, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetInt(i, values[i]);
  return t;
}

inline void IntInitializer(ModelBuilder& b, const std::string& name, std::vector<int64_t> dims,
                           const std::vector<int64_t>& values) {
  onnx::TensorProto* t = b.model_for_test().mutable_graph()->add_initializer();
  *t = ModelBuilder::IntTensor(dims, values);
  t->set_name(name);
}

}  // namespace loom

#endif  // LOOM_FRONTENDS_ONNX_ONNX_TEST_UTIL_H_
