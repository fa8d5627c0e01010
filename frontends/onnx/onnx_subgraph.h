#ifndef LOOM_FRONTENDS_ONNX_ONNX_SUBGRAPH_H_
#define LOOM_FRONTENDS_ONNX_ONNX_SUBGRAPH_H_

// What the importer knows about graphs that nodes hold as attributes (If's
// branches, Loop's and Scan's bodies): how values pass between a node and
// its graph, and which values loom wants known at import, through nested
// graphs too. Internal to frontends/onnx.

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "onnx/onnx_pb.h"

namespace loom::onnx_import {

// Whether `node` holds a graph attribute.
bool HasGraphAttr(const onnx::NodeProto& node);

// How values pass between a node and a graph it holds, by position; -1
// where none does.
struct BodyPorts {
  // Body input k is node input node_input[k] (-1: Loop's iteration number).
  std::vector<int> node_input;
  // Body output k is node output node_output[k] (-1: Loop's condition).
  std::vector<int> node_output;
  // Body output k becomes body input carried[k] on the next iteration.
  std::vector<int> carried;
};
BodyPorts PortsOf(const onnx::NodeProto& node, const onnx::GraphProto& body);

// The values of `graph` that loom wants known at import: `wanted`, the
// static operands of its nodes (StaticOperands) and, with `if_conditions`,
// If's conditions (an If whose condition is known imports one branch);
// then everything they are computed from, except through ops that read
// only their input's type (Shape). Through nested graphs too: the result
// includes the names a graph reads from its enclosing scopes.
absl::flat_hash_set<std::string> WantedAtImport(const onnx::GraphProto& graph,
                                                absl::flat_hash_set<std::string> wanted,
                                                bool if_conditions);

// Which outputs of `body`, a graph of `node`, loom wants known at import
// when it wants the node's outputs `node_outputs_wanted`: those, Loop's
// condition, and a loop-carried value whose next iteration's input is
// wanted.
std::vector<bool> WantedBodyOutputs(const onnx::NodeProto& node, const onnx::GraphProto& body,
                                    const std::vector<bool>& node_outputs_wanted,
                                    bool if_conditions);

}  // namespace loom::onnx_import

#endif  // LOOM_FRONTENDS_ONNX_ONNX_SUBGRAPH_H_
