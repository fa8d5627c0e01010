#ifndef LOOM_PASSES_PASS_MANAGER_H_
#define LOOM_PASSES_PASS_MANAGER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "ir/module.h"
#include "ir/pipeline.pb.h"
#include "passes/pass.h"

namespace loom {

// A pipeline whose every pass exists and accepted its options: running it
// can fail only inside a pass or in verification.
struct LoadedPipeline {
  struct Entry {
    std::string name;
    std::unique_ptr<Pass> pass;
    // Its options block as the pipeline gave it, of the pass's own options
    // type (e.g. proto::FuseOptions); null when it gave none.
    std::unique_ptr<google::protobuf::Message> options;
  };

  std::string name;  // the built-in name or the file path
  std::string text;  // what it was loaded from, before the overrides
  proto::Target target = proto::TARGET_UNSPECIFIED;
  std::vector<Entry> passes;  // in pipeline order
};

// Options for one pass that replace the pipeline's: `options` is one
// options block in pipeline text (`cpp { march: "armv8-a" }`), merged into
// the block of every entry of the pass named `pass` (a field it sets
// replaces the pipeline's value; a repeated field's values are appended).
struct PassOptionsOverride {
  std::string pass;
  std::string options;
};

// Parses a pipeline text proto, applies `overrides` and instantiates its
// passes from the global PassRegistry. Every error names the place:
// "FILE:LINE:COL: cause" for malformed text and unknown option fields,
// "FILE:LINE: cause" for an unknown pass, an options block that pass does
// not take, bad option values and a missing target, and "FILE: empty
// pipeline" when there is no pass; "override of pass 'NAME'..." for an
// override of a pass the pipeline lacks or one that does not parse.
absl::StatusOr<LoadedPipeline> LoadPipelineText(
    absl::string_view text, absl::string_view filename,
    const std::vector<PassOptionsOverride>& overrides = {});

// Reads and loads a pipeline file. A missing file is an error naming `path`.
absl::StatusOr<LoadedPipeline> LoadPipelineFile(
    const std::string& path, const std::vector<PassOptionsOverride>& overrides = {});

// Loads a built-in pipeline (pipelines/<name>.pbtxt, embedded in the binary)
// when `name_or_path` has no '/' and does not end in ".pbtxt"; otherwise a
// file. An unknown built-in name is an error that lists the built-in names.
absl::StatusOr<LoadedPipeline> LoadPipeline(const std::string& name_or_path,
                                            const std::vector<PassOptionsOverride>& overrides = {});

struct PassRun {
  std::string name;
  double seconds = 0;
  bool changed = false;
  int64_t peak_resident_bytes = 0;  // of the process, at the end of the pass
};

// Watches a pipeline's run: RunPipeline calls every instrumentation before
// and after each pass (as MLIR's PassInstrumentation and XLA's pass
// pipeline hooks). An error from one stops the run with that error.
// `position` is the pass's 1-based place in the pipeline.
class PassInstrumentation {
 public:
  virtual ~PassInstrumentation() = default;
  virtual absl::Status BeforePass(absl::string_view pass, int position, const Module& module) {
    return absl::OkStatus();
  }
  virtual absl::Status AfterPass(const PassRun& run, int position, const Module& module) {
    return absl::OkStatus();
  }
};

// Fails a pass that changed the module but returned changed = false (a
// pass that says it changed nothing is trusted by what runs after it, e.g.
// verification). It compares the text of every stage before and after each
// pass, which costs as much as printing the module twice: for tests.
class ChangedFlagCheck : public PassInstrumentation {
 public:
  absl::Status BeforePass(absl::string_view pass, int position, const Module& module) override;
  absl::Status AfterPass(const PassRun& run, int position, const Module& module) override;

 private:
  std::string before_;
};

struct RunOptions {
  // Verify the graph (and the loop program, once there is one) after every
  // pass that changed the module.
  bool verify_each = true;
  // Dump the IR after each pass whose name fully matches this re2 pattern
  // (empty: none) into `dump_dir`, as "<NN>-<pass>.txt" where NN is the
  // pass's 1-based position in the pipeline. A dump holds the most advanced
  // stage present: generated source, else the schedule, else the loop
  // program, else the graph.
  std::string dump_after;
  std::string dump_dir;
  // Called with each pass's name before it runs (a progress line).
  std::function<void(absl::string_view pass)> before_pass;
  // More instrumentations (not owned), after the built-in ones: the
  // progress call, verification and dumps, in that order. The manager
  // times each pass itself: its seconds and peak memory are in the PassRun
  // that every AfterPass gets.
  std::vector<PassInstrumentation*> instrumentations;
};

// The process's peak resident memory so far, in bytes.
int64_t PeakResidentBytes();

// Runs the passes in order on `module`, timing each. Errors read
// "pass 'NAME' failed: <cause>" (the pass's own status code) or
// "verification failed after pass 'NAME': <cause>" (an InternalError: a pass
// broke the IR).
absl::StatusOr<std::vector<PassRun>> RunPipeline(LoadedPipeline& pipeline, Module& module,
                                                 const RunOptions& options = {});

}  // namespace loom

#endif  // LOOM_PASSES_PASS_MANAGER_H_
