// OpRegistry::Global(): every op family, registered explicitly (no static
// initialisers), in a fixed order so that Names() is deterministic.
#include <cstdio>
#include <cstdlib>

#include "ir/op_registry.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

absl::Status RegisterAllFamilies(OpRegistry& registry) {
  for (auto* register_family :
       {RegisterElementwiseOps, RegisterReductionOps, RegisterShapeOps, RegisterMatmulOps,
        RegisterSoftmaxOps, RegisterActivationOps, RegisterTensorOps, RegisterNormOps,
        RegisterRecurrentOps, RegisterConvOps, RegisterResizeOps, RegisterInverseTrigOps,
        RegisterLrnOps, RegisterSequenceOps, RegisterEinsumOps}) {
    LOOM_RETURN_IF_ERROR(register_family(registry));
  }
  return absl::OkStatus();
}

}  // namespace

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* const registry = [] {
    auto* built = new OpRegistry;
    absl::Status status = RegisterAllFamilies(*built);
    if (!status.ok()) {
      // The built-in op table is fixed at compile time: a failure here is a
      // bug in loom (a duplicate op), not bad input, and every test sees it.
      std::fprintf(stderr, "loom: building the op registry failed: %s\n",
                   status.ToString().c_str());
      std::abort();
    }
    return built;
  }();
  return *registry;
}

}  // namespace loom
