#ifndef LOOM_IR_NAMED_DIMS_H_
#define LOOM_IR_NAMED_DIMS_H_

// Named dims of a model's inputs ('batch', 'sequence_length': ONNX's
// dim_param, a loom graph input's dim_names) and the sizes a compile gives
// them: what both model formats' importers share.

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/tensor.h"

namespace loom {

// The sizes a named dim may take, min..max.
struct DimBounds {
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
};

// Sizes of named dims, by name.
using NamedSizes = absl::flat_hash_map<std::string, int64_t>;

// Where each named dim occurs in a model's inputs: (input, dim) pairs, by name.
using NamedDimUses = absl::btree_map<std::string, std::vector<std::pair<std::string, int>>>;

// What a compile gives the named dims of a model's inputs.
struct NamedDimOptions {
  // Shapes for inputs whose declared shape has named or unknown dims, by
  // input name.
  absl::flat_hash_map<std::string, Shape> input_shapes;
  // Sizes of named dims, for every input that has them and no shape in
  // input_shapes. Each name must be a named dim of some input.
  NamedSizes dims;
  // Bounds of named dims, by name: the size a named dim takes, from `dims`
  // or from an input's shape in `input_shapes`, must lie within them (a
  // serving setup's limits). Each name must be a named dim of some input.
  absl::flat_hash_map<std::string, DimBounds> dim_bounds;
};

// The size of each named dim in `uses` that has one: given in options.dims,
// or read from the shape options.input_shapes gives an input that has the
// dim. Every input sharing a named dim must give it the same size, and each
// size must lie within the dim's bounds; a name given a size or bounds must
// be one of `uses`. The errors name the input, the dim and the size or bound.
absl::StatusOr<NamedSizes> ResolveNamedDims(const NamedDimUses& uses,
                                            const NamedDimOptions& options);

// The error for dim `d` of `what` (an input), the named dim `name`, which
// has no size: what to give.
absl::Status NamedDimWithoutSize(absl::string_view what, int d, absl::string_view name);

// The value of an integer expression of named dims (a size a loom graph
// computes from them, e.g. "s0*12 + 1"): integers, names, + - * and // (floor
// division) and % (its remainder), unary minus, parentheses, max(a, b, ...)
// and min(...). A name without a size, a malformed expression, a division by
// zero or an overflow is an InvalidArgumentError saying which.
absl::StatusOr<int64_t> EvaluateDimExpr(absl::string_view expr, const NamedSizes& sizes);

}  // namespace loom

#endif  // LOOM_IR_NAMED_DIMS_H_
