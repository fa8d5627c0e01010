#ifndef LOOM_TOOLS_GEN_PROTO_H_
#define LOOM_TOOLS_GEN_PROTO_H_

// The graph-proto building blocks of the model generators (tools/gen.cc,
// tools/random_graph.cc).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.pb.h"

namespace loom::gen {

// Sets `type` to f32 of `shape`.
void SetF32Type(const std::vector<int64_t>& shape, proto::TensorType* type);

// Adds an f32 graph input.
void AddInput(const std::string& name, const std::vector<int64_t>& shape, proto::Graph& graph);

// Adds an f32 initializer uniform in [low, high) from `seed`.
void AddRandomWeight(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed,
                     double low, double high, proto::Graph& graph);

// Adds a node with one output and returns it.
proto::Node* AddNode(std::string name, std::string op, std::vector<std::string> inputs,
                     std::string output, proto::Graph& graph);

void SetIntAttr(absl::string_view name, int64_t value, proto::Node* node);
void SetIntsAttr(absl::string_view name, absl::Span<const int64_t> values, proto::Node* node);
void SetStringAttr(absl::string_view name, absl::string_view value, proto::Node* node);

// A seed for the `index`-th initializer of a model generated from `seed`.
uint64_t DeriveSeed(uint64_t seed, uint64_t index);

}  // namespace loom::gen

#endif  // LOOM_TOOLS_GEN_PROTO_H_
