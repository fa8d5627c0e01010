#ifndef LOOM_PASSES_PASS_H_
#define LOOM_PASSES_PASS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
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

// A pass's entry in a pipeline: its name and its options block, if any.
// Each pass owns its options message (e.g. proto::FuseOptions in
// scheduler/fuse_options.proto); a pipeline names the block after the
// field its registration gives ("fuse { outer_loop: true }").
struct PassSpec {
  std::string name;
  std::string options_field;                           // "" when there is no block
  const google::protobuf::Message* options = nullptr;  // the block, or null
};

// Builds a pass from its options: a message of the registration's
// options_type, its generated class (its defaults when the pipeline gives
// no block), or null for a pass that takes none. Bad options (e.g. an op the pass does not know)
// are an InvalidArgumentError here, so that they surface when the pipeline
// is loaded, never mid-run.
using PassFactory =
    std::function<absl::StatusOr<std::unique_ptr<Pass>>(const google::protobuf::Message* options)>;

struct PassRegistration {
  std::string name;  // stable kebab-case, e.g. "codegen-cpp"
  // The options block it takes: its field name in pipeline text ("cpp")
  // and its message type; "" and null when it takes none.
  std::string options_field;
  const google::protobuf::Descriptor* options_type = nullptr;
  PassFactory factory;
};

// The registration of a pass that takes no options; `make` builds it.
PassRegistration PassWithoutOptions(std::string name,
                                    std::function<absl::StatusOr<std::unique_ptr<Pass>>()> make);

// The registration of a pass whose options are an `Options` message, given
// in a pipeline as the block `options_field { ... }`; `make` builds it.
template <typename Options>
PassRegistration PassWithOptions(
    std::string name, std::string options_field,
    std::function<absl::StatusOr<std::unique_ptr<Pass>>(const Options&)> make) {
  // PassRegistry::Create passes only messages of this very type.
  PassFactory factory = [make = std::move(make)](const google::protobuf::Message* options) {
    return make(*google::protobuf::DynamicCastToGenerated<Options>(options));
  };
  return {std::move(name), std::move(options_field), Options::descriptor(), std::move(factory)};
}

// Every pass loom can run, by name. Passes register themselves with
// LOOM_REGISTER_PASS, so passes/ never names the libraries (backends, the
// scheduler) that add passes, nor their options.
class PassRegistry {
 public:
  // The registry that LOOM_REGISTER_PASS fills before main() runs.
  static PassRegistry& Global();

  // Fails on a duplicate or malformed name, or an options field that is
  // not a proto field name, is "name" or another pass's with another type.
  absl::Status Register(PassRegistration registration);

  // The registration for `name`, or an InvalidArgumentError that lists the
  // known names.
  absl::StatusOr<const PassRegistration*> Lookup(absl::string_view name) const;

  // Instantiates the pass `spec` names, after checking that its options
  // block (if any) is the one that pass accepts. Errors describe the cause;
  // callers add the place (file:line).
  absl::StatusOr<std::unique_ptr<Pass>> Create(const PassSpec& spec) const;

  // Registered names, sorted.
  std::vector<std::string> Names() const;

  // The options blocks a pipeline may hold: (field, message type) of every
  // registration that takes options, sorted by field, each once.
  std::vector<std::pair<std::string, const google::protobuf::Descriptor*>> OptionsFields() const;

 private:
  std::vector<PassRegistration> registrations_;
  // Failed registrations, reported by every Lookup: a static registrar has
  // no caller to return an error to.
  std::vector<std::string> registration_errors_;

  friend class PassRegistrar;
};

// Registers a pass with the global registry during static initialisation.
// Use through LOOM_REGISTER_PASS or LOOM_REGISTER_PASS_WITH_OPTIONS.
class PassRegistrar {
 public:
  explicit PassRegistrar(PassRegistration registration);
};

// Registers a pass in a .cc file:
//
//   LOOM_REGISTER_PASS("simplify", [] {
//     return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<SimplifyPass>());
//   });
//   LOOM_REGISTER_PASS_WITH_OPTIONS("fuse", "fuse", proto::FuseOptions,
//                                   [](const proto::FuseOptions& options) { ... });
//
// The library that holds the registration must be a cc_library with
// `alwayslink = 1`: nothing references the registrar object, so without it
// the linker drops the object file and the pass silently goes missing.
#define LOOM_REGISTER_PASS(name, make) \
  LOOM_REGISTER_PASS_IMPL(__COUNTER__, ::loom::PassWithoutOptions(name, make))
#define LOOM_REGISTER_PASS_WITH_OPTIONS(name, options_field, Options, make) \
  LOOM_REGISTER_PASS_IMPL(__COUNTER__, ::loom::PassWithOptions<Options>(name, options_field, make))
#define LOOM_REGISTER_PASS_IMPL(counter, registration) \
  LOOM_REGISTER_PASS_IMPL2(counter, registration)
#define LOOM_REGISTER_PASS_IMPL2(counter, registration) \
  static ::loom::PassRegistrar loom_pass_registrar_##counter(registration)

}  // namespace loom

#endif  // LOOM_PASSES_PASS_H_
