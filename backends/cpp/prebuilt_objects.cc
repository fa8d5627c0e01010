#include "backends/cpp/prebuilt_objects.h"

#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace loom::cpp {
namespace {

// The /proc/cpuinfo flags of each x86-64 level's features beyond the one
// before (the x86-64 psABI; lzcnt is "abm").
std::vector<std::string_view> LevelFeatures(std::string_view level) {
  if (level == "x86-64-v3") {
    return {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"};
  }
  if (level == "x86-64-v4") {
    std::vector<std::string_view> features = LevelFeatures("x86-64-v3");
    features.insert(features.end(), {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"});
    return features;
  }
  return {"(unknown level)"};
}

bool HasLevel(std::string_view level, std::string_view cpu_flags) {
  const std::vector<absl::string_view> flags =
      absl::StrSplit(absl::string_view(cpu_flags.data(), cpu_flags.size()), ' ', absl::SkipEmpty());
  return absl::c_all_of(LevelFeatures(level), [&](std::string_view feature) {
    return absl::c_linear_search(flags, absl::string_view(feature.data(), feature.size()));
  });
}

bool SameArguments(absl::Span<const std::string> command,
                   absl::Span<const std::string_view> flags) {
  std::vector<std::string_view> arguments;
  for (const std::string& arg : command.subspan(1)) {
    if (!absl::StartsWith(arg, "-D")) arguments.push_back(arg);
  }
  return absl::c_equal(arguments, flags);
}

}  // namespace

std::optional<std::string_view> PrebuiltObjectFor(std::string_view source,
                                                  absl::Span<const std::string> command,
                                                  std::string_view cpu_flags) {
  std::optional<std::string_view> chosen;
  for (const PrebuiltObject& object : PrebuiltObjects()) {
    if (object.source == source && !command.empty() && command[0] == object.compiler &&
        SameArguments(command, object.flags) && HasLevel(object.level, cpu_flags)) {
      chosen = object.bytes;  // the table lists the levels lowest first
    }
  }
  return chosen;
}

}  // namespace loom::cpp
