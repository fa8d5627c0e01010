// The same model gives byte-identical kernels, reports (less timings) and
// dumps, whether compiled twice in a row or from several threads at once.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/driver.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"
#include "tools/gen.h"

namespace loom {
namespace {

std::string TmpDir() { return std::getenv("TEST_TMPDIR"); }

// The report without the fields that measure time and memory.
std::string ReportWithoutTimings(proto::Report report) {
  report.clear_frontend_seconds();
  report.clear_native_compile_seconds();
  report.clear_cache_hit();
  for (proto::PassTiming& pass : *report.mutable_passes()) {
    pass.clear_seconds();
    pass.clear_peak_resident_bytes();
  }
  return ReportToJson(report);
}

std::string ReadDir(const std::string& dir) {
  std::string all;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    absl::StrAppend(&all, "== ", path.filename().string(), "\n", text.str());
  }
  return all;
}

struct Compilation {
  std::string source;
  std::string report;
  std::string dumps;
};

Compilation CompileOnce(const proto::Graph& graph, const std::string& tag) {
  CompileOptions options;
  options.model = "model";
  options.verify_each = true;
  options.dump_after = ".*";
  options.dump_dir = absl::StrCat(TmpDir(), "/dumps_", tag);
  options.cache_dir = absl::StrCat(TmpDir(), "/cache");
  absl::StatusOr<Graph> loaded = GraphFromProto(graph, "model");
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<CompiledModel> compiled = CompileGraph(*std::move(loaded), options);
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  if (!compiled.ok()) return {};
  return {compiled->module.source->text, ReportWithoutTimings(compiled->report),
          ReadDir(options.dump_dir)};
}

proto::Graph RandomGraph(uint64_t seed) {
  GenOptions options;
  options.kind = "random";
  options.nodes = 60;
  options.seed = seed;
  return *GenerateModel(options);
}

TEST(DeterminismTest, CompilingTwiceGivesIdenticalOutput) {
  const proto::Graph graph = RandomGraph(11);
  const Compilation first = CompileOnce(graph, "first");
  const Compilation second = CompileOnce(graph, "second");
  EXPECT_FALSE(first.source.empty());
  EXPECT_EQ(first.source, second.source);
  EXPECT_EQ(first.report, second.report);
  EXPECT_EQ(first.dumps, second.dumps);
}

TEST(DeterminismTest, CompilingFromSeveralThreadsGivesIdenticalOutput) {
  const proto::Graph graph = RandomGraph(12);
  const Compilation reference = CompileOnce(graph, "reference");
  constexpr int kThreads = 4;
  std::vector<Compilation> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { results[i] = CompileOnce(graph, absl::StrCat("thread", i)); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Compilation& result : results) {
    EXPECT_EQ(result.source, reference.source);
    EXPECT_EQ(result.report, reference.report);
    EXPECT_EQ(result.dumps, reference.dumps);
  }
}

}  // namespace
}  // namespace loom
