#ifndef LOOM_PASSES_DECOMPOSE_H_
#define LOOM_PASSES_DECOMPOSE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/decompose_options.pb.h"
#include "passes/pass.h"

namespace loom {

class DecompositionBuilder;

// Appends primitive nodes computing `node` to the builder. Errors describe
// the cause; the pass adds the node's name and op.
using DecomposeFn = absl::Status (*)(const Node& node, DecompositionBuilder& builder);

// "decompose": replaces composite ops with primitives (docs/how-it-compiles.md,
// From the graph to loop IR), e.g. softmax(x) into reduce_max, sub, exp,
// reduce_sum and div. Each replacement writes the original node's output
// values, so consumers and graph outputs are untouched. The graph must be
// typed (as it is between passes): afterwards the new nodes' shapes are
// inferred, and the whole graph's again only if a composite's output
// changed type. A decomposition may emit composite ops: those are
// decomposed in turn (by any decomposition, selected or not) until only
// primitives are left.
class DecomposePass : public Pass {
 public:
  // Decomposes the ops in `options.ops`, or every op it knows when empty.
  // An op it does not know is an InvalidArgumentError naming it.
  static absl::StatusOr<std::unique_ptr<DecomposePass>> Create(
      const proto::DecomposeOptions& options);

  // Decomposes the ops in `selected`, and the composite ops their
  // decompositions emit with `all` (Create passes every known one).
  DecomposePass(absl::flat_hash_map<std::string, DecomposeFn> selected,
                absl::flat_hash_map<std::string, DecomposeFn> all)
      : selected_(std::move(selected)), all_(std::move(all)) {}

  absl::StatusOr<bool> Run(Module& module) override;
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kGraph); }

 private:
  // The decomposition of `op` in `table`, or null.
  static DecomposeFn Find(const absl::flat_hash_map<std::string, DecomposeFn>& table,
                          absl::string_view op);

  absl::flat_hash_map<std::string, DecomposeFn> selected_;
  absl::flat_hash_map<std::string, DecomposeFn> all_;
};

// The ops decompose knows, sorted.
std::vector<std::string> DecomposableOps();

}  // namespace loom

#endif  // LOOM_PASSES_DECOMPOSE_H_
