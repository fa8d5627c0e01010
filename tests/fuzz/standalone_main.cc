// The fuzz targets' main in builds without libFuzzer (the normal gcc
// build): replays every corpus input through LLVMFuzzerTestOneInput, then
// feeds it blind random mutations of those inputs (tests/fuzz/mutator.h)
// for a fixed time or number of runs. This is not coverage-guided fuzzing;
// `--config=fuzz` builds the same targets with libFuzzer for that.
//
// Usage (flags spelled as libFuzzer spells them, so commands carry over):
//   FUZZER [-max_total_time=SECONDS] [-runs=N] [-seed=N] PATH...
// where each PATH is an input file or a directory of them. Other -flags
// are libFuzzer's and are ignored. Exits 1 when no input was found. When
// an input crashes the process, its bytes are written to
// $TEST_UNDECLARED_OUTPUTS_DIR/crash-input (or ./crash-input) first.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "tests/fuzz/mutator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// What the crash handler writes: set before each input runs.
const char* g_current_data = nullptr;
size_t g_current_size = 0;
char g_crash_path[4096];

void WriteCurrentInputAndDie(int signal_number) {
  const int fd = open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    size_t written = 0;
    while (written < g_current_size) {
      const ssize_t n = write(fd, g_current_data + written, g_current_size - written);
      if (n <= 0) break;
      written += n;
    }
    close(fd);
    static const char kMessage[] = "\nfuzz: the crashing input is in ";
    (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    (void)!write(STDERR_FILENO, g_crash_path, strlen(g_crash_path));
    (void)!write(STDERR_FILENO, "\n", 1);
  }
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

void InstallCrashHandler() {
  const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  snprintf(g_crash_path, sizeof(g_crash_path), "%s/crash-input", dir != nullptr ? dir : ".");
  // SIGTERM: Bazel's test timeout, i.e. a hang.
  for (int s : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL, SIGTERM}) {
    signal(s, WriteCurrentInputAndDie);
  }
}

void RunOne(const std::string& input) {
  g_current_data = input.data();
  g_current_size = input.size();
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

// The files named by `paths` (directories: their regular files, sorted).
std::vector<std::filesystem::path> ListInputs(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> files;
  for (const std::string& path : paths) {
    if (!std::filesystem::exists(path)) {
      fprintf(stderr, "fuzz: %s does not exist\n", path.c_str());
      continue;
    }
    if (!std::filesystem::is_directory(path)) {
      files.emplace_back(path);
      continue;
    }
    std::vector<std::filesystem::path> in_dir;
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file()) in_dir.push_back(entry.path());
    }
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  double max_total_time = 0;
  int64_t runs = 0;
  uint64_t seed = 1;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    absl::string_view value = arg;
    if (absl::ConsumePrefix(&value, "-max_total_time=")) {
      if (!absl::SimpleAtod(value, &max_total_time)) max_total_time = 0;
    } else if (absl::ConsumePrefix(&value, "-runs=")) {
      if (!absl::SimpleAtoi(value, &runs)) runs = 0;
    } else if (absl::ConsumePrefix(&value, "-seed=")) {
      if (!absl::SimpleAtoi(value, &seed)) seed = 1;
    } else if (absl::StartsWith(arg, "-")) {
      fprintf(stderr, "fuzz: ignoring %s (a libFuzzer flag)\n", argv[i]);
    } else {
      paths.emplace_back(arg);
    }
  }
  InstallCrashHandler();

  std::vector<std::string> corpus;
  const auto start = std::chrono::steady_clock::now();
  for (const std::filesystem::path& file : ListInputs(paths)) {
    corpus.push_back(ReadFile(file));
    RunOne(corpus.back());
  }
  if (corpus.empty()) {
    fprintf(stderr, "fuzz: no inputs found (give existing files or directories)\n");
    return 1;
  }
  const double replay_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("fuzz: replayed %zu corpus inputs in %.2f s\n", corpus.size(), replay_seconds);

  loom::fuzz::Mutator mutator(seed);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(max_total_time));
  int64_t done = 0;
  while ((runs > 0 && done < runs) || (runs == 0 && std::chrono::steady_clock::now() < deadline)) {
    const std::string input = mutator.Mutate(corpus);
    RunOne(input);
    ++done;
  }
  printf(
      "fuzz: ran %lld random mutations (seed %llu; blind, not "
      "coverage-guided)\n",
      static_cast<long long>(done), static_cast<unsigned long long>(seed));
  return 0;
}
