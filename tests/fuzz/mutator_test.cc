#include "tests/fuzz/mutator.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace loom {
namespace fuzz {
namespace {

TEST(MutatorTest, TheSameSeedGivesTheSameInputs) {
  const std::vector<std::string> corpus = {"node { name: \"a\" }", "output: \"y\""};
  Mutator a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Mutate(corpus), b.Mutate(corpus));
}

TEST(MutatorTest, ChangesItsInputsInManyWays) {
  const std::vector<std::string> corpus = {"input { name: \"x\" }"};
  Mutator mutator(7);
  std::set<std::string> seen;
  int unchanged = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string input = mutator.Mutate(corpus);
    if (input == corpus[0]) ++unchanged;
    seen.insert(input);
  }
  EXPECT_GT(seen.size(), 900u);
  EXPECT_LT(unchanged, 20);
}

TEST(MutatorTest, KeepsToTheSizeLimit) {
  const std::vector<std::string> corpus = {std::string(100, 'x')};
  Mutator mutator(3);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_LE(mutator.Mutate(corpus, /*max_size=*/101).size(), 101u);
  }
}

TEST(MutatorTest, HandlesAnEmptyEntry) {
  const std::vector<std::string> corpus = {""};
  Mutator mutator(5);
  for (int i = 0; i < 1000; ++i) mutator.Mutate(corpus);
}

}  // namespace
}  // namespace fuzz
}  // namespace loom
