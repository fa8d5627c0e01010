// Models as a user's tools might garble them: each example and CUDA test
// graph, mutated a few hundred ways (a number made extreme, a line dropped
// or repeated, a name or a dtype swapped), loaded and compiled up to emitted
// source. Each must compile or be refused as bad input (the codes `loom`
// exits 2 on: fuzz::IsUserError), never crash or fail as an internal error.
// The mutations are seeded: a failure names the file and the mutant, and
// reproduces. Unlike the fuzz targets here, it keeps graphs that declare
// large tensors, so that their allocation is checked too.

#include <exception>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/driver.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"
#include "tests/fuzz/fuzz_util.h"

namespace loom {
namespace {

constexpr int kMutantsPerModel = 300;

const char* const kModels[] = {
    "examples/mlp.pbtxt",
    "examples/softmax.pbtxt",
    "examples/group_norm.pbtxt",
    "examples/layer_norm.pbtxt",
    "examples/lstm_l2_h64.pbtxt",
    "examples/gru_l2_h64.pbtxt",
    "examples/resnet_block.pbtxt",
    "examples/small_integers.pbtxt",
    "backends/cuda/testdata/conv_transposes.pbtxt",
    "backends/cuda/testdata/convs.pbtxt",
    "backends/cuda/testdata/gemms.pbtxt",
    "backends/cuda/testdata/indices.pbtxt",
    "backends/cuda/testdata/math.pbtxt",
    "backends/cuda/testdata/reductions.pbtxt",
    "backends/cuda/testdata/resize.pbtxt",
};

// Numbers at the edges of what loom accepts, and past them.
const char* const kNumbers[] = {"0",
                                "-1",
                                "1",
                                "2",
                                "3",
                                "100000",
                                "2147483647",
                                "-2147483648",
                                "1e30",
                                "1099511627776",
                                "9223372036854775807"};
const char* const kDTypes[] = {"F32", "F64", "I32", "I64", "BOOL", "I8", "U8"};

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// One to three mutations of `lines`, described in `what`.
void Mutate(std::mt19937& random, std::vector<std::string>& lines, std::string& what) {
  static const std::regex kNumber(R"(-?\d+(\.\d+)?(e-?\d+)?)");
  static const std::regex kQuoted(R"("[^"]*")");
  static const std::regex kDType(R"(\b(F32|F64|I32|I64|BOOL)\b)");
  auto pick = [&](size_t n) { return static_cast<size_t>(random() % n); };
  const int count = 1 + static_cast<int>(pick(3));
  for (int m = 0; m < count && !lines.empty(); ++m) {
    const size_t i = pick(lines.size());
    std::string& line = lines[i];
    std::smatch match;
    switch (pick(5)) {
      case 0:  // a number
        if (std::regex_search(line, match, kNumber)) {
          line = absl::StrCat(match.prefix().str(), kNumbers[pick(std::size(kNumbers))],
                              match.suffix().str());
          absl::StrAppend(&what, " number at line ", i + 1, ";");
        }
        break;
      case 1:
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i));
        absl::StrAppend(&what, " line ", i + 1, " dropped;");
        break;
      case 2: {
        const std::string copy = lines[pick(lines.size())];
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), copy);
        absl::StrAppend(&what, " a line repeated at ", i + 1, ";");
        break;
      }
      case 3: {  // a name, swapped for another of the file's
        const std::string other = lines[pick(lines.size())];
        std::smatch other_match;
        if (std::regex_search(line, match, kQuoted) &&
            std::regex_search(other, other_match, kQuoted)) {
          line = absl::StrCat(match.prefix().str(), other_match.str(), match.suffix().str());
          absl::StrAppend(&what, " name at line ", i + 1, ";");
        }
        break;
      }
      default:
        line = std::regex_replace(line, kDType, kDTypes[pick(std::size(kDTypes))]);
        absl::StrAppend(&what, " dtype at line ", i + 1, ";");
    }
  }
}

// Loads and compiles `text` with the cpu pipeline up to emitted source,
// verifying after every pass.
absl::Status LoadAndCompile(const std::string& text) {
  absl::StatusOr<proto::Graph> graph_proto = ParseGraphText(text, "mutant.pbtxt");
  if (!graph_proto.ok()) return graph_proto.status();
  absl::StatusOr<Graph> graph = GraphFromProto(*graph_proto, "mutant.pbtxt");
  if (!graph.ok()) return graph.status();
  CompileOptions options;
  options.model = "mutant.pbtxt";
  options.native_compile = false;
  options.verify_each = true;
  return CompileGraph(*std::move(graph), options).status();
}

TEST(MutatedModelsTest, CompileOrAreRefusedAsBadInput) {
  int compiled = 0, refused = 0;
  for (const char* model : kModels) {
    const std::string text = ReadFile(model);
    ASSERT_FALSE(text.empty()) << model;
    for (int mutant = 0; mutant < kMutantsPerModel; ++mutant) {
      std::mt19937 random(static_cast<uint32_t>(mutant));
      std::vector<std::string> lines = absl::StrSplit(text, '\n');
      std::string what;
      Mutate(random, lines, what);
      absl::Status status;
      try {
        status = LoadAndCompile(absl::StrJoin(lines, "\n"));
      } catch (const std::exception& e) {  // loom throws none: a bug, named here
        ADD_FAILURE() << model << ", mutant " << mutant << ":" << what << "\nthrew " << e.what();
        continue;
      }
      EXPECT_TRUE(fuzz::IsUserError(status))
          << model << ", mutant " << mutant << ":" << what << "\n"
          << status;
      ++(status.ok() ? compiled : refused);
    }
  }
  // The mutants must reach the compiler, not only the parser.
  EXPECT_GT(compiled, 50);
  RecordProperty("compiled", compiled);
  RecordProperty("refused", refused);
}

}  // namespace
}  // namespace loom
