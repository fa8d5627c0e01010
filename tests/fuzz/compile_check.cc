#include "tests/fuzz/compile_check.h"

#include <string>
#include <utility>

#include "compiler/driver.h"
#include "tests/fuzz/fuzz_util.h"

namespace loom {
namespace fuzz {

void CompileAndCheck(Graph graph, absl::string_view model) {
  CompileOptions options;
  options.model = std::string(model);
  options.pipeline = "cpu";
  options.native_compile = false;
  options.verify_each = true;
  absl::StatusOr<CompiledModel> compiled = CompileGraph(std::move(graph), options);
  CheckUserError(compiled.status(), "CompileGraph");
}

}  // namespace fuzz
}  // namespace loom
