// Compile-time scaling of loom's front end (import through emitted source;
// no native compile): per-pass seconds, buffers, kernels, distinct kernel
// functions and peak resident memory, for unrolled RNNs and random DAGs of
// growing size. Each case runs in its own process so that its peak memory
// is its own.
//
//   bazel run -c opt //tests/bench:compile_scaling [-- --max_nodes=N
//       --max_seq=N --only=TEXT --memory]

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/driver.h"
#include "ir/graph_io.h"
#include "tools/gen.h"

ABSL_FLAG(int64_t, max_nodes, 1'100'000, "skip random DAGs larger than this many nodes");
ABSL_FLAG(int, max_seq, 1'000'000, "skip RNNs with longer sequences");
ABSL_FLAG(std::string, only, "", "run only the cases whose label contains this text");
ABSL_FLAG(bool, memory, false, "under each case, its peak resident MB at the end of each phase");

namespace loom {
namespace {

struct Case {
  std::string label;
  GenOptions gen;
  std::string pipeline;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (int hidden : {64, 256}) {
    for (int layers : {1, 2, 6}) {
      GenOptions gen;
      gen.kind = "lstm";
      gen.layers = layers;
      gen.hidden = hidden;
      gen.input = 32;
      gen.seq = 16;
      gen.batch = 2;
      cases.push_back(
          {absl::StrFormat("lstm l%d h%d s16", layers, hidden), gen, "cpu_unrolled_rnn"});
    }
  }
  GenOptions gru;
  gru.kind = "gru";
  gru.hidden = 64;
  gru.seq = 1500;
  cases.push_back({"gru l1 h64 s1500", gru, "cpu_unrolled_rnn"});
  for (int seq : {1500, 15000}) {
    GenOptions lstm;
    lstm.kind = "lstm";
    lstm.hidden = 16;
    lstm.input = 16;
    lstm.seq = seq;
    cases.push_back({absl::StrFormat("lstm l1 h16 s%d", seq), lstm, "cpu_unrolled_rnn"});
  }
  // LSTMs from `loom gen` of about 100k and 1M buffers (three buffers per
  // step and layer at hidden 16: lowering inlines the pointwise cell).
  for (int seq : {8'500, 85'000}) {
    GenOptions lstm;
    lstm.kind = "lstm";
    lstm.layers = 4;
    lstm.hidden = 16;
    lstm.input = 16;
    lstm.seq = seq;
    cases.push_back({absl::StrFormat("lstm l4 h16 s%d", seq), lstm, "cpu_unrolled_rnn"});
  }
  for (int nodes : {100'000, 1'000'000}) {
    GenOptions random;
    random.kind = "random";
    random.nodes = nodes;
    random.seed = 1;
    cases.push_back({absl::StrFormat("random %d", nodes), random, "cpu"});
  }
  return cases;
}

double PeakResidentMegabytes() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// Runs one case and prints its row; returns false on an error.
bool RunCase(const Case& c) {
  absl::StatusOr<proto::Graph> graph_proto = GenerateModel(c.gen);
  if (!graph_proto.ok()) {
    std::printf("%-22s error: %s\n", c.label.c_str(),
                std::string(graph_proto.status().message()).c_str());
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Graph> graph = GraphFromProto(*graph_proto, c.label);
  if (!graph.ok()) {
    std::printf("%-22s error: %s\n", c.label.c_str(),
                std::string(graph.status().message()).c_str());
    return false;
  }
  graph_proto = proto::Graph();  // the proto is not needed past import
  const double import_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double import_megabytes = PeakResidentMegabytes();
  CompileOptions options;
  options.model = c.label;
  options.pipeline = c.pipeline;
  options.native_compile = false;
  absl::StatusOr<CompiledModel> compiled = CompileGraph(*std::move(graph), options, start);
  if (!compiled.ok()) {
    std::printf("%-22s error: %s\n", c.label.c_str(),
                std::string(compiled.status().message()).c_str());
    return false;
  }
  const proto::Report& r = compiled->report;
  const double peak_bytes = PeakResidentMegabytes() * (1 << 20);
  std::vector<std::string> phases = {absl::StrFormat("import %.1f", import_seconds * 1e3)};
  for (const proto::PassTiming& pass : r.passes()) {
    phases.push_back(absl::StrFormat("%s %.1f", pass.name(), pass.seconds() * 1e3));
  }
  std::printf("%-22s %9d %9d %9d %6d %10.1f %8.2f %7.0f  %s\n", c.label.c_str(), r.graph_nodes(),
              r.buffers(), r.kernels(), r.kernel_functions(), r.frontend_seconds() * 1e3,
              r.frontend_seconds() * 1e6 / std::max(1, r.buffers()),
              peak_bytes / std::max(1, r.buffers()), absl::StrJoin(phases, ", ").c_str());
  if (absl::GetFlag(FLAGS_memory)) {
    std::vector<std::string> peaks = {absl::StrFormat("import %.0f", import_megabytes)};
    for (const proto::PassTiming& pass : r.passes()) {
      peaks.push_back(
          absl::StrFormat("%s %.0f", pass.name(), pass.peak_resident_bytes() / 1048576.0));
    }
    std::printf("%-22s peak MB after each phase: %s\n", "", absl::StrJoin(peaks, ", ").c_str());
  }
  return true;
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::printf("%-22s %9s %9s %9s %6s %10s %8s %7s  %s\n", "case", "nodes", "buffers", "kernels",
              "fns", "front ms", "us/buf", "B/buf", "phases (ms)");
  int failures = 0;
  for (const loom::Case& c : loom::Cases()) {
    if (c.gen.kind == "random" && c.gen.nodes > absl::GetFlag(FLAGS_max_nodes)) continue;
    if (c.gen.kind != "random" && c.gen.seq > absl::GetFlag(FLAGS_max_seq)) continue;
    if (!absl::StrContains(c.label, absl::GetFlag(FLAGS_only))) continue;
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      const bool ok = loom::RunCase(c);
      std::fflush(stdout);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}
