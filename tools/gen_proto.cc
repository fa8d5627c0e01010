#include "tools/gen_proto.h"

#include <utility>

#include "ir/random.h"

namespace loom::gen {

void SetF32Type(const std::vector<int64_t>& shape, proto::TensorType* type) {
  type->set_dtype(proto::F32);
  for (int64_t dim : shape) type->add_shape(dim);
}

void AddInput(const std::string& name, const std::vector<int64_t>& shape, proto::Graph& graph) {
  proto::Input* input = graph.add_input();
  input->set_name(name);
  SetF32Type(shape, input->mutable_type());
}

void AddRandomWeight(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed,
                     double low, double high, proto::Graph& graph) {
  proto::Initializer* weight = graph.add_weight();
  weight->set_name(name);
  SetF32Type(shape, weight->mutable_type());
  proto::RandomInit* init = weight->mutable_random();
  init->set_seed(seed);
  init->set_low(low);
  init->set_high(high);
}

proto::Node* AddNode(std::string name, std::string op, std::vector<std::string> inputs,
                     std::string output, proto::Graph& graph) {
  proto::Node* node = graph.add_node();
  node->set_name(std::move(name));
  node->set_op(std::move(op));
  for (std::string& input : inputs) node->add_input(std::move(input));
  node->add_output(std::move(output));
  return node;
}

void SetIntAttr(absl::string_view name, int64_t value, proto::Node* node) {
  proto::Attribute* attr = node->add_attr();
  attr->set_name(std::string(name));
  attr->set_i(value);
}

void SetIntsAttr(absl::string_view name, absl::Span<const int64_t> values, proto::Node* node) {
  proto::Attribute* attr = node->add_attr();
  attr->set_name(std::string(name));
  for (int64_t v : values) attr->mutable_ints()->add_v(v);
}

void SetStringAttr(absl::string_view name, absl::string_view value, proto::Node* node) {
  proto::Attribute* attr = node->add_attr();
  attr->set_name(std::string(name));
  attr->set_s(std::string(value));
}

uint64_t DeriveSeed(uint64_t seed, uint64_t index) { return SplitMix64(SplitMix64(seed) + index); }

}  // namespace loom::gen
