#ifndef LOOM_TESTS_FUZZ_MUTATOR_H_
#define LOOM_TESTS_FUZZ_MUTATOR_H_

#include <cstdint>
#include <string>
#include <vector>

namespace loom {
namespace fuzz {

// A small deterministic byte mutator for the fuzz targets' replay tests in
// the normal (gcc) build, where libFuzzer is not available. It is blind:
// unlike libFuzzer it keeps no coverage feedback and never grows the corpus;
// it only applies random edits (bit flips, byte sets, insertions, deletions,
// duplications, tokens that matter to text protos and integer limits, and
// splices of two corpus entries) to corpus inputs. The same seed and corpus
// give the same sequence of inputs.
class Mutator {
 public:
  explicit Mutator(uint64_t seed) : state_(seed) {}

  // A mutation of a randomly chosen entry of `corpus` (which must not be
  // empty): one to four edits, at most `max_size` bytes.
  std::string Mutate(const std::vector<std::string>& corpus, size_t max_size = 1 << 16);

 private:
  uint64_t Next();
  // Uniform in [0, n); n > 0.
  uint64_t Below(uint64_t n) { return Next() % n; }

  void EditOnce(const std::vector<std::string>& corpus, std::string& data);

  uint64_t state_;
};

}  // namespace fuzz
}  // namespace loom

#endif  // LOOM_TESTS_FUZZ_MUTATOR_H_
