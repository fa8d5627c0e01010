// The fixed set of random graphs CI checks: seeds 1..300 compile, run and
// pass the --check rule (compiler/check.h). Run //tests/difftest:difftest for more.

#include "tests/difftest/difftest.h"

#include <csignal>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"
#include "tools/gen.h"

namespace loom {
namespace {

// Seeds 1..300 in blocks, so that Bazel's test shards split the work.
constexpr uint64_t kSeedsPerBlock = 10;
constexpr int kBlocks = 30;

std::string CacheDir() { return absl::StrCat(std::getenv("TEST_TMPDIR"), "/cache"); }

class RandomGraphs : public testing::TestWithParam<int> {};

TEST_P(RandomGraphs, MatchTheInterpreter) {
  const uint64_t first = 1 + GetParam() * kSeedsPerBlock;
  for (uint64_t seed = first; seed < first + kSeedsPerBlock; ++seed) {
    GenOptions options;
    options.kind = "random";
    options.nodes = 30;
    options.seed = seed;
    absl::StatusOr<proto::Graph> graph = GenerateModel(options);
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph->set_name(absl::StrCat("random_seed_", seed));
    const DiffOutcome outcome = CheckGraph(*graph, CacheDir());
    if (!outcome.failed()) continue;
    const proto::Graph small = Shrink(*graph, [&](const proto::Graph& g) {
      return CheckGraph(g, CacheDir()).kind == outcome.kind;
    });
    ADD_FAILURE() << "seed " << seed << ": " << DiffKindName(outcome.kind) << ": " << outcome.detail
                  << "\nshrunk graph:\n"
                  << GraphProtoToText(small);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds1To300, RandomGraphs, testing::Range(0, kBlocks));

TEST(DifftestTest, ShrinkKeepsTheFailureAndDropsTheRest) {
  GenOptions options;
  options.kind = "random";
  options.nodes = 40;
  options.seed = 3;
  absl::StatusOr<proto::Graph> graph = GenerateModel(options);
  ASSERT_TRUE(graph.ok());
  // A stand-in bug: "fails" while any exp node is left.
  auto has_exp = [](const proto::Graph& g) {
    for (const proto::Node& node : g.node()) {
      if (node.op() == "exp") return true;
    }
    return false;
  };
  ASSERT_TRUE(has_exp(*graph));
  const proto::Graph small = Shrink(*graph, has_exp);
  EXPECT_TRUE(has_exp(small));
  EXPECT_EQ(small.node_size(), 1);
  EXPECT_TRUE(GraphFromProto(small, "small").ok());
}

}  // namespace
TEST(DifftestTest, ACrashIsAnOutcome) {
  const DiffOutcome crashed = RunIsolated([] {
    raise(SIGSEGV);
    return DiffOutcome{};
  });
  EXPECT_EQ(crashed.kind, DiffOutcome::Kind::kCrash);
  EXPECT_THAT(crashed.detail, testing::HasSubstr("signal 11"));
  const DiffOutcome mismatch = RunIsolated([] {
    return DiffOutcome{DiffOutcome::Kind::kMismatch, "max abs error 1"};
  });
  EXPECT_EQ(mismatch.kind, DiffOutcome::Kind::kMismatch);
  EXPECT_EQ(mismatch.detail, "max abs error 1");
}

}  // namespace loom
