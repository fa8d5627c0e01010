#ifndef LOOM_IR_MODULE_H_
#define LOOM_IR_MODULE_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Source code a backend emitted for a schedule.
struct GeneratedSource {
  std::string language;       // "c++" or "cuda"
  std::string text;
  std::string entry;          // the function that runs the whole schedule
  int kernel_functions = 0;   // distinct kernel functions in `text`
  // Flags the backend's native compiler must use for `text` (optimisation
  // level, target ISA, OpenMP), chosen by the codegen pass's options.
  std::vector<std::string> native_flags;
};

// Everything a pipeline's passes read and write. Each stage fills in its
// part: graph passes rewrite `graph`, lowering sets `loops`, the scheduler
// `schedule` and a backend's codegen `source`.
struct Module {
  Graph graph;
  std::optional<LoopProgram> loops;
  std::optional<Schedule> schedule;
  std::optional<GeneratedSource> source;
};

}  // namespace loom

#endif  // LOOM_IR_MODULE_H_
