#ifndef LOOM_FRONTENDS_ONNX_ONNX_IMPORTER_H_
#define LOOM_FRONTENDS_ONNX_ONNX_IMPORTER_H_

// The ONNX frontend: an ONNX model (ModelProto) as a loom Graph.
//
// - Graph inputs become loom inputs; initializers become weights; Constant
//   nodes (and values computed from constants at import) become constants.
// - Every ONNX op maps onto loom ops (see onnx_ops_*.cc), names and
//   attributes per loom's op conventions. Operands that ONNX passes as
//   tensors but loom needs at compile time (shapes, axes, pads, split sizes,
//   repeats, clip bounds, ...) must be known at import: an initializer, a
//   Constant, or computed from them. Indices of Gather, GatherElements,
//   ScatterElements and ScatterND may be graph inputs: the kernels check
//   them as they run, and a run on an index out of range fails naming the
//   node and the index. Shape computations
//   (Shape, Size, Range, ConstantOfShape and arithmetic on their results)
//   are folded at import with loom's reference interpreter.
// - Optional inputs absent in the middle of a recurrence's input list are
//   materialised (zeros, or full sequence lengths); unused optional outputs
//   get fresh names.
// - Control flow is resolved at import: If imports the branch its known
//   condition takes (or both, selected with `where`), Loop and Scan are
//   unrolled; sequences and optionals are held as their structure, known
//   at import, and flattened at the graph's boundary (StructuredInput).
// - Shapes are static: every input dim must be known (or given through
//   OnnxImportOptions::input_shapes or, for named dims, ::dims; a named
//   dim takes one size in every input that has it, within ::dim_bounds),
//   and each node's output types are inferred as it is added. Graph
//   outputs whose type the model declares must match loom's inferred type.
//
// Anything loom cannot run exactly (an op outside its set, an attribute it
// does not understand, a dtype other than FLOAT, DOUBLE, INT32, INT64 and
// BOOL, a dynamic dim, an operand that must be constant but is not) is an
// InvalidArgument error that names the node, never a crash or a silently
// different result. Names from the model are only stored in the Graph;
// loom's code generation never prints them.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/named_dims.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace loom {

// The named dims' options (NamedDimOptions: input_shapes, dims,
// dim_bounds) are for the graph's inputs.
struct OnnxImportOptions : NamedDimOptions {
  // Values of graph inputs, by name. The importer uses one only where the
  // model needs that input's data at compile time (a Reshape's target
  // shape fed as a graph input, as ONNX's node tests do); such an input
  // then becomes a constant and leaves the graph's inputs. Other inputs
  // stay inputs even when they have a value here.
  absl::flat_hash_map<std::string, Tensor> bound_inputs;
  // The structure of graph inputs that are sequences or optionals, by name
  // (a model declares their element type only): whether an optional holds
  // a value, and the shapes of a sequence's elements (or of an optional's
  // one tensor). Such an input is flattened into loom inputs: a sequence's
  // elements (or an optional's sequence's) named SequenceElementName(name,
  // k), an optional's tensor named `name`; an empty optional has none.
  // Graph outputs are flattened alike.
  struct StructuredInput {
    bool present = true;
    std::vector<Shape> elements;
  };
  absl::flat_hash_map<std::string, StructuredInput> structured_inputs;
  // The folder that initializers' external data files are in (the model's;
  // LoadOnnxFile sets it). Empty: a model with external data is refused.
  std::string external_data_dir;
};

// The loom input or output that holds element `index` of sequence `name`:
// "name[index]".
std::string SequenceElementName(absl::string_view name, int64_t index);

absl::StatusOr<Graph> ImportOnnxModel(const onnx::ModelProto& model,
                                      const OnnxImportOptions& options = {});

// Reads and imports a binary .onnx file. Errors name the path.
// The files that hold the external data of the ONNX model at `path`
// (external_data locations, relative to its folder), each once: what must
// go with the model where it is copied.
absl::StatusOr<std::vector<std::string>> OnnxExternalDataFiles(const std::string& path);

// The names of the dims of the ONNX model's graph inputs and outputs at
// `path`, by value name: each dim's dim_param, "" where it has none.
absl::StatusOr<absl::flat_hash_map<std::string, std::vector<std::string>>> OnnxDimNames(
    const std::string& path);

absl::StatusOr<Graph> LoadOnnxFile(const std::string& path, const OnnxImportOptions& options = {});

// Reads a binary .onnx file into its proto.
absl::StatusOr<onnx::ModelProto> ReadOnnxModelFile(const std::string& path);

}  // namespace loom

#endif  // LOOM_FRONTENDS_ONNX_ONNX_IMPORTER_H_
