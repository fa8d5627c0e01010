#include "frontends/onnx/onnx_subgraph.h"

#include <utility>

#include "frontends/onnx/onnx_ops.h"

namespace loom::onnx_import {
namespace {

// The names `graph` defines itself: inputs, initializers, node outputs.
absl::flat_hash_set<std::string> DefinedNames(const onnx::GraphProto& graph) {
  absl::flat_hash_set<std::string> names;
  for (const onnx::ValueInfoProto& input : graph.input()) names.insert(input.name());
  for (const onnx::TensorProto& init : graph.initializer()) names.insert(init.name());
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& output : node.output()) names.insert(output);
  }
  return names;
}

int64_t IntAttr(const onnx::NodeProto& node, const std::string& name, int64_t default_value) {
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == name) return attr.i();
  }
  return default_value;
}

// Adds to `wanted` what a node holding graphs needs for its wanted outputs:
// each graph's wanted values read from the enclosing scope, and the node
// inputs that feed its wanted inputs.
void AddGraphNeeds(const onnx::NodeProto& node, bool if_conditions,
                   absl::flat_hash_set<std::string>& wanted) {
  std::vector<bool> node_outputs_wanted;
  for (const std::string& output : node.output()) {
    node_outputs_wanted.push_back(!output.empty() && wanted.contains(output));
  }
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (!attr.has_g()) continue;
    const onnx::GraphProto& body = attr.g();
    const std::vector<bool> outputs_wanted =
        WantedBodyOutputs(node, body, node_outputs_wanted, if_conditions);
    absl::flat_hash_set<std::string> roots;
    for (int k = 0; k < body.output_size(); ++k) {
      if (outputs_wanted[k]) roots.insert(body.output(k).name());
    }
    const absl::flat_hash_set<std::string> inner =
        WantedAtImport(body, std::move(roots), if_conditions);
    const absl::flat_hash_set<std::string> defined = DefinedNames(body);
    for (const std::string& name : inner) {
      if (!defined.contains(name)) wanted.insert(name);
    }
    const BodyPorts ports = PortsOf(node, body);
    for (int k = 0; k < body.input_size(); ++k) {
      const int i = ports.node_input[k];
      if (i >= 0 && i < node.input_size() && !node.input(i).empty() &&
          inner.contains(body.input(k).name())) {
        wanted.insert(node.input(i));
      }
    }
  }
}

}  // namespace

bool HasGraphAttr(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.has_g() || attr.graphs_size() > 0) return true;
  }
  return false;
}

BodyPorts PortsOf(const onnx::NodeProto& node, const onnx::GraphProto& body) {
  BodyPorts ports;
  const int inputs = body.input_size(), outputs = body.output_size();
  ports.node_input.assign(inputs, -1);
  ports.node_output.assign(outputs, -1);
  ports.carried.assign(outputs, -1);
  if (node.op_type() == "Loop") {
    // Inputs (iteration, condition, carried...), outputs (condition,
    // carried..., scanned...); the node's: (M, condition, carried...) and
    // (carried..., scanned...).
    for (int k = 1; k < inputs; ++k) ports.node_input[k] = k;
    for (int k = 1; k < outputs; ++k) ports.node_output[k] = k - 1;
    for (int k = 0; k < outputs && k + 1 < inputs; ++k) ports.carried[k] = k + 1;
  } else if (node.op_type() == "Scan") {
    // Inputs (states..., scan slices...), outputs (states..., scan
    // slices...); opset 8's node has sequence_lens first.
    const int offset = node.input_size() - inputs;
    const int states = inputs - static_cast<int>(IntAttr(node, "num_scan_inputs", 0));
    for (int k = 0; k < inputs; ++k) ports.node_input[k] = k + offset;
    for (int k = 0; k < outputs; ++k) ports.node_output[k] = k;
    for (int k = 0; k < outputs && k < states && k < inputs; ++k) ports.carried[k] = k;
  } else {
    // If's branches: outputs only; SequenceMap's body: one to one.
    for (int k = 0; k < inputs; ++k) ports.node_input[k] = k;
    for (int k = 0; k < outputs; ++k) ports.node_output[k] = k;
  }
  return ports;
}

std::vector<bool> WantedBodyOutputs(const onnx::NodeProto& node, const onnx::GraphProto& body,
                                    const std::vector<bool>& node_outputs_wanted,
                                    bool if_conditions) {
  const BodyPorts ports = PortsOf(node, body);
  std::vector<bool> wanted(body.output_size(), false);
  for (int k = 0; k < body.output_size(); ++k) {
    const int o = ports.node_output[k];
    wanted[k] =
        o < 0 || (o < static_cast<int>(node_outputs_wanted.size()) && node_outputs_wanted[o]);
  }
  // A carried value wanted in the body is wanted from the iteration before.
  for (bool changed = true; changed;) {
    changed = false;
    absl::flat_hash_set<std::string> roots;
    for (int k = 0; k < body.output_size(); ++k) {
      if (wanted[k]) roots.insert(body.output(k).name());
    }
    const absl::flat_hash_set<std::string> inner =
        WantedAtImport(body, std::move(roots), if_conditions);
    for (int k = 0; k < body.output_size(); ++k) {
      const int next = ports.carried[k];
      if (!wanted[k] && next >= 0 && inner.contains(body.input(next).name())) {
        wanted[k] = changed = true;
      }
    }
  }
  return wanted;
}

absl::flat_hash_set<std::string> WantedAtImport(const onnx::GraphProto& graph,
                                                absl::flat_hash_set<std::string> wanted,
                                                bool if_conditions) {
  for (int n = graph.node_size() - 1; n >= 0; --n) {
    const onnx::NodeProto& node = graph.node(n);
    std::vector<int> roots = StaticOperands(node.op_type());
    if (if_conditions && node.op_type() == "If") roots.push_back(0);
    for (int i : roots) {
      if (i < node.input_size() && !node.input(i).empty()) wanted.insert(node.input(i));
    }
    if (HasGraphAttr(node)) {
      AddGraphNeeds(node, if_conditions, wanted);
      continue;
    }
    if (ReadsOnlyTypes(node.op_type())) continue;
    bool output_wanted = false;
    for (const std::string& output : node.output()) {
      output_wanted = output_wanted || wanted.contains(output);
    }
    if (!output_wanted) continue;
    for (const std::string& input : node.input()) {
      if (!input.empty()) wanted.insert(input);
    }
  }
  return wanted;
}

}  // namespace loom::onnx_import
