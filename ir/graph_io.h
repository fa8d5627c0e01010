#ifndef LOOM_IR_GRAPH_IO_H_
#define LOOM_IR_GRAPH_IO_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "ir/graph.pb.h"
#include "ir/named_dims.h"

namespace loom {

// Parses the graph text form. Errors read "FILE:LINE:COL: cause".
absl::StatusOr<proto::Graph> ParseGraphText(absl::string_view text, absl::string_view filename);

// Builds the C++ graph from its proto: resolves value names, orders nodes
// topologically (a cycle is an error naming its nodes), materialises
// initializers, infers shapes and verifies. Errors name FILE and the node.
absl::StatusOr<Graph> GraphFromProto(const proto::Graph& graph_proto, absl::string_view filename);

// Reads a model file (.pbtxt) into a verified graph, its named dims
// (Input::dim_names) given sizes by `options` (BindNamedDims). Errors name
// the path.
absl::StatusOr<Graph> LoadGraphFile(const std::string& path, const NamedDimOptions& options = {});
// The graph text proto in the file at `path`, as it is.
absl::StatusOr<proto::Graph> LoadGraphProto(const std::string& path);

// Whether the graph's inputs have named dims or its attributes are
// computed from them (Attribute::i_expr, ints_expr).
bool HasNamedDims(const proto::Graph& g);
// The graph with its named dims' sizes (options.dims, or read from
// options.input_shapes) in its inputs' shapes and its computed attributes
// evaluated. Inputs that disagree on a dim, a size outside its bounds, a
// named dim without a size or an attribute reading one is an
// InvalidArgumentError naming the input or node, the dim and the size.
absl::StatusOr<proto::Graph> BindNamedDims(proto::Graph g, const NamedDimOptions& options);
// The names of each graph input's dims, by input name: "" where static.
absl::flat_hash_map<std::string, std::vector<std::string>> GraphDimNames(const proto::Graph& g);

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
