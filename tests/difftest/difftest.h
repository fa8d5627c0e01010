#ifndef LOOM_TESTS_DIFFTEST_DIFFTEST_H_
#define LOOM_TESTS_DIFFTEST_DIFFTEST_H_

#include <cstdint>
#include <functional>
#include <string>

#include "ir/graph.pb.h"

namespace loom {

// Differential testing: compile a graph with the `cpu` pipeline, run it and
// judge the results by the rule of `loom run --check` (compiler/check.h:
// against the float64 truth, within the computation's error bound), and
// shrink a failing graph to a small one that fails the same way.

struct DiffOutcome {
  enum class Kind { kPass, kInvalidGraph, kCompileError, kRunError, kMismatch, kCrash };
  Kind kind = Kind::kPass;
  std::string detail;

  bool failed() const { return kind != Kind::kPass; }
};

const char* DiffKindName(DiffOutcome::Kind kind);

// Compiles and runs `graph` on inputs drawn from `input_seed`; native
// objects are cached in `cache_dir`. The work runs in a child process
// (RunIsolated), so that a crash in loom or in a generated kernel is an
// outcome the sweep reports and the shrinker can minimise, not the end of
// the sweep.
DiffOutcome CheckGraph(const proto::Graph& graph, const std::string& cache_dir,
                       uint64_t input_seed = 1);

// Runs `check` in a forked child and returns its outcome, or kCrash (with
// the signal) when the child dies.
DiffOutcome RunIsolated(const std::function<DiffOutcome()>& check);

// Delta debugging: repeatedly makes one value the only output and cuts nodes
// (a node's outputs become graph inputs of the same type, and what only it
// needed is dropped) while `still_fails` holds, until no single step keeps
// the failure. Returns the smallest graph found.
proto::Graph Shrink(const proto::Graph& graph,
                    const std::function<bool(const proto::Graph&)>& still_fails);

}  // namespace loom

#endif  // LOOM_TESTS_DIFFTEST_DIFFTEST_H_
