// Differential tester: random graphs from `loom gen --kind=random`, compiled
// and judged by the --check rule (compiler/check.h). A failing graph is shrunk and
// written to --regressions_dir, where //tests/regressions picks it up.
//
//   difftest --first_seed=1 --last_seed=10000 [--nodes=30]
//            [--regressions_dir=tests/regressions]

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "ir/graph_io.h"
#include "tests/difftest/difftest.h"
#include "tools/gen.h"

ABSL_FLAG(uint64_t, first_seed, 1, "first seed");
ABSL_FLAG(uint64_t, last_seed, 300, "last seed (inclusive)");
ABSL_FLAG(int, nodes, 30, "about how many nodes per graph");
ABSL_FLAG(std::string, regressions_dir, "", "where to write shrunk failing graphs");
ABSL_FLAG(std::string, cache_dir, "", "kernel cache (default: a fresh temporary one)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string cache_dir = absl::GetFlag(FLAGS_cache_dir);
  if (cache_dir.empty()) {
    char pattern[] = "/tmp/loom-difftest-XXXXXX";
    cache_dir = mkdtemp(pattern);
  }
  int graphs = 0, failures = 0;
  for (uint64_t seed = absl::GetFlag(FLAGS_first_seed); seed <= absl::GetFlag(FLAGS_last_seed);
       ++seed) {
    loom::GenOptions options;
    options.kind = "random";
    options.nodes = absl::GetFlag(FLAGS_nodes);
    options.seed = seed;
    absl::StatusOr<loom::proto::Graph> graph = loom::GenerateModel(options);
    if (!graph.ok()) {
      std::cerr << "seed " << seed << ": " << graph.status().message() << "\n";
      return 3;
    }
    graph->set_name(absl::StrCat("random_seed_", seed));
    ++graphs;
    const loom::DiffOutcome outcome = loom::CheckGraph(*graph, cache_dir);
    if (!outcome.failed()) continue;
    ++failures;
    const loom::proto::Graph small = loom::Shrink(*graph, [&](const loom::proto::Graph& candidate) {
      return loom::CheckGraph(candidate, cache_dir).kind == outcome.kind;
    });
    std::cout << "seed " << seed << ": " << loom::DiffKindName(outcome.kind) << ": "
              << outcome.detail << "; shrunk from " << graph->node_size() << " to "
              << small.node_size() << " nodes\n";
    const std::string dir = absl::GetFlag(FLAGS_regressions_dir);
    if (!dir.empty()) {
      const std::string path = absl::StrCat(dir, "/random_seed_", seed, ".pbtxt");
      std::ofstream(path) << loom::GraphProtoToText(small);
      std::cout << "  wrote " << path << "\n";
    } else {
      std::cout << loom::GraphProtoToText(small);
    }
  }
  std::cout << "difftest: " << graphs << " graphs, " << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}
