#include "tests/fuzz/mutator.h"

#include <algorithm>

#include "absl/strings/string_view.h"

namespace loom {
namespace fuzz {
namespace {

// Tokens that steer text protos into interesting places: structure, field
// separators, and the integers where size arithmetic overflows.
constexpr absl::string_view kTokens[] = {
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    " ",
    "\n",
    "#",
    "0",
    "1",
    "-1",
    "2",
    "-5",
    "65536",
    "2147483647",
    "-2147483648",
    "4294967296",
    "1099511627776",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "F64",
    "I32",
    "I64",
    "BOOL",
    "node { name: \"n\" op: \"add\" input: \"x\" input: \"x\" output: \"y\" }",
    "attr { name: \"axis\" i: -1 }",
    "attr { name: \"shape\" ints { v: [-1] } }",
    "input { name: \"x\" type { dtype: F32 shape: [2, 3] } }",
    "output: \"y\"",
    "pass { name: \"lower\" }",
};

}  // namespace

uint64_t Mutator::Next() {
  // SplitMix64: tiny, fast and good enough to pick edits.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void Mutator::EditOnce(const std::vector<std::string>& corpus, std::string& data) {
  const size_t size = data.size();
  switch (Below(7)) {
    case 0:  // flip one bit
      if (size > 0) data[Below(size)] ^= static_cast<char>(1 << Below(8));
      return;
    case 1:  // set one byte to anything
      if (size > 0) data[Below(size)] = static_cast<char>(Below(256));
      return;
    case 2: {  // insert a few random bytes
      const size_t count = 1 + Below(4);
      std::string bytes;
      for (size_t i = 0; i < count; ++i) bytes += static_cast<char>(Below(256));
      data.insert(Below(size + 1), bytes);
      return;
    }
    case 3: {  // delete a range
      if (size == 0) return;
      const size_t at = Below(size);
      data.erase(at, 1 + Below(std::min<size_t>(size - at, 64)));
      return;
    }
    case 4: {  // duplicate a range in place
      if (size == 0) return;
      const size_t at = Below(size);
      const size_t length = 1 + Below(std::min<size_t>(size - at, 256));
      data.insert(at, data.substr(at, length));
      return;
    }
    case 5: {  // insert or overwrite with a token
      const absl::string_view token = kTokens[Below(std::size(kTokens))];
      const size_t at = Below(size + 1);
      if (Below(2) == 0 || at == size) {
        data.insert(at, token.data(), token.size());
      } else {
        data.replace(at, std::min(token.size(), size - at), token.data(), token.size());
      }
      return;
    }
    default: {  // splice: our head with another entry's tail
      const std::string& other = corpus[Below(corpus.size())];
      const size_t cut = Below(size + 1);
      const size_t from = Below(other.size() + 1);
      data = data.substr(0, cut) + other.substr(from);
      return;
    }
  }
}

std::string Mutator::Mutate(const std::vector<std::string>& corpus, size_t max_size) {
  std::string data = corpus[Below(corpus.size())];
  const int edits = 1 + static_cast<int>(Below(4));
  for (int i = 0; i < edits; ++i) EditOnce(corpus, data);
  if (data.size() > max_size) data.resize(max_size);
  return data;
}

}  // namespace fuzz
}  // namespace loom
