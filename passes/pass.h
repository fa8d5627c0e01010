#ifndef LOOM_PASSES_PASS_H_
#define LOOM_PASSES_PASS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/module.h"
#include "ir/pipeline.pb.h"

namespace loom {

// The stages a module goes through, in pipeline order: the graph (imported,
// then decomposed and simplified), loop IR (lowered), a schedule of one
// node per kernel, the fused schedule, a memory plan, emitted source.
enum class Stage : uint8_t { kGraph, kLoops, kScheduled, kFused, kPlanned, kEmitted };
constexpr int kNumStages = 6;
// E.g. "the graph", "a fused schedule".
const char* StageName(Stage stage);

// Where a pass may run in a pipeline, checked when the pipeline loads
// (passes/pass_manager.h): the stages it runs on, the stage it leaves, and
// the target its output is for.
struct StageRule {
  static constexpr uint32_t kAnyStage = (1u << kNumStages) - 1;
  uint32_t runs_on = kAnyStage;                      // a bit per Stage
  std::optional<Stage> leaves;                       // none: the stage it found
  proto::Target target = proto::TARGET_UNSPECIFIED;  // unspecified: any

  static constexpr uint32_t Bit(Stage stage) { return 1u << static_cast<int>(stage); }
  // Runs on `from` only and leaves `to`.
  static StageRule From(Stage from, Stage to) { return {Bit(from), to}; }
};

// One step of a pipeline. A pass reads and rewrites the parts of the Module
// its stage owns. The pass manager (passes/pass_manager.h) owns the shared
// work: verification after each pass, timing and dumps.
class Pass {
 public:
  virtual ~Pass();
  // Returns true when the pass changed the IR.
  virtual absl::StatusOr<bool> Run(Module& module) = 0;
  // Where the pass may run; by default anywhere, leaving the stage as it was
  // (verification).
  virtual StageRule stages() const { return {}; }
  // Its name in the registry (and in pipelines), once the registry made it.
  const std::string& name() const { return name_; }

 private:
  friend class PassRegistry;
  std::string name_;
};

// Builds a pass from its pipeline entry. Bad options (e.g. an op the pass
// does not know) are an InvalidArgumentError here, so that they surface when
// the pipeline is loaded, never mid-run.
using PassFactory =
    std::function<absl::StatusOr<std::unique_ptr<Pass>>(const proto::PassSpec& spec)>;

struct PassRegistration {
  std::string name;           // stable kebab-case, e.g. "codegen-cpp"
  std::string options_field;  // the PassSpec options field it accepts, or ""
  PassFactory factory;
};

// Every pass loom can run, by name. Passes register themselves with
// LOOM_REGISTER_PASS, so passes/ never names the libraries (backends, the
// scheduler) that add passes.
class PassRegistry {
 public:
  // The registry that LOOM_REGISTER_PASS fills before main() runs.
  static PassRegistry& Global();

  // Fails on a duplicate name or an options field PassSpec does not have.
  absl::Status Register(PassRegistration registration);

  // The registration for `name`, or an InvalidArgumentError that lists the
  // known names.
  absl::StatusOr<const PassRegistration*> Lookup(absl::string_view name) const;

  // Instantiates the pass `spec` names, after checking that its options
  // block (if any) is the one that pass accepts. Errors describe the cause;
  // callers add the place (file:line).
  absl::StatusOr<std::unique_ptr<Pass>> Create(const proto::PassSpec& spec) const;

  // Registered names, sorted.
  std::vector<std::string> Names() const;

 private:
  std::vector<PassRegistration> registrations_;
  // Failed registrations, reported by every Lookup: a static registrar has
  // no caller to return an error to.
  std::vector<std::string> registration_errors_;

  friend class PassRegistrar;
};

// Registers a pass with the global registry during static initialisation.
// Use through LOOM_REGISTER_PASS.
class PassRegistrar {
 public:
  PassRegistrar(std::string name, std::string options_field, PassFactory factory);
};

// Registers a pass in a .cc file:
//
//   LOOM_REGISTER_PASS("simplify", "", [](const proto::PassSpec&) {
//     return absl::StatusOr<std::unique_ptr<Pass>>(
//         std::make_unique<SimplifyPass>());
//   });
//
// The library that holds the registration must be a cc_library with
// `alwayslink = 1`: nothing references the registrar object, so without it
// the linker drops the object file and the pass silently goes missing.
#define LOOM_REGISTER_PASS(name, options_field, factory) \
  LOOM_REGISTER_PASS_IMPL(__COUNTER__, name, options_field, factory)
#define LOOM_REGISTER_PASS_IMPL(counter, name, options_field, factory) \
  LOOM_REGISTER_PASS_IMPL2(counter, name, options_field, factory)
#define LOOM_REGISTER_PASS_IMPL2(counter, name, options_field, factory) \
  static ::loom::PassRegistrar loom_pass_registrar_##counter(name, options_field, factory)

}  // namespace loom

#endif  // LOOM_PASSES_PASS_H_
