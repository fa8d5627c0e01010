#ifndef LOOM_RUNTIME_LOOM_C_INTERNAL_H_
#define LOOM_RUNTIME_LOOM_C_INTERNAL_H_

// What the C interface's two halves (loom_c.cc, the runtime's; and
// loom_c_compile.cc, the compiler's) share.

#include <functional>

#include "absl/status/status.h"
#include "runtime/loom_c.h"
#include "runtime/model.h"

struct loom_model {
  loom::Model model;
  // The reference interpreter on the model as imported (compiled models
  // only; loom_model_reference_run).
  std::function<loom_status(const loom_input*, int, const loom_output*, int)> reference;
};

namespace loom_c {

// `status` as a loom_status, its message kept for loom_last_error().
loom_status Report(const absl::Status& status);

}  // namespace loom_c

#endif  // LOOM_RUNTIME_LOOM_C_INTERNAL_H_
