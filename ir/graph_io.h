#ifndef LOOM_IR_GRAPH_IO_H_
#define LOOM_IR_GRAPH_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "ir/graph.pb.h"

namespace loom {

// Parses the graph text form. Errors read "FILE:LINE:COL: cause".
absl::StatusOr<proto::Graph> ParseGraphText(absl::string_view text, absl::string_view filename);

// Builds the C++ graph from its proto: resolves value names, orders nodes
// topologically (a cycle is an error naming its nodes), materialises
// initializers, infers shapes and verifies. Errors name FILE and the node.
absl::StatusOr<Graph> GraphFromProto(const proto::Graph& graph_proto, absl::string_view filename);

// Reads a model file (.pbtxt) into a verified graph. Errors name the path.
absl::StatusOr<Graph> LoadGraphFile(const std::string& path);

// The proto form of a graph, initializers as inline values.
proto::Graph GraphToProto(const Graph& graph);
// The text form of a graph proto, with repeated numbers on one line
// (`shape: [2, 32]`).
std::string GraphProtoToText(const proto::Graph& graph_proto);
// GraphToProto printed as GraphProtoToText does.
std::string GraphToText(const Graph& graph);

// An initializer's data: inline values (one value broadcasts), a seeded
// random init, which gives the same values on every machine, or bytes in an
// external file (relative to the folder of `model_path`).
absl::StatusOr<Tensor> MaterializeInitializer(const proto::Initializer& init,
                                              absl::string_view model_path = "");

}  // namespace loom

#endif  // LOOM_IR_GRAPH_IO_H_
